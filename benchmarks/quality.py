"""Quality stage vs datatrove 0.10's filters on the same real documents: per-rule agreement and speed.

Agreement: every rule is run alone in datatrove (its filter with every other rule of that filter
switched off) and compared with the same rule's keep/drop decision in refinery (both in datatrove's
default English setting, i.e. no `lang` column). A rule whose datatrove computation is undefined on
a document (e.g. a ratio over zero words, which datatrove only reaches when another rule is off)
is left out of that rule's count. Every disagreement is listed with its signal values.

Chain: datatrove's FineWeb order GopherRepetition -> GopherQuality -> C4 -> FineWeb, where C4 also
deletes lines from the documents it keeps, against the quality stage with its defaults (C4's
`remove_lines` on): same keep/drop, same first reason and the identical output text, for datatrove's
C4 defaults and for FineWeb's C4 setting (`filter_no_terminal_punct: false`).

Speed: single process, one core, measured in process CPU time (other jobs on the machine do not
count against either side), only on documents the stage has never scored: a fresh stage over
every document, and a stage warmed on a random half scoring the other half; against datatrove's
four filters on the same documents, alternated and repeated (medians), and datatrove as a
pipeline that stops at a document's first drop.

    PYTHONPATH=. python benchmarks/quality.py [--sample N] [--no-trafilatura] [--skip-speed] [--chain-only]
                                              [--speed-only] [--repeat 3]
"""
from __future__ import annotations

import argparse
import collections
import functools
import time
import warnings
from pathlib import Path

import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks.quality_corpus import load_all  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"

OFF_GQ = dict(
    min_doc_words=None, max_doc_words=None, min_avg_word_length=None, max_avg_word_length=None,
    max_symbol_word_ratio=None, max_bullet_lines_ratio=None, max_ellipsis_lines_ratio=None,
    max_non_alpha_words_ratio=None, min_stop_words=None,
)
OFF_GR = dict(dup_line_frac=None, dup_para_frac=None, dup_line_char_frac=None, dup_para_char_frac=None, top_n_grams=(), dup_n_grams=())
OFF_FW = dict(line_punct_thr=0.0, short_line_thr=1.0, char_duplicates_ratio=1.0, new_line_ratio=float("inf"))


def datatrove_names() -> dict[str, str]:
    """Every quality reason of ours -> datatrove's reason for the same rule (default config)."""
    from stages.quality.stage import Quality

    return {k: v for rs in Quality().rule_sets for k, v in rs.datatrove_reasons().items()}


def isolated_rules():
    """(our reason, datatrove filter with only that rule on, datatrove reason(s) meaning 'this rule dropped')."""
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    dt = datatrove_names()
    rules = []
    for ours, p, r in [
        ("gopher_repetition_too_many_dup_paras", "dup_para_frac", 0.3),
        ("gopher_repetition_too_many_dup_para_chars", "dup_para_char_frac", 0.2),
        ("gopher_repetition_too_many_dup_lines", "dup_line_frac", 0.3),
        ("gopher_repetition_too_many_dup_line_chars", "dup_line_char_frac", 0.2),
    ]:
        rules.append((ours, GopherRepetitionFilter(**{**OFF_GR, p: r}), dt[ours]))
    for n, t in [(2, 0.2), (3, 0.18), (4, 0.16)]:
        ours = f"gopher_repetition_top_{n}gram_too_frequent"
        rules.append((ours, GopherRepetitionFilter(**{**OFF_GR, "top_n_grams": ((n, t),)}), dt[ours]))
    for n, t in [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)]:
        ours = f"gopher_repetition_too_many_dup_{n}grams"
        rules.append((ours, GopherRepetitionFilter(**{**OFF_GR, "dup_n_grams": ((n, t),)}), dt[ours]))
    gq = [
        ("gopher_quality_too_few_words", "min_doc_words", 50), ("gopher_quality_too_many_words", "max_doc_words", 100000),
        ("gopher_quality_mean_word_too_short", "min_avg_word_length", 3), ("gopher_quality_mean_word_too_long", "max_avg_word_length", 10),
        ("gopher_quality_too_many_hashes", "max_symbol_word_ratio", 0.1), ("gopher_quality_too_many_ellipses", "max_symbol_word_ratio", 0.1),
        ("gopher_quality_too_many_bullet_lines", "max_bullet_lines_ratio", 0.9), ("gopher_quality_too_many_ellipsis_lines", "max_ellipsis_lines_ratio", 0.3),
        ("gopher_quality_too_few_alpha_words", "max_non_alpha_words_ratio", 0.8), ("gopher_quality_too_few_stop_words", "min_stop_words", 2),
    ]
    for ours, p, v in gq:
        rules.append((ours, GopherQualityFilter(**{**OFF_GQ, p: v}), dt[ours]))
    rules.append(("c4_lorem_ipsum", C4QualityFilter(min_num_sentences=-1, filter_curly_bracket=False), dt["c4_lorem_ipsum"]))
    rules.append(("c4_curly_bracket", C4QualityFilter(min_num_sentences=-1, filter_lorem_ipsum=False), dt["c4_curly_bracket"]))
    rules.append(("c4_too_few_sentences", C4QualityFilter(filter_lorem_ipsum=False, filter_curly_bracket=False), dt["c4_too_few_sentences"]))
    rules.append(("fineweb_empty", FineWebQualityFilter(**OFF_FW), dt["fineweb_empty"]))
    for ours, p, v in [("fineweb_too_few_punct_lines", "line_punct_thr", 0.12), ("fineweb_too_many_short_lines", "short_line_thr", 0.67),
                       ("fineweb_too_many_dup_line_chars", "char_duplicates_ratio", 0.01), ("fineweb_too_many_newlines", "new_line_ratio", 0.3)]:
        rules.append((ours, FineWebQualityFilter(**{**OFF_FW, p: v}), dt[ours]))
    return rules


