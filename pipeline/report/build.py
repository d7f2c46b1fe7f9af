"""The funnel report of a run: OUT/report/report.md, a self-contained report.html, and
projection.json (what the run means for a raw input of a given size).

The ledger is the authority for documents and bytes; one streaming pass over the part files
(pipeline/report/scan.py) adds tokens, per-shard counts, signal samples and documents to audit.
"""
from __future__ import annotations

import argparse
import gc
import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline import storage
from pipeline.errors import ConfigError
from pipeline.engine.ledger import Counts, Ledger
from pipeline.report.projection import (
    QUANTITIES, Projection, funnels_from_ledgers, human_bytes, human_count, parse_size, project, shard_funnels,
    shard_ledgers,
)
from pipeline.report.doc import Bullets, Doc, Heading, Image, Para, Quote, Table, to_html, to_markdown
from pipeline.report.scan import KEPT, SCORE_COLUMN, TOKENIZER, RunScan, load_recipe_json, recipe_stages, scan_run

log = logging.getLogger("refinery")

# The user's reference run: raw CommonCrawl in, kept out.
REFERENCE_RAW = 4.3e12
REFERENCE_KEPT = 800e9

def thresholds(recipe_raw: dict[str, Any], columns: list[str]) -> dict[str, list[tuple[str, float]]]:
    """Column -> [(label, value)] for every setting that thresholds that signal column, defaults
    included (each stage's `threshold_marks`)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for label, stage in recipe_stages(recipe_raw).items():
        for col, key, v in stage.threshold_marks():
            mark = (f"{label}.{key} = {v:g}", v)
            if col in columns and mark not in out.get(col, []):
                out.setdefault(col, []).append(mark)
    return out


@dataclass
class ReportResult:
    markdown: str
    html: str
    projection: Projection | None


def _pct(a: float, b: float) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def _funnel_rows(stages: list[str], counts_of, tokens_after: list[float]) -> list[list[str]]:
    first: Counts = counts_of(stages[0])
    rows = []
    for k, stage in enumerate(stages):
        c: Counts = counts_of(stage)
        rows.append([
            stage, f"{c.docs_in:,}", f"{c.kept:,}", _pct(c.kept, c.docs_in), _pct(c.kept, first.docs_in),
            human_bytes(c.bytes_in), human_bytes(c.kept_bytes), _pct(c.kept_bytes, first.bytes_in),
            f"{tokens_after[k]:,.0f}", f"{c.skipped:,}",
        ])
    return rows


_FUNNEL_HEADERS = ["stage", "docs in", "docs kept", "stage keeps", "docs left (of read)", "text in",
                   "text kept", "text left (of read)", "tokens left", "skipped"]


@dataclass
class RunFacts:
    """What the sections are built from: the ledger (documents, bytes), the scan (tokens, samples),
    the recipe (thresholds) and the per-shard funnels (projection)."""

    run_dir: str
    ledger: Ledger
    recipe: dict[str, Any]
    scan: RunScan
    shard_counts: str  # where per-shard counts come from: "records" or "spread"
    funnels: list

    @property
    def stages(self) -> list[str]:
        return self.ledger.stage_order

    @property
    def sources(self) -> list[str]:
        return sorted({src for s in self.stages for src in self.ledger.stages[s]})

    def tokens(self, source: str | None = None) -> list[float]:
        """Tokens left after each stage, for the whole run (all sources, or one)."""
        return [self.scan.tokens_after(self.ledger, k, source) for k in range(len(self.stages))]


def gather(run_dir: str, scan_kwargs: dict | None = None) -> RunFacts:
    try:
        ledger = Ledger.read(storage.join(run_dir, "ledger.json"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not JSON, or not a ledger's shape
        raise ConfigError(f"{run_dir}: ledger.json is not a refinery ledger ({type(exc).__name__}: {exc})") from None
    if not ledger.stage_order:
        raise ConfigError(f"{run_dir}: ledger.json lists no stages")
    recipe = load_recipe_json(run_dir)
    stages = recipe_stages(recipe)

    def flagged_span(label: str, row: dict):
        st = stages.get(label)
        if st is None:
            return None
        try:
            return st.flagged_span(row)
        except Exception as exc:  # an audit aid (e.g. a model moved since the run): say so once, go on
            log.warning("report: %s cannot say where its rejects were flagged (%s: %s); its audit samples show "
                        "their first characters", label, type(exc).__name__, exc)
            stages.pop(label, None)
            return None

    scan = scan_run(run_dir, ledger, **{"reuse": [run_dir] + _retuned_from(run_dir), "flagged_span": flagged_span,
                                        **(scan_kwargs or {})})
    per_shard = shard_ledgers(run_dir, ledger)
    if per_shard is not None:  # the runner's per-shard records: every shard, sizes as read
        return RunFacts(run_dir, ledger, recipe, scan, "records",
                        funnels_from_ledgers(per_shard, ledger.stage_order, scan))
    read = ledger.stages[ledger.stage_order[0]]
    funnels = shard_funnels(scan, ledger.inputs, None, {src: c.bytes_in for src, c in read.items()})
    return RunFacts(run_dir, ledger, recipe, scan, "spread", funnels)


def build_report(run_dir: str, project_bytes: float = REFERENCE_RAW, *, scan_kwargs: dict | None = None,
                 resamples: int = 2000) -> tuple[Doc, Projection | None]:
    from pipeline.report import charts  # imported only when a report is built

    facts = gather(run_dir, scan_kwargs)
    doc = Doc(f"Refinery run report: {facts.recipe.get('name') or storage.basename(storage.absolute(run_dir))}")
    _summary(doc, facts)
    _reference(doc, facts)
    _funnel(doc, facts, charts)
    _reasons(doc, facts)
    _time(doc, facts)
    _signals(doc, facts, charts)
    _languages(doc, facts, charts)
    proj = _projection(doc, facts, project_bytes, resamples)
    _yield(doc, facts, charts)
    _audit(doc, facts)
    return doc, proj


def _summary(doc: Doc, f: RunFacts) -> None:
    led, scan = f.ledger, f.scan
    read, last = led.total(f.stages[0]), led.total(f.stages[-1])
    method = (f"exact ({TOKENIZER}, every document)" if scan.exact_tokens else
              f"estimated ({TOKENIZER}): each group's text bytes (kept, or rejected at a stage; per source) "
              f"times its tokens per byte, measured in 2 KB windows around byte positions drawn one every N bytes "
              f"of each document from a seeded hash of its id (a systematic sample)")
    doc.add(Para(
        f"Run directory: {storage.absolute(f.run_dir)}. Inputs: "
        + ", ".join(f"{src} {v['files']} files, {human_bytes(v['bytes'])}" for src, v in sorted(led.inputs.items()))
        + f". Read {read.docs_in:,} documents ({human_bytes(read.bytes_in)} of text); kept {last.kept:,} "
        f"({human_bytes(last.kept_bytes)}, {f.tokens()[-1]:,.0f} tokens). Tokens: {method}."))
    if scan.subset:
        uses = "signals, languages and documents to audit" + ("" if f.shard_counts == "records" else
                                                               " and the projection")
        doc.add(Para(f"A large run: a random {scan.scanned_shards:,} of its {scan.total_shards:,} shards were "
                     f"scanned for tokens per byte, {uses}. Documents and bytes come from the ledger and are "
                     f"complete."))
    problems = [] if scan.subset else _consistency(led, scan)
    if problems:
        doc.add(Heading("Warnings"), Bullets(problems))


def _reference(doc: Doc, f: RunFacts) -> None:
    read, last = f.ledger.total(f.stages[0]), f.ledger.total(f.stages[-1])
    raw = sum(v.get("bytes", 0) for v in f.ledger.inputs.values())
    doc.add(Heading("Against the reference run"), Table(
        ["run", "raw input", "kept text", "kept / raw", "kept / read text"],
        [["reference (CommonCrawl)", human_bytes(REFERENCE_RAW), human_bytes(REFERENCE_KEPT),
          _pct(REFERENCE_KEPT, REFERENCE_RAW), "-"],
         ["this run", human_bytes(raw), human_bytes(last.kept_bytes), _pct(last.kept_bytes, raw),
          _pct(last.kept_bytes, read.bytes_in)]], id="reference"),
        Para("Raw input is the on-disk size of the input files (compressed, with markup, as read); kept is "
             "UTF-8 text bytes. The two runs compare only when their inputs are of the same kind "
             "(e.g. WARC/WET against WARC/WET)."))


def _funnel(doc: Doc, f: RunFacts, charts) -> None:
    led, stages = f.ledger, f.stages
    tokens = f.tokens()
    doc.add(Heading("Funnel"), Table(_FUNNEL_HEADERS, _funnel_rows(stages, led.total, tokens), id="funnel",
                                     caption="All sources. Text is UTF-8 bytes of the text column."))
    read = led.total(stages[0])
    remaining = {
        "documents": [100 * led.total(s).kept / read.docs_in if read.docs_in else 0 for s in stages],
        "bytes": [100 * led.total(s).kept_bytes / read.bytes_in if read.bytes_in else 0 for s in stages],
        "tokens": [100 * t / tokens[0] if tokens[0] else 0 for t in tokens],
    }
    doc.add(Image("funnel.svg", charts.grouped_bars("Funnel", stages, remaining, "% of read input left after stage",
                                                    ymax=110.0, value_labels="{:.1f}%"), "funnel chart"))
    for src in f.sources:
        counts_of = (lambda s, src=src: led.stages[s].get(src, Counts()))
        doc.add(Table(_FUNNEL_HEADERS, _funnel_rows(stages, counts_of, f.tokens(src)), id=f"funnel-{src}",
                      caption=f"Source {src}"))
    if f.sources:
        mb = {src: [led.stages[s].get(src, Counts()).kept_bytes / 1e6 for s in stages] for src in f.sources}
        doc.add(Image("sources.svg", charts.grouped_bars("Per source", stages, mb, "text MB left after stage"),
                      "per-source bars"))


def _reasons(doc: Doc, f: RunFacts) -> None:
    rows = []
    for s in f.stages:
        c = f.ledger.total(s)
        per_source = f.ledger.stages[s]
        for reason, (d, b) in sorted(c.rejected.items(), key=lambda kv: -kv[1][0]):
            by_src = ", ".join(f"{src} {per_source[src].rejected[reason][0]:,}"
                               for src in f.sources if src in per_source and reason in per_source[src].rejected)
            rows.append([s, reason, f"{d:,}", _pct(d, c.docs_in), human_bytes(b), _pct(b, c.bytes_in), by_src])
    doc.add(Heading("Rejection reasons"), Table(
        ["stage", "reason", "docs", "% of stage's docs", "text", "% of stage's text", "docs per source"],
        rows, id="reasons") if rows else Para("No document was rejected."))


def _time(doc: Doc, f: RunFacts) -> None:
    """Where the run's time went, per stage and source, from the ledger (as datatrove's stats.json)."""
    led = f.ledger
    total_cpu = led.cpu_seconds()
    if total_cpu <= 0:
        return  # a ledger written before stages were timed

    def row(name: str, src: str, c: Counts, cpu: float, wall: float, docs: int | None) -> list[str]:
        rate = f"{docs / cpu:,.0f}" if docs and cpu > 0 else "-"
        mb = f"{c.bytes_in / 1e6 / cpu:,.2f}" if docs and cpu > 0 else "-"
        return [name, src, f"{cpu:,.2f}", _pct(cpu, total_cpu), f"{wall:,.2f}",
                f"{docs:,}" if docs is not None else "-", rate, mb]

    rows = []
    staged = 0.0
    for s in f.stages:
        c = led.total(s)
        staged += c.cpu_s
        rows.append(row(s, "all", c, c.cpu_s, c.wall_s, c.docs_in - c.skipped))
        if len(f.sources) > 1:
            for src in f.sources:
                cs = led.stages[s].get(src)
                if cs is not None and cs.cpu_s > 0:
                    rows.append(row(s, src, cs, cs.cpu_s, cs.wall_s, cs.docs_in - cs.skipped))
        if s in led.global_steps:
            t = led.global_steps[s]
            rows.append(row(f"{s} (global step)", "all", Counts(), t["cpu_seconds"], t["wall_seconds"], None))
    other = led.shard_work["cpu_seconds"] - staged
    rows.append(row("other shard work", "all", Counts(), other,
                    led.shard_work["wall_seconds"] - sum(led.total(s).wall_s for s in f.stages), None))
    for what, cpu in led.overhead.items():
        rows.append([what, "-", f"{cpu:,.2f}", _pct(cpu, total_cpu), "-", "-", "-", "-"])
    doc.add(Heading("Time per stage"), Table(
        ["stage", "source", "CPU s", "% of CPU", "wall s", "docs examined", "docs per CPU-s", "MB in per CPU-s"],
        rows, id="time"),
        Para("CPU seconds of the worker processes (all their threads) in each stage's own work (for read: "
             "reading and extracting; for a global stage: computing its keys, then applying its decisions), "
             "summed over shards; wall seconds likewise, so with N workers they add up to about N times the "
             "elapsed time. A global step runs once, between phases, on the driver and the idle workers. "
             "Read includes the extraction process a crawl reader sends pages to, and each stage the "
             "stages' process it runs in (start-up and models included). Other shard work: writing kept "
             "documents and spills, bookkeeping. Driver: the driver process outside global steps (planning, "
             "listing inputs, committing, waiting on the workers); worker start-up / idle: each worker "
             "process's CPU outside its parts and global-step work (starting Python, imports, building the "
             "stages, a Ray actor's runtime, waiting for work); ray daemons: the daemons of a Ray this run "
             "started and their agents and idle workers (not those of a cluster it attached to). Not "
             "counted: starting the driver's Python, stopping Ray, the mixture and this report."))


def _signals(doc: Doc, f: RunFacts, charts) -> None:
    signals = f.scan.signals
    doc.add(Heading("Signals"))
    if not signals:
        doc.add(Para("No document carries a numeric signal column."))
        return
    marks = thresholds(f.recipe, list(signals))
    doc.add(Para("Histograms of a uniform random sample of the documents that carry each signal, stacked: "
                 "kept, rejected at the first stage whose rejects carry the signal (its own stage, when that "
                 "stage rejected anything), and rejected by a later stage. Of that stage's rejects, those "
                 "rejected by a rule that reads this signal are shown by reason, apart from those its other "
                 "rules rejected. Dashed lines are the recipe's thresholds."))
    rows = []
    for col in sorted(signals):
        values = np.concatenate(list(signals[col].values()))
        q = np.quantile(values, [0.05, 0.5, 0.95]) if len(values) else [np.nan] * 3
        rows.append([col, f"{f.scan.signal_rows.get(col, 0):,}", f"{len(values):,}", f"{q[0]:.4g}", f"{q[1]:.4g}",
                     f"{q[2]:.4g}", "; ".join(lbl for lbl, _ in marks.get(col, [])) or "-"])
    doc.add(Table(["signal", "documents", "sampled", "p5", "median", "p95", "thresholds"], rows, id="signals"))
    stage_of = recipe_stages(f.recipe).get  # label -> the recipe's Stage, for its reason_signals
    for col in sorted(signals):
        series = _signal_series(signals[col], f.stages, f.scan.signal_reasons.get(col, {}), col, stage_of)
        svg = charts.signal_histogram(col, [(label, v) for label, v, _ in series], marks.get(col, []),
                                      col.endswith(("_size", "_count")),  # long tails of small integers: log axis
                                      colors=[c for _, _, c in series])
        doc.add(Image(f"signal_{col}.svg", svg, f"histogram of {col}"))


def _languages(doc: Doc, f: RunFacts, charts) -> None:
    examined, kept = f.scan.langs.get("examined"), f.scan.langs.get(KEPT, {})
    if not examined:
        return
    top = examined.most_common(25)
    total = sum(examined.values())
    langs = [lang for lang, _ in top]
    chart = charts.grouped_bars("Languages", langs, {"examined": [float(n) for _, n in top],
                                                     "kept": [float(kept.get(lang, 0)) for lang in langs]},
                                "documents", rotate=60)
    doc.add(Heading("Languages"), Image("languages.svg", chart, "languages"),
            Table(["language", "examined", "share", "kept"],
                  [[lang, f"{n:,}", _pct(n, total), f"{kept.get(lang, 0):,}"] for lang, n in top],
                  id="languages", caption=f"Top {len(top)} of {len(examined)} languages by documents examined"))
    _score_spread(doc, f)


def _score_spread(doc: Doc, f: RunFacts, top: int = 25) -> None:
    """Quartiles of the kept documents' ranking score per language and per source (from 1/100 bins)."""
    bins = f.scan.score_bins
    if not bins:
        return
    rows = []
    for kind in ("language", "source"):
        keys = sorted((k for k in bins if k[0] == kind), key=lambda k: (-int(bins[k].sum()), k[1]))[:top]
        for k in keys:
            c = np.cumsum(bins[k])
            q = [(np.searchsorted(c, p * c[-1]) + 1) / len(c) for p in (0.1, 0.25, 0.5, 0.75, 0.9)]  # bin upper edges
            rows.append([kind, k[1], f"{int(c[-1]):,}"] + [f"{x:.2f}" for x in q])
    doc.add(Table(["by", "value", "kept", "p10", "p25", "median", "p75", "p90"], rows, id="score_spread",
                  caption=f"{SCORE_COLUMN} of kept documents (every one, quantiles to a bin of 0.01), per language and per "
                          "source: what a mixture's score buckets cut (docs/quality.md shows samples per bucket)"))


