"""Toxicity on whole documents: which span-to-document rule, how good per language, how fast.

Documents (built here from held-out data, nothing the shipped model was trained on):
  clean multi-paragraph prose per language (XQuAD articles 24-47; JaQuAD odd articles; Gutenberg
  even books and WikiText-2 test articles for en; lingua sentences 500-999 in paragraphs for
  languages without XQuAD), each in three versions: as is, with a passage of 1-2 held-out *clean*
  labelled examples of its language inserted (same style as the toxic ones: social-media text is
  not enough to reject), and with 1-2 held-out *toxic* examples inserted; half of the passages go in
  as a paragraph of their own, half inside a paragraph after a sentence. A document is toxic when a
  toxic passage was inserted.
Rule choice: every candidate (granularity x statistic x threshold) is scored on the documents of
even-numbered base texts (tune half); the one with the best macro F1 over languages is reported on
the odd-numbered ones (report half), next to the previous default and alt-profanity-check.
Web pages (`--web DIR`): the original pages of `make_pipeline_input.py --jsonl` (real crawl and
trafilatura-benchmark pages, their text as refinery extracts it; never trained on), `lang` from the
langid stage, halves by a hash of the URL; benchmarks/data/toxicity_web_labels.tsv lists the pages a
reader judged toxic or unsure, every other page is clean. Printed: clean pages rejected and toxic
pages caught per half, for the stage's defaults (and `--web-model NAME PATH`: another model file,
e.g. the previous one) and alt-profanity-check.
Speed: the same documents (plus HPLT web pages and 4chan threads), refinery's stage at its defaults
(with `lang`) and alt-profanity-check's `predict_prob`, alternated, CPU time of this process, the
median ratio over `--repeats` rounds, for a cold worker and a steady one (`speed`); the text the
stage is timed on is always text it has not seen.

    PYTHONPATH=. python benchmarks/toxicity.py [--corpora ../shared/corpora] [--repeats 5]
    PYTHONPATH=. python benchmarks/toxicity.py --skip-rules --repeats 9 --also-tree before DIR   # another checkout alongside
    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 56 --shards 8 --jsonl --out /tmp/refinery-bench/jsonl56
    PYTHONPATH=. python benchmarks/toxicity.py --skip-rules --skip-speed --web /tmp/refinery-bench/jsonl56
"""
from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import io
import json
import random
import re
import statistics
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from pipeline.schema import make_record, records_to_table
from pipeline.train.toxicity import (
    LANGUAGES, _zst_text, gutenberg_books, jaquad_paragraphs, lingua_sentences, load_evaluation_only,
    load_labelled, prf, xquad_paragraphs,
)
from stages.toxicity import Toxicity

ROOT = Path(__file__).resolve().parents[1]
GRANULARITIES = [("sentence", 0), ("window", 100), ("window", 200), ("window", 400), ("paragraph", 0), ("document", 0)]
MAX_SCORES = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99]
FRACTIONS = [0.05, 0.1, 0.2, 0.3, 0.5]


def base_documents(corpora: Path) -> dict[str, list[list[str]]]:
    """lang -> documents, each a list of paragraphs of held-out clean prose."""
    docs: dict[str, list[list[str]]] = defaultdict(list)
    by_article: dict[tuple[str, int], list[str]] = defaultdict(list)
    for r in xquad_paragraphs(corpora):
        if r["article"] >= 24 and r["lang"] in LANGUAGES:
            by_article[(r["lang"], r["article"])].append(r["text"].strip())
    for (lang, _), paras in sorted(by_article.items()):
        for i in range(0, len(paras), 4):
            docs[lang].append(paras[i:i + 4])
    ja: dict[int, list[str]] = defaultdict(list)
    for r in jaquad_paragraphs(corpora):
        if r["article"] % 2 == 1:
            ja[r["article"]].append(r["text"].strip())
    docs["ja"] = [p[:4] for _, p in sorted(ja.items())][:60]
    for i, book in enumerate(gutenberg_books(corpora)):
        if i % 2 == 0:
            paras = [" ".join(p.split()) for p in book.split("\n\n") if len(p) > 200]
            docs["en"] += [paras[j:j + 4] for j in range(0, min(len(paras), 40), 4)]
    for lang in LANGUAGES:
        if lang not in docs or len(docs[lang]) < 20:
            sents = lingua_sentences(corpora, lang)[500:]
            paras = [" ".join(sents[i:i + 4]) for i in range(0, len(sents), 4)]
            docs[lang] += [paras[i:i + 4] for i in range(0, len(paras), 4)]
    return docs