def dt_reason(filt, text: str, i: int):
    """datatrove's reason for dropping (None = kept); raises if datatrove cannot compute it."""
    from datatrove.data import Document

    res = filt.filter(Document(text=text, id=str(i), metadata={}))
    if res is True:
        return None
    return res[1] if isinstance(res, tuple) else "dropped"


def agreement(docs, quality):
    rules = isolated_rules()
    stats = {r: collections.Counter() for r, _, _ in rules}
    disagreements = collections.defaultdict(list)
    for i, (src, _lang, text) in enumerate(docs):
        ours = quality.score_text(text, None)
        failed = set(ours["quality_failed_rules"].split(",")) - {""}
        for reason, filt, dt_name in rules:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    r = dt_reason(filt, text, i)
                except (ZeroDivisionError, ValueError):
                    stats[reason]["undefined"] += 1
                    continue
            if reason == "gopher_quality_too_many_ellipses" and r == "gopher_too_many_hashes":
                stats[reason]["undefined"] += 1  # datatrove checks hashes first with the same parameter
                continue
            dt_drop = r == dt_name
            our_drop = reason in failed
            stats[reason]["n"] += 1
            stats[reason]["dt_drop"] += dt_drop
            stats[reason]["our_drop"] += our_drop
            if dt_drop == our_drop:
                stats[reason]["agree"] += 1
            else:
                disagreements[reason].append((src, i, dt_drop, our_drop, text[:80].replace("\n", "\\n"), ours))
    return rules, stats, disagreements