def _projection(doc: Doc, f: RunFacts, raw_bytes: float, resamples: int) -> Projection | None:
    try:
        proj = project(f.funnels, f.stages, raw_bytes, resamples=resamples)
    except ValueError as exc:
        doc.add(Heading("Projection"), Para(f"No projection: {exc}."))
        return None
    proj.assumptions = _assumptions(f.scan, f.shard_counts, proj)
    proj.meta = {"tokenizer": TOKENIZER, "tokens_counted": "exact" if f.scan.exact_tokens else "estimated",
                 "run_dir": storage.absolute(f.run_dir)}

    def fmt(q: str, e) -> str:
        h = human_bytes if q == "bytes" else human_count
        return f"{h(e.point)} [{h(e.lo)}, {h(e.hi)}]"

    rows = [[s] + [fmt(q, proj.estimates[q][k]) for q in QUANTITIES] for k, s in enumerate(proj.stages)]
    tok = proj.final("tokens")
    doc.add(Heading(f"Projection to {human_bytes(proj.raw_bytes)} of raw input"),
            Para(f"Expected clean tokens: {human_count(tok.point)} ({proj.confidence:.0%} interval "
                 f"{human_count(tok.lo)} to {human_count(tok.hi)}); written to projection.json for "
                 f"`refinery plan`."),
            Table(["stage", "documents left", "text left", "tokens left"], rows, id="projection",
                  caption=f"Point estimate [{proj.confidence:.0%} bootstrap interval]"),
            Heading("Assumptions", 3), Bullets(proj.assumptions))
    return proj


