"""Clean prose documents the toxicity stage rejects: books, encyclopedia articles, textbooks (held out).

    PYTHONPATH=. python benchmarks/toxicity_prose.py [--arxiv]

Documents never trained on: the even-numbered Gutenberg books cut into documents of 20 paragraphs,
WikiText-2 test articles, XQuAD paragraphs of articles 24-47 in every language it has (the model was
trained on articles 0-23), lingua's sentences 500-999 (0-499 are
trained on) as 5-sentence documents for de, fr, pl, pt, da, ko, the OpenStax textbook sections of the test half (NC: evaluation only). Each
is one document with its language; the share rejected per set, for the stage's defaults (judged
languages only), the model in every language it has, and C4's LDNOOBW rule (any listed word).
`--arxiv`: the real arXiv papers of ../shared/corpora/arxiv as the arxiv source reads them, scored
with arXiv opted in (`skip_kinds: []`, the model in English): each paper's largest paragraph score.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]


def documents(corpora: Path) -> dict[tuple[str, str], list[str]]:
    from pipeline.train.toxicity import _half, _zst_text, gutenberg_books, lingua_sentences, xquad_paragraphs

    sets: dict[tuple[str, str], list[str]] = {}
    books = [b for i, b in enumerate(gutenberg_books(corpora)) if i % 2 == 0]
    sets[("en", "Gutenberg even books, 20-paragraph documents")] = [
        "\n".join(paras[i:i + 20]) for b in books for paras in [[p for p in b.split("\n\n") if p.strip()]]
        for i in range(0, len(paras), 20)]
    articles, cur = [], []
    for line in (corpora / "quality" / "wikitext2_test.tokens.txt").read_text(encoding="utf-8").split("\n"):
        if line.startswith(" = ") and not line.startswith(" = = "):
            if cur:
                articles.append("\n".join(cur))
            cur = []
        elif line.strip() and not line.strip().startswith("="):
            cur.append(line.strip())
    articles.append("\n".join(cur))
    sets[("en", "WikiText-2 test articles")] = [a for a in articles if a.strip()]
    for r in xquad_paragraphs(corpora):
        if r["article"] >= 24:
            sets.setdefault((r["lang"], "XQuAD paragraphs, articles 24-47"), []).append(r["text"])
    for lang in ("de", "fr", "pl", "pt", "da", "ko"):  # languages without held-out encyclopedia text above
        sents = lingua_sentences(corpora, lang)[500:]  # 0-499 are training prose
        sets[(lang, "lingua sentences 500-999, 5-sentence documents")] = [
            " ".join(sents[i:i + 5]) for i in range(0, len(sents), 5)]
    with _zst_text(corpora / "quality" / "openstax_textbooks" / "openstax_textbooks.jsonl.zst") as f:
        sets[("en", "OpenStax sections, test half (NC)")] = [
            r["text"] for r in map(json.loads, filter(str.strip, f)) if _half(r["module"], 0) == "test"]
    return sets


def arxiv(corpora: Path) -> None:
    from pipeline.schema import make_record, records_to_table
    from pipeline.sources.base import source_kinds
    from stages.toxicity import Toxicity

    cls = source_kinds()["arxiv"]
    src = cls("arxiv", cls.Config(kind="arxiv", paths=[str(corpora / "arxiv" / "*")]))
    rows = [r for url, id_path in src.files() for b in src.read(url, id_path) for r in b.to_pylist()
            if r["drop_reason"] is None]
    st = Toxicity(skip_kinds=[], languages=["en"])
    t = records_to_table(make_record(source="a", kind="arxiv", file=r["file"], offset=0, text=r["text"]) for r in rows)
    ann = st.annotate(t.append_column("lang", pa.array(["en"] * len(rows), pa.string())))
    dec = st.decide(ann)
    print("| arXiv paper (opted in) | characters | largest paragraph score | decision |")
    print("|---|---:|---:|---|")
    for r, s, d in zip(rows, ann.column("toxicity_score").to_pylist(), dec):
        print(f"| {r['file'].rsplit('/', 1)[-1]} | {len(r['text']):,} | {s:.3f} | {d or 'kept'} |")
    print(f"rejected: {sum(d is not None for d in dec)} of {len(rows)}")


def main(argv: list[str] | None = None) -> None:
    from pipeline.schema import make_record, records_to_table
    from stages.toxicity import MODEL_LANGUAGES, Toxicity

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--arxiv", action="store_true", help="only the arXiv papers, opted in")
    args = ap.parse_args(argv)
    if args.arxiv:
        return arxiv(args.corpora)
    tools = {"defaults": Toxicity(), "every model language": Toxicity(languages=sorted(MODEL_LANGUAGES)),
             "LDNOOBW, any word (C4)": Toxicity(max_score=None, word_list="ldnoobw", max_toxic_words=1)}
    print("| lang | clean documents | n | " + " | ".join(f"{t}: rejected (scored)" for t in tools) + " |")
    print("|---|---|---:|" + "---:|" * len(tools))
    total = {t: [0, 0] for t in tools}
    for (lang, name), docs in sorted(documents(args.corpora).items()):
        t = records_to_table(make_record(source="p", kind="jsonl", file="f", offset=i, text=d) for i, d in enumerate(docs))
        t = t.append_column("lang", pa.array([lang] * len(docs), pa.string()))
        cells = []
        for tname, st in tools.items():
            ann = st.annotate(t)
            rej = sum(r is not None for r in st.decide(ann))
            scored = sum(s is not None for s in ann.column("toxicity_score").to_pylist())
            total[tname][0] += rej
            total[tname][1] += len(docs)
            cells.append(f"{rej / len(docs):.2%} ({scored})")
        print(f"| {lang} | {name} | {len(docs)} | " + " | ".join(cells) + " |")
    print("| all | | " + str(next(iter(total.values()))[1]) + " | "
          + " | ".join(f"{r / n:.2%}" for r, n in total.values()) + " |")


if __name__ == "__main__":
    main()