def full_filter_agreement(docs, quality):
    """Each datatrove filter with its defaults vs the first failing rule of the same family here."""
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    fams = []
    for name, filt, cls in [("gopher_repetition", GopherRepetitionFilter(), "GopherRepetition"), ("gopher_quality", GopherQualityFilter(), "GopherQuality"),
                            ("c4", C4QualityFilter(), "C4"), ("fineweb", FineWebQualityFilter(), "FineWeb")]:
        rs = [rs for rs in quality.rule_sets if type(rs).__name__ == cls][0]
        ours_of = {v: k for k, v in rs.datatrove_reasons().items()}
        fams.append((name, filt, lambda r, m=ours_of: r and m.get(r, r), rs))
    out = {}
    for name, filt, mapname, rs in fams:
        keep_agree = reason_agree = n = 0
        own = set(rs.reasons())
        for i, (_src, _lang, text) in enumerate(docs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = mapname(dt_reason(filt, text, i))
            failed = [x for x in quality.score_text(text, None)["quality_failed_rules"].split(",") if x in own]
            ours = failed[0] if failed else None
            n += 1
            keep_agree += (r is None) == (ours is None)
            reason_agree += r == ours
        out[name] = (n, keep_agree, reason_agree)
    return out


C4_SETTINGS = {"datatrove C4 defaults": {}, "FineWeb's C4 (filter_no_terminal_punct: false)": {"filter_no_terminal_punct": False}}


def datatrove_chain(**c4_kwargs):
    """datatrove's quality filters in FineWeb's order, with their defaults."""
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    return [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(**c4_kwargs), FineWebQualityFilter()]


@functools.cache
def family_names() -> list[dict[str, str]]:
    """Per rule family, in chain order: datatrove's reason -> ours."""
    from stages.quality.stage import Quality

    return [{v: k for k, v in rs.datatrove_reasons().items()} for rs in Quality().rule_sets]


def run_chain(filters, text: str, i: int = 0) -> tuple[str | None, str]:
    """(first drop reason in refinery's naming or None, the document's text after the chain)."""
    from datatrove.data import Document

    doc = Document(text=text, id=str(i), metadata={})
    ours_of = family_names()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for names, filt in zip(ours_of, filters):
            res = filt.filter(doc)
            if res is not True:
                return names.get(res[1], res[1]) if isinstance(res, tuple) else "dropped", doc.text
    return None, doc.text


def stage_chain(quality, texts: list[str]) -> list[tuple[str | None, str]]:
    """The quality stage on a batch, as the runner calls it: (drop reason, output text) per document."""
    from pipeline.schema import make_record, records_to_table

    table = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=i, text=t) for i, t in enumerate(texts))
    out = quality.annotate(table)
    return list(zip(quality.decide(out), out.column("text").to_pylist()))


def same_reason(a: str | None, b: str | None) -> bool:
    """Equal first reasons; lorem ipsum and curly bracket may swap (see docs/quality.md)."""
    c4_doc = {"c4_lorem_ipsum", "c4_curly_bracket"}
    return a == b or (a in c4_doc and b in c4_doc)


def chain_agreement(docs, batch: int = 500) -> dict[str, collections.Counter]:
    """Per C4 setting: docs, datatrove keeps, keep/drop agreement, same reason, kept with identical
    text, kept documents whose text C4 changed, and keep/drop agreement of the measure-only stage."""
    from stages.quality.stage import Quality

    out = {}
    texts = [t for _, _, t in docs]
    for name, kw in C4_SETTINGS.items():
        filters = datatrove_chain(**kw)
        q = Quality(c4=kw)
        ours = [r for k in range(0, len(texts), batch) for r in stage_chain(q, texts[k : k + batch])]
        q_old = Quality(c4={**kw, "remove_lines": False})
        old = [r for k in range(0, len(texts), batch) for r in stage_chain(q_old, texts[k : k + batch])]
        s = collections.Counter()
        for i, (text, (our_reason, our_text), (old_reason, _)) in enumerate(zip(texts, ours, old)):
            dt_r, dt_text = run_chain(filters, text, i)
            s["old_keep_agree"] += (dt_r is None) == (old_reason is None)
            s["docs"] += 1
            s["dt_kept"] += dt_r is None
            s["keep_agree"] += (dt_r is None) == (our_reason is None)
            s["reason_agree"] += same_reason(dt_r, our_reason)
            if dt_r is None and our_reason is None:
                s["kept_both"] += 1
                s["same_text"] += dt_text == our_text
                s["changed"] += dt_text != text
        out[name] = s
    return out