def _yield(doc: Doc, f: RunFacts, charts) -> None:
    """What relaxing each rule would add (pipeline/report/yields.py), with samples at the thresholds
    and the duplicates dedup removed next to what they duplicate."""
    from pipeline.report.yields import PartReader, duplicate_pairs, fill_texts, near_misses, rule_yields

    last = f.ledger.total(f.stages[-1])
    tpb = f.tokens()[-1] / last.kept_bytes if last.kept_bytes else 0.0
    reader = PartReader(f.run_dir, f.scan.text_bytes)  # the section reads the same files rule after rule
    rules = rule_yields(f.run_dir, f.recipe, f.ledger, tpb, reuse=[f.run_dir] + _retuned_from(f.run_dir), reader=reader)
    raw = sum(v.get("bytes", 0) for v in f.ledger.inputs.values())
    data = {"raw_bytes": raw, "kept_tokens": f.tokens()[-1], "tokens_per_byte": tpb, "rules": [
        {"setting": r.name, "stage": r.stage, "key": r.key, "current": r.current, "column": r.column,
         "points": [{"value": p.value, "docs": p.docs, "bytes": p.bytes, "final_bytes": p.final_bytes,
                     "final_tokens": p.final_tokens, "by_shard": p.by_shard} for p in r.points]}
        for r in rules]}  # for `refinery plan --run`
    storage.write_text(storage.join(f.run_dir, "report", "yield.json"), json.dumps(data, indent=1, default=str) + "\n")
    doc.add(Heading("Yield: what relaxing each rule adds"), Para(
        "For each decision setting, the stage re-decides the documents it rejected from their stored signals "
        "with the setting one step looser (an integer by 1, anything else by 10%), every other setting fixed: "
        "exact for that stage. What later stages would keep of them is estimated from what they kept of the "
        "documents they saw (bytes), tokens from the kept text's tokens per byte. `refinery retune RUN --set "
        "STAGE.KEY=VALUE --out RUN2` gives the exact run."))
    ranked = sorted((r for r in rules if r.points[-1].docs), key=lambda r: -r.points[0].final_tokens)
    if not ranked:
        doc.add(Para("No rule rejected anything that a looser setting would keep."))
        return
    rows = []
    for r in ranked:
        p, off = r.points[0], r.points[-1]
        top_src = ", ".join(f"{k} {v:,}" for k, v in sorted(p.by_source.items(), key=lambda kv: -kv[1])[:3]) or "-"
        top_lang = ", ".join(f"{k} {v:,}" for k, v in sorted(p.by_lang.items(), key=lambda kv: -kv[1])[:4]) or "-"
        rows.append([r.name, _fmt_value(r.current), _fmt_value(p.value), f"{p.docs:,}", human_bytes(p.bytes),
                     f"{p.final_tokens:,.0f}", f"{off.final_tokens:,.0f}", top_src, top_lang])
    doc.add(Table(["setting", "now", "one step", "docs added", "text added", "tokens added (est.)",
                   "tokens added if off", "by source", "by language"], rows, id="yield",
                  caption="Sorted by tokens added one step looser; 'off' turns the rule off."))
    for r in ranked[:8]:
        labels = [f"{s} step{'s' if s > 1 else ''} ({_fmt_value(p.value)})" for s, p in zip((1, 2, 3, 5), r.points)] + ["off"]
        doc.add(Image(f"yield_{r.name.replace('.', '_')}.svg", charts.grouped_bars(
            f"{r.name}: tokens added as the threshold moves (now {_fmt_value(r.current)})", labels,
            {"tokens added (est.)": [p.final_tokens for p in r.points]}, "tokens"), f"yield curve of {r.name}"))
    doc.add(Heading("At the thresholds", 3), Para(
        "Per thresholded signal: the rejected documents nearest the threshold (just outside) and the "
        "documents that passed the stage nearest it (just inside), with the signal's value."))
    near = [(r, near_misses(f.run_dir, f.stages, r.stage, r.column, r.current, r.freed, reader=reader))
            for r in ranked if r.column is not None]
    fill_texts(reader, [ex for _, sides in near for side in sides for ex in side])
    for r, (outside, inside) in near:
        if not outside and not inside:
            continue
        doc.add(Heading(f"{r.name} = {_fmt_value(r.current)} ({r.column})", 4))
        for side, rows_ in (("just outside", outside), ("just inside", inside)):
            for ex in rows_:
                doc.add(Quote(f"{side}: {r.column} = {_fmt_value(ex[r.column])} [{ex['source']}] {ex['url'] or ex['id']}",
                              ex["text"] or "(empty text)"))
    dups = [(s, duplicate_pairs(f.run_dir, f.stages, s, reader=reader)) for s in f.stages if s in f.ledger.stages
            and any(k.endswith("duplicate") for k in f.ledger.total(s).rejected)]
    dups = [(s, d) for s, d in dups if d]
    if dups:
        doc.add(Heading("Duplicates and what they duplicate", 3), Para(
            "Rejected duplicates next to the document kept in their place (`drop_detail`), with the Jaccard "
            "similarity of their word 5-gram sets."))
        for s, pairs in dups:
            doc.add(Heading(s, 4))
            for d in pairs:
                jac = "-" if d["jaccard"] is None else f"{d['jaccard']:.3f}"
                doc.add(Quote(f"removed {d['url'] or d['id']} (Jaccard {jac} with the one kept)", d["text"] or "(empty)"),
                        Quote(f"kept {d['of_url'] or d['of_id']}", d["of_text"] or "(not found in the run)"))