def passages(corpora: Path) -> dict[tuple[str, bool], list[str]]:
    """(lang, toxic) -> held-out labelled examples (test parts; evaluation-only sets for es, ru)."""
    out: dict[tuple[str, bool], list[str]] = defaultdict(list)
    for e in load_labelled(corpora) + load_evaluation_only(corpora):
        if e.part == "test" and e.source not in ("hatebr", "hateval_en", "jigsaw101") and 10 < len(e.text) < 600:
            out[(e.lang, e.toxic)].append(" ".join(e.text.split()))
    return out


def documents(corpora: Path, seed: int = 13) -> list[dict]:
    """Rows: lang, half (tune/report), toxic, text."""
    rng = random.Random(seed)
    pool = passages(corpora)
    rows = []
    for lang, docs in sorted(base_documents(corpora).items()):
        if not pool.get((lang, True)) or not pool.get((lang, False)):
            continue
        for i, paras in enumerate(docs):
            half = "tune" if i % 2 == 0 else "report"
            rows.append({"lang": lang, "half": half, "toxic": False, "kind": "plain", "text": "\n\n".join(paras)})
            for toxic in (False, True):
                inserted = rng.sample(pool[(lang, toxic)], k=min(rng.randint(1, 2), len(pool[(lang, toxic)])))
                at = rng.randint(0, len(paras) - 1)
                passage = " ".join(inserted)
                if rng.random() < 0.5:  # as a paragraph of its own (a comment under an article)
                    text = "\n\n".join(paras[:at] + [passage] + paras[at:])
                else:  # inside a paragraph, after one of its sentences (or at its end)
                    cut = [m.end() for m in re.finditer(r"[.!?。！？]\s*", paras[at])]
                    pos = rng.choice(cut) if cut else len(paras[at])
                    para = paras[at][:pos].rstrip() + " " + passage + " " + paras[at][pos:].lstrip()
                    text = "\n\n".join(paras[:at] + [para.strip()] + paras[at + 1:])
                rows.append({"lang": lang, "half": half, "toxic": toxic, "kind": "inserted", "text": text})
    return rows


def as_table(rows: list[dict]) -> pa.Table:
    t = records_to_table(make_record(source="b", kind="jsonl", file="t", offset=i, text=r["text"]) for i, r in enumerate(rows))
    return t.append_column("lang", pa.array([r["lang"] for r in rows], pa.string()))


def macro_f1(rows: list[dict], pred: list[bool]) -> float:
    by_lang = defaultdict(lambda: ([], []))
    for r, p in zip(rows, pred):
        by_lang[r["lang"]][0].append(r["toxic"])
        by_lang[r["lang"]][1].append(float(p))
    return statistics.mean(prf(y, s)["f1"] for y, s in by_lang.values())


MAX_CLEAN_LOSS = 0.03  # a rule may reject at most this share of the clean documents (tune half)


def clean_loss(rows: list[dict], pred: list[bool]) -> float:
    neg = [p for r, p in zip(rows, pred) if not r["toxic"]]
    return sum(neg) / len(neg)


def choose_rule(rows: list[dict], table: pa.Table, web: list[dict] | None = None) -> list[tuple[float, float, str, dict, float | None]]:
    """Every candidate rule's (macro F1, clean documents rejected, name, settings, clean web pages
    rejected) on `rows` (and `web`: tune-half web pages, unsure ones left out), best F1 first."""
    results = []
    web = [r for r in web or [] if r["label"] != "unsure"]
    for gran, window in GRANULARITIES:
        stage = Toxicity(granularity=gran, window_chars=window or 300)
        scored = stage.score_documents(table.column("text").to_pylist(), table.column("lang").to_pylist())
        on_web = stage.score_documents([r["text"] for r in web], [r["lang"] for r in web]) if web else []

        def web_loss(hit) -> float | None:
            clean = [hit(s, f) for (s, f), r in zip(on_web, web) if r["label"] == "clean"]
            return sum(clean) / len(clean) if clean else None
        for t in MAX_SCORES:
            pred = [s >= t for s, _ in scored]
            results.append((macro_f1(rows, pred), clean_loss(rows, pred), f"{gran}{window or ''} max_score>={t}",
                            dict(granularity=gran, window_chars=window or 300, max_score=t, max_toxic_fraction=None),
                            web_loss(lambda s, f, t=t: s >= t)))
        for fr in FRACTIONS:
            pred = [f >= fr and s >= 0.5 for s, f in scored]
            results.append((macro_f1(rows, pred), clean_loss(rows, pred), f"{gran}{window or ''} fraction>={fr}",
                            dict(granularity=gran, window_chars=window or 300, max_score=None, max_toxic_fraction=fr),
                            web_loss(lambda s, f, fr=fr: f >= fr and s >= 0.5)))
    return sorted(results, key=lambda r: -r[0])


