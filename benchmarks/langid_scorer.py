"""The langid stage's scorer (stages/_fasttext_lid.py) against fastText's predict: parity and speed.

Parity, on every language-ID text in ../shared (lingua sentences and 10-sentence documents, both
halves; xquad + jaquad paragraphs; HPLT web pages) and on crawl text (`--jsonl DIR`: JSON lines with
`text`, e.g. the peers benchmark's input; `--crawl RUN`: a finished run's kept/ and rejects/langid/,
the texts langid saw), all cut as the stage cuts them (3,000 characters, one line): fastText's top-5
labels and probabilities against the scorer's, and the stage's columns and decisions (no allowed
list; `languages: [en]`) with the scorer against the same stage scoring with fastText.

Speed, on the crawl sets: CPU time per document, one process, batches of 1,000 documents, a fresh
stage (cold memo) per round, the two alternating: the stage (annotate + decide) with the scorer and
with fastText, and the scorer's predict against fastText's predict alone.

    PYTHONPATH=. python benchmarks/langid_scorer.py --jsonl /tmp/refinery-bench/jsonl56 --crawl RUN --rounds 3
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages._fasttext import load_model, one_line  # noqa: E402
from stages._fasttext_lid import FastTextLID  # noqa: E402
from stages.langid import LangID, bundled_model_path  # noqa: E402

BATCH = 1000


def real_lines(corpora: Path) -> dict[str, list[str]]:
    """Every language-ID text in ../shared, as the stage cuts it (3,000 characters, one line)."""
    import zstandard

    def zst(path):
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return [json.loads(l) for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace") if l.strip()]

    sents, docs = [], []
    for p in sorted((corpora / "langid" / "lingua_sentences").glob("*.txt")):
        s = [l.strip() for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]
        sents += s
        docs += ["\n".join(s[i: i + 10]) for i in range(0, len(s) - 9, 10)]
    q = corpora / "quality"
    paras = [r["text"] for r in zst(q / "xquad_wikipedia" / "xquad_paragraphs.jsonl.zst")]
    paras += [r["text"] for r in zst(q / "jaquad_wikipedia" / "jaquad_contexts.jsonl.zst")[:2000]]
    web = [r["t"] for n in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst")
           for r in zst(corpora / "web" / n) if r.get("t")]
    return {"lingua sentences": cut(sents), "lingua documents": cut(docs), "xquad + jaquad": cut(paras),
            "hplt web": cut(web)}


def cut(texts: list[str]) -> list[str]:
    return [x for x in (one_line(t, 3000) for t in texts if t) if x]


def jsonl_texts(folder: Path) -> list[str]:
    out = []
    for p in sorted(folder.glob("*.jsonl")):
        with open(p, encoding="utf-8") as f:
            out += [t for t in (json.loads(l).get("text") for l in f if l.strip()) if t]
    return out


def crawl_texts(run: Path) -> list[str]:
    import pyarrow.parquet as pq

    files = sorted((run / "kept").glob("*.parquet")) + sorted((run / "rejects" / "langid").glob("*.parquet"))
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist() if t]


def table(texts: list[str]):
    from pipeline.schema import make_record, records_to_table

    return records_to_table(make_record(source="bench", kind="jsonl", file="x", offset=i, text=t)
                            for i, t in enumerate(texts))


def parity(name: str, lines: list[str], model, texts: list[str] | None = None) -> None:
    scorer = FastTextLID(model, bundled_model_path())
    labels = mism = 0
    worst = 0.0
    for s in range(0, len(lines), BATCH):
        chunk = lines[s: s + BATCH]
        a_l, a_p = model.predict(chunk, k=5)
        b_l, b_p = scorer.predict(chunk, k=5)
        for x, y, px, py in zip(a_l, b_l, a_p, b_p):
            labels += 1
            if list(x) != list(y):
                mism += 1
            elif len(x):
                worst = max(worst, float(np.abs(np.asarray(px, float) - np.asarray(py, float)).max()))
    row = f"| {name} | {len(lines):,} | {mism} | {worst:.1e} | {scorer.fallbacks / max(1, len(lines)):.2%} |"
    if texts is not None:  # the stage's columns and decisions, scorer against fastText
        tab = table(texts)
        changed = {}
        for cfg_name, cfg in (("no list", {}), ("[en]", {"languages": ["en"]})):
            ours, theirs = LangID(**cfg), LangID(**cfg)
            theirs.ensure_setup()
            theirs.scorer = theirs.model
            outs = []
            for stage in (ours, theirs):
                cols, dec = {c: [] for c in ("lang", "lang_score", "lang_group_score", "lang_cld2")}, []
                for s in range(0, tab.num_rows, BATCH):
                    t = stage.annotate(tab.slice(s, BATCH))
                    for c in cols:
                        cols[c] += t.column(c).to_pylist()
                    dec += stage.decide(t)
                outs.append((cols, dec))
            (ca, da), (cb, db) = outs
            changed[cfg_name] = sum(x != y for x, y in zip(da, db))
            if cfg_name == "no list":
                lang = sum(x != y for x, y in zip(ca["lang"], cb["lang"]) )
                cld = sum(x != y for x, y in zip(ca["lang_cld2"], cb["lang_cld2"]))
                sa, sb = np.array(ca["lang_score"], float), np.array(cb["lang_score"], float)
                f32 = int((sa != sb).sum())
                ga, gb = (np.array([np.nan if v is None else v for v in c["lang_group_score"]], float) for c in (ca, cb))
                gmax = float(np.nanmax(np.abs(ga - gb))) if np.isfinite(ga).any() else 0.0
                smax = float(np.abs(sa - sb).max())
        row += (f" {lang} | {f32} ({smax:.1e}) | {gmax:.1e} | {cld} | {changed['no list']} | {changed['[en]']} |")
    else:
        row += " | | | | | |"
    print(row, flush=True)


def speed(name: str, texts: list[str], model, rounds: int) -> None:
    tab = table(texts)
    lines = cut(texts)
    t = {"stage, scorer": [], "stage, fastText": [], "scorer predict": [], "fastText predict": []}
    for _ in range(rounds):  # alternating; a fresh stage and scorer (cold memo) each round
        for key in t:
            if key.startswith("stage"):
                st = LangID()
                st.ensure_setup()
                if key.endswith("fastText"):
                    st.scorer = st.model
                t0 = time.process_time()
                for s in range(0, tab.num_rows, BATCH):
                    b = tab.slice(s, BATCH)
                    st.decide(st.annotate(b))
            else:
                sc = FastTextLID(model, bundled_model_path()) if key.startswith("scorer") else model
                t0 = time.process_time()
                for s in range(0, len(lines), BATCH):
                    sc.predict(lines[s: s + BATCH], k=5)
            t[key].append(time.process_time() - t0)
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"\nspeed on {name}: {len(texts):,} documents, median of {rounds} alternating rounds, CPU time, 1 process")
    print("| what | µs per document | fastText ÷ scorer |\n|---|---:|---:|")
    for k in t:
        base = med["stage, fastText"] if k.startswith("stage") else med["fastText predict"]
        print(f"| {k} | {1e6 * med[k] / len(texts):.0f} | {base / med[k]:.2f} |")
    print(f"per round (s): " + "; ".join(f"{k} " + ", ".join(f"{x:.2f}" for x in v) for k, v in t.items()))
    t0 = time.process_time()
    for _ in range(3):
        FastTextLID(model, bundled_model_path())
    print(f"scorer set-up: {(time.process_time() - t0) / 3 * 1000:.0f} ms CPU")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--jsonl", type=Path, action="append", default=[])
    ap.add_argument("--crawl", type=Path, action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-parity", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args(argv)
    model = load_model(bundled_model_path())
    crawl = [(f"jsonl {p.name}", jsonl_texts(p)) for p in args.jsonl]
    crawl += [(f"run {p.name}", crawl_texts(p)) for p in args.crawl]
    if not args.no_parity:
        print("| set | lines | top-5 label lists differing | max probability diff | lines left to fastText "
              "| stage: `lang` differing | `lang_score` float32 differing (max diff) | `lang_group_score` max diff "
              "| `lang_cld2` differing | decisions differing, no list | decisions differing, [en] |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        if args.corpora.is_dir():
            sets = real_lines(args.corpora)
            for name, lines in sets.items():
                parity(name, lines, model, lines if name != "lingua sentences" else None)
        for name, texts in crawl:
            parity(name, cut(texts), model, texts)
    if not args.no_speed:
        for name, texts in crawl:
            speed(name, texts, model, args.rounds)


if __name__ == "__main__":
    main()