def _retuned_from(run_dir: str) -> list[str]:
    """The run a retuned run was re-decided from (retune.json), whose report's measurements it may reuse."""
    info = storage.read_json(storage.join(run_dir, "retune.json"))  # None when absent or unreadable
    src = info.get("from") if isinstance(info, dict) else None
    return [src] if isinstance(src, str) and src else []


def _fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_value(x) for x in v) + "]"
    return str(v)


def _audit(doc: Doc, f: RunFacts) -> None:
    doc.add(Heading("Rejected documents to audit"),
            Para(f"A random sample of up to 5 rejected documents per stage and reason, text cut to 400 characters: "
                 f"around the part of the text the reason applies to when the stage can say where (a repeated "
                 f"line, the most toxic paragraph, ...; `Stage.flagged_span`), which is marked {SPAN_START} ... "
                 f"{SPAN_END}; else the first 400."))
    order = {s: i for i, s in enumerate(f.stages)}
    for (stage, reason), examples in sorted(f.scan.examples.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1])):
        doc.add(Heading(f"{stage}: {reason}", 3))
        for ex in examples:
            detail = f" — {ex.detail}" if ex.detail else ""
            where = ""
            text = ex.text
            if ex.span_of is not None and ex.span_at is not None:
                s, e = ex.span_of
                where = f" (flagged: characters {s:,}-{e:,})"
                stop = len(text) if ex.span_end_at is None else ex.span_end_at
                text = (text[:ex.span_at] + SPAN_START + text[ex.span_at:stop]
                        + ("" if ex.span_end_at is None else SPAN_END) + text[stop:])
            doc.add(Quote(f"[{ex.source}] {ex.url or ex.id}{detail}{where}", text or "(empty text)"))