def print_chain(docs) -> None:
    print("\n| C4 setting | docs | datatrove keeps | keep/drop agreement | same first reason | kept with identical text | kept docs C4 rewrote | keep/drop agreement, measure-only C4 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in chain_agreement(docs).items():
        n = s["docs"]
        print(f"| {name} | {n} | {s['dt_kept']} | {100 * s['keep_agree'] / n:.2f}% | {100 * s['reason_agree'] / n:.2f}% "
              f"| {s['same_text']}/{s['kept_both']} | {s['changed']} | {100 * s['old_keep_agree'] / n:.2f}% ({n - s['old_keep_agree']} differ) |")


def throughput(docs, repeat: int = 3, seed: int = 0, pipeline: bool = True):
    """CPU seconds of refinery's quality stage and of datatrove's 4 filters on documents the
    worker has never seen, alternating the two tools `repeat` times (medians reported).

    - cold: a fresh stage (empty chunk memo) over every document;
    - unseen, warm worker: a fresh stage first scores a random half A (not timed), then the other
      half B is timed: a worker in the middle of a run, on new documents;
    - datatrove: a fresh set of filters each time, on all documents and on B.
    No document is ever scored twice by the same stage, so no timing is of a memo hit on a
    document already seen.
    """
    import random

    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    from stages.quality.stage import Quality

    texts = [t for _, _, t in docs]
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    half_a = [texts[i] for i in sorted(order[: len(texts) // 2])]
    half_b = [texts[i] for i in sorted(order[len(texts) // 2 :])]

    def ours(warm_on, timed):
        q = Quality()
        q.ensure_setup()
        for t in warm_on:
            q.score_text(t, None)
        t0 = time.process_time()
        for t in timed:
            q.score_text(t, None)
        return time.process_time() - t0

    def theirs(timed, stop_at_first: bool = False):
        filters = [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter()]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            for i, t in enumerate(timed):
                if stop_at_first:  # a datatrove pipeline: C4 rewrites the document FineWeb sees
                    d = Document(text=t, id=str(i), metadata={})
                    for f in filters:
                        if f.filter(d) is not True:
                            break
                else:  # every filter on the original document (what computing every signal costs)
                    for f in filters:
                        f.filter(Document(text=t, id=str(i), metadata={}))
            return time.process_time() - t0

    runs = collections.defaultdict(list)
    for _ in range(repeat):
        runs["ours_cold"].append(ours([], texts))
        runs["dt_all"].append(theirs(texts))
        runs["ours_unseen"].append(ours(half_a, half_b))
        runs["dt_b"].append(theirs(half_b))
    if pipeline:
        runs["dt_pipeline"].append(theirs(texts, stop_at_first=True))
    med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    size = {"all": (len(texts), sum(len(t.encode()) for t in texts) / 1e6),
            "b": (len(half_b), sum(len(t.encode()) for t in half_b) / 1e6)}
    return med, runs, size


def print_throughput(docs, repeat: int, pipeline: bool = True) -> None:
    med, runs, size = throughput(docs, repeat, pipeline=pipeline)
    rows = [
        ("refinery quality, fresh worker (cold), all rules on every doc", "all", "ours_cold", "dt_all"),
        ("refinery quality, warm worker (after half A) on unseen half B", "b", "ours_unseen", "dt_b"),
        ("datatrove 4 filters, every filter on every doc", "all", "dt_all", "dt_all"),
        ("datatrove 4 filters, every filter on every doc (half B)", "b", "dt_b", "dt_b"),
        ("datatrove 4 filters as a pipeline (stop at first drop)", "all", "dt_pipeline", "dt_all"),
    ]
    print(f"\n| implementation | docs | CPU seconds (median of {repeat}; runs) | MB/s per core | docs/s per core "
          "| datatrove 4 filters / this, same docs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, part, key, ref in rows:
        if key not in med:
            continue
        n, mb = size[part]
        s = med[key]
        each = ", ".join(f"{x:.2f}" for x in runs[key])
        print(f"| {name} | {n} | {s:.2f} ({each}) | {mb / s:.3f} | {n / s:.0f} | {med[ref] / s:.1f}x |")
    pairs = [a / b for a, b in zip(runs["dt_all"], runs["ours_cold"])]
    pairs_b = [a / b for a, b in zip(runs["dt_b"], runs["ours_unseen"])]
    print(f"\nratio per alternated round, cold: {', '.join(f'{x:.1f}x' for x in pairs)}; "
          f"warm worker on unseen docs: {', '.join(f'{x:.1f}x' for x in pairs_b)}")


def word_identity(docs) -> tuple[int, int]:
    """Documents whose word list equals datatrove's split_into_words (English spaCy)."""
    from datatrove.utils.text import split_into_words

    from stages.quality.text_stats import DocStats
    from stages.quality.word_tokenizer import ChunkTokenizer

    tok = ChunkTokenizer()
    same = sum(DocStats(t, tok).words == split_into_words(t) for _, _, t in docs)
    return same, len(docs)


def language_report(docs):
    """Drop rate per lingua language: datatrove's English setting vs the language-aware default."""
    from stages.quality.stage import Quality

    q = Quality()
    rows = collections.defaultdict(lambda: [0, 0, 0, collections.Counter()])
    for src, lang, text in docs:
        if not src.startswith("lingua_"):
            continue
        r = rows[lang]
        r[0] += 1
        r[1] += bool(q.score_text(text, None)["quality_failed_rules"])
        failed = q.score_text(text, lang)["quality_failed_rules"]
        r[2] += bool(failed)
        r[3].update(failed.split(",")[:1] if failed else [])
    print("\n| lingua 10-sentence docs | docs | dropped, English rules (datatrove) | dropped, language-aware | main reason (language-aware) |")
    print("|---|---:|---:|---:|---|")
    for lang, (n, en, aware, reasons) in sorted(rows.items()):
        top = ", ".join(f"{k} {v}" for k, v in reasons.most_common(2))
        print(f"| {lang} | {n} | {en} | {aware} | {top} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=None, help="random sample of documents (default: all)")
    ap.add_argument("--no-trafilatura", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--show", type=int, default=1000, help="max disagreements listed per rule")
    ap.add_argument("--chain-only", action="store_true", help="only the 4-filter chain parity (about a minute)")
    ap.add_argument("--speed-only", action="store_true", help="chain parity and speed, not the per-rule tables")
    ap.add_argument("--repeat", type=int, default=3, help="alternated rounds of the speed comparison")
    ap.add_argument("--no-chain", action="store_true", help="skip the 4-filter chain parity")
    ap.add_argument("--no-pipeline", action="store_true", help="skip timing datatrove as a short-circuiting pipeline")
    args = ap.parse_args()

    from stages.quality.c4 import C4Config
    from stages.quality.stage import Quality

    docs = load_all(CORPORA, with_trafilatura=not args.no_trafilatura, sample=args.sample)
    by_src = collections.Counter(s.split("_")[0] if s.startswith("lingua") else s for s, _, _ in docs)
    print(f"{len(docs)} documents, {sum(len(t.encode()) for _, _, t in docs) / 1e6:.2f} MB: {dict(by_src)}")
    if not args.no_chain:
        print_chain(docs)
    if args.chain_only:
        return

    if not args.skip_speed:
        print_throughput(docs, args.repeat, pipeline=not args.no_pipeline)
        if args.speed_only:
            return

    same, n = word_identity(docs)
    print(f"\nword lists identical to datatrove's split_into_words: {same}/{n} documents")
    language_report(docs)

    q = Quality(c4=C4Config(remove_lines=False))  # each rule alone, on the original text
    rules, stats, dis = agreement(docs, q)
    print("\n| rule (reason) | docs compared | datatrove drops | refinery drops | agreement | undefined in datatrove |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = 1.0
    for reason, _, _ in rules:
        s = stats[reason]
        a = s["agree"] / s["n"] if s["n"] else 1.0
        worst = min(worst, a)
        print(f"| {reason} | {s['n']} | {s['dt_drop']} | {s['our_drop']} | {100 * a:.2f}% | {s['undefined']} |")
    print(f"\nlowest per-rule agreement: {100 * worst:.2f}%")

    full = full_filter_agreement(docs, q)
    print("\n| datatrove filter (defaults) | docs | keep/drop agreement | same first reason |")
    print("|---|---:|---:|---:|")
    for name, (n, k, r) in full.items():
        print(f"| {name} | {n} | {100 * k / n:.2f}% | {100 * r / n:.2f}% |")

    print("\nDisagreements (rule: source, doc index, datatrove drops?, refinery drops?, text start):")
    if not any(dis.values()):
        print("  none")
    for reason, items in dis.items():
        for src, i, d, o, head, ours in items[: args.show]:
            sig = {k: v for k, v in ours.items() if k.startswith(("rps_", "c4_", "fineweb_"))}
            print(f"  {reason}: {src} #{i} datatrove={'drop' if d else 'keep'} refinery={'drop' if o else 'keep'} | {head!r}")
            print(f"      signals: {sig}")


if __name__ == "__main__":
    main()