def report(rows: list[dict], tools: dict) -> None:
    langs = sorted({r["lang"] for r in rows})
    print("| lang | docs (toxic) | " + " | ".join(f"{name} F1 / FPR" for name in tools) + " |")
    print("|---|---:|" + "---:|" * len(tools))
    for lang in langs:
        sub = [r for r in rows if r["lang"] == lang]
        cells = []
        for name, fn in tools.items():
            pred = fn(sub)
            m = prf([r["toxic"] for r in sub], [float(p) for p in pred])
            neg = [p for r, p in zip(sub, pred) if not r["toxic"]]
            cells.append(f"{m['f1']:.3f} / {sum(neg) / len(neg):.1%}")
        print(f"| {lang} | {len(sub)} ({sum(r['toxic'] for r in sub)}) | " + " | ".join(cells) + " |")


def stage_tool(**cfg):
    from stages.toxicity import MODEL_LANGUAGES

    stage = Toxicity(**{"languages": sorted(MODEL_LANGUAGES), **cfg})  # the model's rule, in every language it has

    def run(rows):
        return [r is not None for r in stage.decide(stage.annotate(as_table(rows)))]
    return run


def profanity_tool(rows):
    from profanity_check import predict_prob

    return [p >= 0.5 for p in predict_prob([r["text"] for r in rows])]


WEB_LABELS = ROOT / "benchmarks" / "data" / "toxicity_web_labels.tsv"


def web_pages(directory: Path) -> list[dict]:
    """Rows: url, half, label (toxic / clean / unsure), text, lang: the original pages of a
    make_pipeline_input.py --jsonl directory (its copies carry "copy=" in their URL)."""
    from stages.langid import LangID

    labels = {}
    for line in WEB_LABELS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            url, label, _ = line.split("\t")
            labels[url] = label
    pages = {}
    for path in sorted(glob.glob(str(directory / "*.jsonl"))):
        if Path(path).name == "manifest.jsonl":
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if "copy=" not in r["url"] and r.get("text"):
                    pages[r["url"]] = r["text"]
    rows = [{"url": u, "text": t, "label": labels.get(u, "clean"),
             "half": "tune" if int(hashlib.sha1(u.encode()).hexdigest(), 16) % 2 == 0 else "report"}
            for u, t in sorted(pages.items())]
    table = records_to_table(make_record(source="w", kind="jsonl", file="w", offset=i, text=r["text"])
                             for i, r in enumerate(rows))
    for r, lang in zip(rows, LangID().annotate(table).column("lang").to_pylist()):
        r["lang"] = lang
    return rows


def web_report(rows: list[dict], tools: dict) -> None:
    """Per half: clean pages rejected, toxic pages caught (unsure pages left out)."""
    print("| tool | half | pages (toxic) | clean pages rejected | toxic pages caught |")
    print("|---|---|---:|---:|---:|")
    for name, fn in tools.items():
        for half in ("tune", "report"):
            sub = [r for r in rows if r["half"] == half and r["label"] != "unsure"]
            pred = fn(sub)
            clean = [p for r, p in zip(sub, pred) if r["label"] == "clean"]
            toxic = [p for r, p in zip(sub, pred) if r["label"] == "toxic"]
            print(f"| {name} | {half} | {len(sub)} ({len(toxic)}) | {sum(clean) / len(clean):.1%} ({sum(clean)}) "
                  f"| {sum(toxic)} of {len(toxic)} |")