SPAN_START, SPAN_END = "⟦", "⟧"  # around the flagged span in an audit sample


_READING_COLORS = ["#dd8452", "#c44e52", "#8172b3", "#937860", "#da8bc3"]


def _signal_series(groups: dict[str, np.ndarray], stages: list[str],
                   by_reason: dict[tuple[str, str], np.ndarray] | None = None, col: str = "",
                   stage_of=lambda label: None) -> list[tuple[str, np.ndarray, str]]:
    """(label, values, colour): kept / rejected at the signal's first rejecting stage / rejected
    later; the first rejecting stage's rejects split into each reason that reads `col`
    (`Stage.reason_signals`, from `by_reason`: (stage, reason) -> values) and its other reasons,
    when the stage has a rule that reads `col` (even if the sample holds none of its rejects)."""
    from pipeline.report.charts import HIST_COLORS

    empty = np.empty(0)
    rejecting = [s for s in stages if s in groups]
    first = rejecting[0] if rejecting else None
    later = [groups[s] for s in rejecting[1:]]
    kept = ("kept", groups.get(KEPT, empty), HIST_COLORS[0])
    rest = ("rejected later", np.concatenate(later) if later else empty, HIST_COLORS[2])
    st = stage_of(first) if first else None
    reads = {r for r, c in (st.reason_signals() if st is not None else {}).items() if c == col}
    mine = {r: v for (s, r), v in sorted((by_reason or {}).items()) if s == first}
    if not reads or sum(map(len, mine.values())) != len(groups[first]):
        return [kept, (f"rejected at {first}" if first else "rejected", groups.get(first, empty) if first else empty,
                       HIST_COLORS[1]), rest]
    own = [r for r in mine if r in reads][: len(_READING_COLORS)]
    other = [v for r, v in mine.items() if r not in own]
    return ([kept] + [(f"{first}: {r}", mine[r], c) for r, c in zip(own, _READING_COLORS)]
            + [(f"{first}: other reasons", np.concatenate(other) if other else empty, OTHER_REASONS_COLOR), rest])


OTHER_REASONS_COLOR = "#f3d3b5"


def _consistency(ledger: Ledger, scan: RunScan) -> list[str]:
    """Differences between the ledger and the part files (missing or extra files)."""
    out = []
    expected = [(KEPT, "kept/", ledger.total(ledger.stage_order[-1]).kept)]
    expected += [(s, f"rejects/{s}/", ledger.total(s).rejected_docs) for s in ledger.stage_order]
    for group, folder, want in expected:
        n = sum(g.docs for gs in scan.shards.values() for name, g in gs.items() if name == group)
        if n != want:
            out.append(f"{folder} holds {n:,} documents but the ledger says {want:,}")
    return out


_SHARD_COUNTS = {
    "records": "per-shard documents, bytes and input sizes from the run's per-shard ledgers (OUT/shards.jsonl).",
    "spread": "per-shard documents and bytes counted in the part files; each source's input bytes from the ledger, "
              "spread over its shards in proportion to the text each shard gave (OUT/shards.jsonl is missing or "
              "does not add up to the ledger).",
}


def _assumptions(scan: RunScan, shard_counts: str, proj: Projection) -> list[str]:
    out = [
        "The raw input has the same kind of data and the same mix of sources (by raw bytes) as this run, "
        "and each stage keeps the same share of it: quantities scale linearly with raw bytes.",
        f"Ratio estimate: projected = target raw bytes x (sum over shards of what is left after the stage) / "
        f"(sum of the shards' raw bytes). Interval: {proj.confidence:.0%} percentile bootstrap, "
        f"{proj.resamples} resamples of the {proj.shards} input shards with replacement, within each source.",
        "Shards: " + _SHARD_COUNTS[shard_counts],
        "Deduplication removes more at larger scale (more chances to meet a duplicate), so the dedup stages' "
        "survival measured here is an upper bound; the projection after them is optimistic.",
    ]
    if not scan.exact_tokens:
        out.append("Tokens: tokens per byte measured in windows around sampled byte positions of each group "
                   "and source; the interval does not include that sampling error.")
    if scan.subset and shard_counts != "records":
        out.append(f"The shards resampled are a random {scan.scanned_shards:,} of the run's {scan.total_shards:,} "
                   "(shards that gave no document at all are left out of the subset).")
    if proj.shards < 10:
        out.append(f"Only {proj.shards} shards: the interval is rough; more shards give a better one.")
    return out