def speed_documents(corpora: Path, rows: list[dict]) -> list[dict]:
    import zstandard

    # group: documents built from the same base text (plain and two insertions) are one group, so
    # the speed test's halves never share text
    out = [{"text": r["text"], "lang": r["lang"], "group": i // 3} for i, r in enumerate(rows)]
    with gzip.open(corpora / "quality" / "paloma_4chan_val.jsonl.gz", "rt", encoding="utf-8") as f:
        out += [{"text": json.loads(l)["text"], "lang": "en", "group": len(out) + i} for i, l in enumerate(f) if l.strip()]
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace"):
            d = json.loads(l)
            if d.get("t"):
                out.append({"text": d["t"], "lang": d.get("lang"), "group": len(out)})  # lang: OpenLID label
    return out


# Another checkout's stage, in a process of its own (its `stages` package cannot share this one's):
# it builds the same batches from a JSON file of the documents, then on each command line times the
# cold or the steady work in its own CPU time, or prints every document's signals and decision.
_TREE_WORKER = r"""
import json, sys, time
import pyarrow as pa
from pipeline.schema import make_record, records_to_table
from stages.toxicity import Toxicity
docs = json.load(open(sys.argv[1], encoding="utf-8"))
batch = int(sys.argv[2])
def table(ds):
    t = records_to_table(make_record(source="b", kind="jsonl", file="t", offset=i, text=d["text"]) for i, d in enumerate(ds))
    return t.append_column("lang", pa.array([d["lang"] for d in ds], pa.string()))
def batches(ds):
    return [table(ds[i:i + batch]) for i in range(0, len(ds), batch)]
halves = [[d for d in docs if d["group"] % 2 == h] for h in (0, 1)]
work = {"cold": [batches(docs)], "steady": [batches(h) for h in halves]}
st = Toxicity()
st.ensure_setup()
st.decide(st.annotate(table(docs[:20])))
def forget():
    if getattr(st, "scalar", None) is not None:
        st.scalar.forget()
print("ready", flush=True)
for line in sys.stdin:
    kind, timed = line.split()
    forget()
    if kind == "signals":
        out = []
        for tb in work["cold"][0]:
            t = st.annotate(tb)
            cols = [t.column(c).to_pylist() for c in ("toxicity_score", "toxic_span_fraction", "toxic_word_count", "toxicity_lang")]
            out += [list(r) + [d] for r, d in zip(zip(*cols), st.decide(t))]
        print(json.dumps(out), flush=True)
        continue
    timed = int(timed)
    if kind == "steady":
        for tb in work[kind][1 - timed]:
            st.decide(st.annotate(tb))
    t0 = time.process_time()
    for tb in work[kind][timed if kind == "steady" else 0]:
        st.decide(st.annotate(tb))
    print(time.process_time() - t0, flush=True)
"""


class TreeStage:
    """The stage of another checkout (`root`), timed in its own process (`_TREE_WORKER`)."""

    def __init__(self, root: str, docs: list[dict], batch: int, tmp: Path):
        import os
        import subprocess
        import sys

        path = tmp / "speed_documents.json"
        if not path.exists():
            path.write_text(json.dumps([{k: d[k] for k in ("text", "lang", "group")} for d in docs]), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=str(Path(root).resolve()))
        self.proc = subprocess.Popen([sys.executable, "-c", _TREE_WORKER, str(path), str(batch)], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready", f"{root}: the stage did not start"

    def ask(self, kind: str, timed: int = 0) -> str:
        self.proc.stdin.write(f"{kind} {timed}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def signals(stage: Toxicity, tables: list[pa.Table]) -> list[list]:
    """Every document's four signals and decision, the stage having forgotten its words first."""
    if getattr(stage, "scalar", None) is not None:
        stage.scalar.forget()
    out = []
    for tb in tables:
        t = stage.annotate(tb)
        cols = [t.column(c).to_pylist() for c in ("toxicity_score", "toxic_span_fraction", "toxic_word_count", "toxicity_lang")]
        out += [list(r) + [d] for r, d in zip(zip(*cols), stage.decide(t))]
    return out


def speed(docs: list[dict], repeats: int, also: dict[str, str] | None = None, batch: int = 1000,
          trees: dict[str, str] | None = None) -> None:
    """CPU time of this process, alt-profanity-check and refinery's stage alternated, per round;
    `also`: other model files (name -> path) timed in the same rounds with the stage's defaults;
    `trees`: other checkouts (name -> directory) whose stage is timed in the same rounds, each in a
    process of its own (its CPU time), and whose signals and decisions are compared with this one's
    on every document. Both tools get the documents in batches of `batch` (a source's default batch
    size), as in a run.

    Two measurements per round. Cold: the stage forgets every word it remembered
    (stages/_scalar_fasttext.py), then scores all documents: a worker's first batches. Steady: the
    documents in two halves (every other group: no text in both); the stage forgets, scores one half
    untimed, and is timed on the other half, which it has never seen: a worker that has already
    scored other documents. alt-profanity-check is timed on the same documents in both."""
    import os

    from profanity_check import predict_prob

    def batches(ds):
        return [ds[i:i + batch] for i in range(0, len(ds), batch)]

    halves = [[d for d in docs if d["group"] % 2 == h] for h in (0, 1)]
    work = {"cold": [batches(docs)], "steady": [batches(h) for h in halves]}
    tables = {k: [[as_table(b) for b in bs] for bs in v] for k, v in work.items()}
    texts = {k: [[[d["text"] for d in b] for b in bs] for bs in v] for k, v in work.items()}
    from stages.toxicity import MODEL_LANGUAGES

    # every document scored (every language the model has), and the defaults (judged languages only:
    # the others pass unscored, which costs only the language check)
    stages = {"refinery toxicity (every model language scored, lang)": Toxicity(languages=sorted(MODEL_LANGUAGES)),
              "refinery toxicity (defaults: judged languages only, lang)": Toxicity()}
    for name, path in (also or {}).items():
        stages[name] = Toxicity(model_path=path)
    for st in stages.values():
        st.ensure_setup()
        st.decide(st.annotate(as_table(docs[:20])))
    predict_prob([d["text"] for d in docs[:10]])
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="toxicity-speed-"))
    others = {name: TreeStage(root, docs, batch, tmp) for name, root in (trees or {}).items()}
    if others:
        mine = signals(stages["refinery toxicity (defaults: judged languages only, lang)"], tables["cold"][0])
        for name, tree in others.items():
            theirs_signals = json.loads(tree.ask("signals"))
            differ = [i for i, (a, b) in enumerate(zip(mine, theirs_signals)) if a != b]
            print(f"{name}: signals and decisions {'identical' if not differ and len(mine) == len(theirs_signals) else 'DIFFERENT'}"
                  f" on {len(mine)} documents ({sum(r[-1] is not None for r in mine)} rejected here)"
                  + (f"; first differences: {[(i, mine[i], theirs_signals[i]) for i in differ[:3]]}" if differ else ""))

    def forget(st):
        if getattr(st, "scalar", None) is not None:
            st.scalar.forget()

    load = os.getloadavg()
    theirs: dict[str, list[float]] = {"cold": [], "steady": []}
    ours: dict[tuple[str, str], list[float]] = {(n, k): [] for n in [*stages, *others] for k in theirs}
    for r in range(repeats):
        for kind in ("cold", "steady"):
            timed = 0 if kind == "cold" else 1 - r % 2
            t = time.process_time()
            for b in texts[kind][timed]:
                predict_prob(b)
            theirs[kind].append(time.process_time() - t)
            for name, st in stages.items():
                forget(st)
                if kind == "steady":
                    for tb in tables[kind][1 - timed]:
                        st.decide(st.annotate(tb))
                t = time.process_time()
                for tb in tables[kind][timed]:
                    st.decide(st.annotate(tb))
                ours[(name, kind)].append(time.process_time() - t)
            for name, tree in others.items():
                ours[(name, kind)].append(float(tree.ask(kind, timed)))
    mb = sum(len(d["text"].encode("utf-8")) for d in docs) / 1e6
    load2 = os.getloadavg()
    print(f"\nspeed on {len(docs)} documents ({mb:.2f} MB) in batches of {batch}, CPU seconds of this process, "
          f"{repeats} alternating rounds (load average {load[0]:.1f} at the start, {load2[0]:.1f} at the end):")
    print("| tool | worker | median CPU s | docs/s per core | ratio to alt-profanity-check (median, min-max over rounds) |")
    print("|---|---|---:|---:|---|")
    for kind, label in (("cold", "cold (all documents, nothing remembered)"),
                        ("steady", "steady (half the documents, after scoring the other half)")):
        n = len(docs) if kind == "cold" else len(docs) / 2
        med = statistics.median(theirs[kind])
        print(f"| alt-profanity-check predict_prob (whole documents) | {label} | {med:.3f} | {n / med:,.0f} | 1 |")
        for name in [*stages, *others]:
            times = ours[(name, kind)]
            ratios = [a / b for a, b in zip(theirs[kind], times)]
            m = statistics.median(times)
            print(f"| {name} | {label} | {m:.3f} | {n / m:,.0f} | **{statistics.median(ratios):.2f}x** "
                  f"({min(ratios):.2f}-{max(ratios):.2f}) |")
    for tree in others.values():
        tree.close()
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-rules", action="store_true", help="only the speed measurement")
    ap.add_argument("--batch", type=int, default=1000, help="documents per call, for both tools (speed)")
    ap.add_argument("--skip-speed", action="store_true", help="only the document rules")
    ap.add_argument("--web", type=Path, help="a make_pipeline_input.py --jsonl directory: its pages' rates")
    ap.add_argument("--web-model", nargs=2, action="append", metavar=("NAME", "PATH"), default=[],
                    help="also score the web pages with another toxicity model file")
    ap.add_argument("--also-model", nargs=2, action="append", metavar=("NAME", "PATH"), default=[],
                    help="time another toxicity model file in the same rounds (e.g. an older one)")
    ap.add_argument("--also-tree", nargs=2, action="append", metavar=("NAME", "DIR"), default=[],
                    help="time another checkout's stage in the same rounds, in its own process (e.g. main before "
                         "a change), and compare its signals and decisions with this one's on every document")
    args = ap.parse_args(argv)

    rows = documents(args.corpora)
    pages = web_pages(args.web) if args.web else None
    if not args.skip_rules:
        tune = [r for r in rows if r["half"] == "tune"]
        rep = [r for r in rows if r["half"] == "report"]
        print(f"documents: tune {len(tune)} ({sum(r['toxic'] for r in tune)} toxic), report {len(rep)} "
              f"({sum(r['toxic'] for r in rep)} toxic), {len({r['lang'] for r in rows})} languages")
        ranked = choose_rule(tune, as_table(tune), [r for r in pages or [] if r["half"] == "tune"])

        def show(rules):
            for f1, loss, name, _, web in rules:
                print(f"  {f1:.3f}  {loss:6.1%}  " + (f"{web:6.1%}  " if web is not None else "") + name)
        print("\nbest rules on the tune half (macro F1 over languages, clean documents rejected"
              + (", clean web pages rejected" if pages else "") + "):")
        show(ranked[:6])
        allowed = [r for r in ranked if r[1] <= MAX_CLEAN_LOSS and (r[4] is None or r[4] <= MAX_CLEAN_LOSS)]
        print(f"best rules that reject at most {MAX_CLEAN_LOSS:.0%} of the clean documents"
              + (" and of the clean web pages:" if pages else ":"))
        show(allowed[:6])
        best = allowed[0][3]
        print(f"\nreport half, chosen rule {allowed[0][2]} vs the stage's defaults, the previous default and alt-profanity-check:")
        report(rep, {
            "chosen": stage_tool(**best),
            "defaults": stage_tool(),
            "previous (sentence, fraction>=0.5)": stage_tool(granularity="sentence", max_score=None, max_toxic_fraction=0.5),
            "alt-profanity-check": profanity_tool,
        })
    if pages:
        print(f"\nweb pages: {len(pages)}, {sum(r['label'] == 'toxic' for r in pages)} toxic, "
              f"{sum(r['label'] == 'unsure' for r in pages)} unsure; the stage at its defaults:")
        tools = {"refinery": stage_tool()}
        tools.update({name: stage_tool(model_path=path) for name, path in args.web_model})
        tools["alt-profanity-check"] = profanity_tool
        web_report(pages, tools)
    if not args.skip_speed:
        speed(speed_documents(args.corpora, rows), args.repeats, dict(args.also_model), args.batch, dict(args.also_tree))


if __name__ == "__main__":
    main()