def write_report(run_dir: str, project: str | float | None = None, **kwargs: Any) -> ReportResult:
    """Write OUT/report/{report.md, report.html, *.svg, projection.json}. `project` is the raw input
    size to project to (e.g. "4.3TB"); default the reference run's 4.3 TB."""
    size = REFERENCE_RAW if project is None else (parse_size(project) if isinstance(project, str) else float(project))
    # Python's cycle collector paused while the report is built, resumed after (any cycle made
    # meanwhile is collected then). Why: the report builds its tables and lists once and drops them
    # at the end, while each full collection rescans every long-lived object of the process: the
    # models and spaCy's vocabulary the yield section loads, tiktoken's ranks, the run's imports. A
    # report made three of them, 0.15-0.4 of its 2-4 CPU-s; nothing of the report depends on them.
    was = gc.isenabled()
    gc.disable()
    try:
        doc, proj = build_report(run_dir, size, **kwargs)
    finally:
        if was:
            gc.enable()
    out = storage.join(run_dir, "report")
    storage.makedirs(out)
    md, page = to_markdown(doc), to_html(doc)
    for b in doc.blocks:
        if isinstance(b, Image):
            storage.write_bytes(storage.join(out, b.name), b.data)
    storage.write_text(storage.join(out, "report.html"), page)
    if proj is not None:
        storage.write_text(storage.join(out, "projection.json"), json.dumps(proj.to_dict(), indent=2) + "\n")
    # Last: a resumed run writes the report again unless report.md exists (an interrupted report
    # must not pass for a complete one)
    storage.write_text(storage.join(out, "report.md"), md)
    return ReportResult(md, page, proj)


# -- command line -------------------------------------------------------------------------------
def cmd_report(args: argparse.Namespace) -> int:
    args.run_dir = storage.normalize(args.run_dir)
    if not storage.exists(storage.join(args.run_dir, "ledger.json")):
        raise ConfigError(f"{args.run_dir}: no ledger.json here; expected the output directory of a finished run")
    try:
        size = parse_size(args.project) if args.project else None
    except ValueError as exc:
        raise ConfigError(f"--project: {exc}") from None
    res = write_report(args.run_dir, size, scan_kwargs={"max_shards": args.max_shards or None})
    out = storage.join(args.run_dir, "report")
    print(f"wrote {storage.join(out, 'report.md')} and {storage.join(out, 'report.html')}")
    if res.projection is not None:
        tok = res.projection.final("tokens")
        print(f"projection to {human_bytes(res.projection.raw_bytes)} raw: {human_count(tok.point)} clean tokens "
              f"({res.projection.confidence:.0%} interval {human_count(tok.lo)}-{human_count(tok.hi)}): "
              f"{storage.join(out, 'projection.json')}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="write the funnel report of a finished run (OUT/report/)")
    p.add_argument("run_dir", help="the run's output directory (holds ledger.json)")
    p.add_argument("--project", metavar="SIZE",
                   help="project the funnel to this much raw input, e.g. 4.3TB, 800GB, 1.2e12 (default 4.3TB)")
    p.add_argument("--max-shards", type=int, default=128, metavar="N",
                   help="on runs too big to count tokens exactly, scan a random N shards (default 128; 0: all)")
    p.set_defaults(func=cmd_report)

