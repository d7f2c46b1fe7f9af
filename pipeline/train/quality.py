"""Train a DCLM-style fastText quality classifier: `refinery train-quality POSITIVES NEGATIVES`.

POSITIVES and NEGATIVES are files or folders of documents: `.jsonl` (optionally `.gz`/`.zst`,
the `text` field), `.parquet` (the `text` column, e.g. a run's kept/ or rejects/ folder) or
plain text (one document per line). The model labels `__label__hq` / `__label__cc`, as DCLM's,
so the quality stage's `classifier:` section reads it unchanged.

`refinery train-quality --default` rebuilds the model shipped in the package
(stages/models/quality.ftz) from ../shared/corpora/quality, using only sets whose licence allows
shipping a model trained on them:
  positives  WikiText-2 validation (CC BY-SA 3.0, detokenised), the Project Gutenberg books (public
             domain), XQuAD's English Wikipedia paragraphs (CC BY-SA 4.0) and OpenStax's
             *Introduction to Python Programming* (CC BY 4.0);
  negatives  UCI SMS spam collection, spam and ham (CC BY 4.0), Davidson 2017 tweets (MIT) and
             Stormfront forum sentences (CC BY-SA 3.0).
Positives are cut into paragraph chunks; short negatives are joined into documents of the same
length distribution, so length alone separates nothing. Mentions, URLs, retweet marks and HTML
entities are removed from the negatives and WikiText's tokenisation is undone, so no corpus
artefact separates the classes either.

Every set is split by a seeded shuffle (same split on every run); fastText trains with thread=1 and
the seed (same model bytes), quantised to <= 5 MB. Held-out accuracy and ROC-AUC are printed per
source, and with --default also on sets never trained on: WikiText-2 test, the OpenStax books under
CC BY-NC-SA (evaluation only) and Paloma's 4chan threads (evaluation only).
"""
from __future__ import annotations

import argparse
import gzip
import html
import json
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from stages._fasttext import train_supervised
from stages.quality.classifier import HQ, LQ, preprocess, shipped_model_path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
MAX_BYTES = 5 * 1024 * 1024
FASTTEXT_PARAMS = dict(lr=0.1, epoch=5, dim=32, wordNgrams=2, minn=0, maxn=0, bucket=200_000, loss="softmax", minCount=2)
QUANTIZE = dict(qnorm=True, retrain=True, cutoff=100_000, thread=1, verbose=0)
CHUNK_CHARS = (300, 3000)  # positives are cut into chunks of this many characters


@dataclass(frozen=True)
class Doc:
    text: str
    hq: bool
    source: str


# -- reading user files --------------------------------------------------------------------------
def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    if path.name.endswith(".zst"):
        import io

        import zstandard

        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_texts(path: Path) -> Iterator[str]:
    """Documents of one file or folder (sorted, recursively). Raises ValueError naming a bad file."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise ValueError(f"{path}: no files")
        for f in files:
            yield from read_texts(f)
        return
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    name = path.name
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(columns=["text"]):
            yield from (t for t in batch.column(0).to_pylist() if t)
        return
    with _open_text(path) as fh:
        if ".jsonl" in name or ".json" in name:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line).get("text")
                except (json.JSONDecodeError, AttributeError):
                    raise ValueError(f"{path}:{n}: not a JSON object with a `text` field") from None
                if isinstance(text, str) and text.strip():
                    yield text
        else:
            yield from (line.rstrip("\n") for line in fh if line.strip())


# -- the shipped model's data --------------------------------------------------------------------
_WT_FIX = [(" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."), (" <unk>", ""), ("<unk> ", "")]
_SPACE_BEFORE = re.compile(r" ([,.;:!?)\]'%])")
_SPACE_AFTER = re.compile(r"([(\[$]) ")
_QUOTES = re.compile(r'" ([^"]*?) "')
_NOISE = re.compile(r"(?:\bRT\b:?|@\w+:?|https?://\S+|www\.\S+|&#?\w+;)")


def detokenize_wikitext(line: str) -> str:
    for a, b in _WT_FIX:
        line = line.replace(a, b)
    line = _SPACE_BEFORE.sub(r"\1", line)
    line = _SPACE_AFTER.sub(r"\1", line)
    line = _QUOTES.sub(r'"\1"', line)
    return line.replace(" n't", "n't").replace(" 's", "'s").strip()


def wikitext_articles(path: Path) -> list[str]:
    """WikiText paragraphs (headings dropped), detokenised."""
    out = []
    for para in path.read_text(encoding="utf-8").split("\n"):
        if len(para) > 80 and not para.strip().startswith("="):
            out.append(detokenize_wikitext(para))
    return out


def clean_social(text: str) -> str:
    return " ".join(_NOISE.sub(" ", html.unescape(text)).split())


def chunks(text: str, rng: random.Random) -> Iterator[str]:
    """Paragraph-aligned chunks of CHUNK_CHARS characters (a random target per chunk)."""
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    paras = [p for p in paras if p]
    cur: list[str] = []
    size, target = 0, rng.randint(*CHUNK_CHARS)
    for p in paras:
        cur.append(p)
        size += len(p)
        if size >= target:
            yield "\n".join(cur)
            cur, size, target = [], 0, rng.randint(*CHUNK_CHARS)
    if size >= CHUNK_CHARS[0]:
        yield "\n".join(cur)


def join_short(texts: Sequence[str], rng: random.Random) -> Iterator[str]:
    """Short messages joined one per line into documents of CHUNK_CHARS characters."""
    cur: list[str] = []
    size, target = 0, rng.randint(*CHUNK_CHARS)
    for t in texts:
        cur.append(t)
        size += len(t) + 1
        if size >= target:
            yield "\n".join(cur)
            cur, size, target = [], 0, rng.randint(*CHUNK_CHARS)


def _jsonl_zst(path: Path) -> list[dict]:
    with _open_text(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def default_sets(corpora: Path, seed: int) -> tuple[list[Doc], list[Doc]]:
    """(training pool, evaluation-only documents) for the shipped model."""
    import csv

    q, tox = corpora / "quality", corpora / "toxicity"
    rng = random.Random(seed)
    pool: list[Doc] = []
    wiki = wikitext_articles(q / "wikitext2_valid.tokens.txt")
    pool += [Doc(c, True, "wikitext2-valid") for c in chunks("\n\n".join(wiki), rng)]
    for book in _jsonl_zst(q / "gutenberg_books" / "gutenberg_books.jsonl.zst"):
        pool += [Doc(c, True, "gutenberg") for c in chunks(book["text"], rng)]
    xquad = [r["text"] for r in _jsonl_zst(q / "xquad_wikipedia" / "xquad_paragraphs.jsonl.zst") if r["lang"] == "en"]
    pool += [Doc(c, True, "xquad-en") for c in chunks("\n\n".join(xquad), rng)]
    openstax = _jsonl_zst(q / "openstax_textbooks" / "openstax_textbooks.jsonl.zst")
    for r in openstax:
        if r["licence"] == "CC BY 4.0":
            pool += [Doc(c, True, "openstax-python") for c in chunks(r["text"], rng)]
    csv.field_size_limit(sys.maxsize)
    with open(q / "uci_sms_spam_collection.tsv", encoding="utf-8") as f:
        sms = [clean_social(r["SMS"]) for r in csv.DictReader(f, delimiter="\t")]
    with open(tox / "davidson2017_labeled_data.csv", newline="", encoding="utf-8") as f:
        tweets = [clean_social(r["tweet"]) for r in csv.DictReader(f)]
    with open(tox / "vicomtech_stormfront_hate.tsv", newline="", encoding="utf-8") as f:
        forum = [clean_social(r["text"]) for r in csv.DictReader(f, delimiter="\t")]
    for name, texts in (("sms", sms), ("davidson-tweets", tweets), ("stormfront", forum)):
        texts = [t for t in texts if t]
        rng.shuffle(texts)
        pool += [Doc(d, False, name) for d in join_short(texts, rng)]

    evaluation: list[Doc] = []
    wiki_test = wikitext_articles(q / "wikitext2_test.tokens.txt")
    evaluation += [Doc(c, True, "wikitext2-test (never trained on)") for c in chunks("\n\n".join(wiki_test), rng)]
    for r in openstax:
        if r["licence"] != "CC BY 4.0":
            evaluation += [Doc(c, True, "openstax NC books (eval only)") for c in chunks(r["text"], rng)]
    with _open_text(q / "paloma_4chan_val.jsonl.gz") as fh:
        for line in fh:
            evaluation += [Doc(c, False, "4chan (eval only)") for c in chunks(json.loads(line)["text"].replace("\n", "\n\n"), rng)]
    return pool, evaluation


# -- split, train, evaluate ----------------------------------------------------------------------
def split(docs: Sequence[Doc], seed: int, test_fraction: float) -> tuple[list[Doc], list[Doc]]:
    """Stratified by (source, label) with a seeded shuffle."""
    groups: dict[tuple[str, bool], list[Doc]] = {}
    for d in docs:
        groups.setdefault((d.source, d.hq), []).append(d)
    rng = random.Random(seed)
    train: list[Doc] = []
    test: list[Doc] = []
    for key in sorted(groups):
        items = list(groups[key])
        rng.shuffle(items)
        k = max(1, round(len(items) * test_fraction)) if len(items) > 1 else 0
        test += items[:k]
        train += items[k:]
    rng.shuffle(train)
    return train, test


def balance(docs: Sequence[Doc], seed: int) -> list[Doc]:
    """Cap the larger class at the smaller one's size (seeded), so the prior is 1:1."""
    pos = [d for d in docs if d.hq]
    neg = [d for d in docs if not d.hq]
    rng = random.Random(seed)
    n = min(len(pos), len(neg))
    if len(pos) > n:
        pos = rng.sample(pos, n)
    if len(neg) > n:
        neg = rng.sample(neg, n)
    out = pos + neg
    rng.shuffle(out)
    return out


def train(docs: Iterable[Doc], out: Path, seed: int):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        with open(path, "w", encoding="utf-8") as f:
            for d in docs:
                line = preprocess(d.text)
                if line:
                    f.write(f"{HQ if d.hq else LQ} {line}\n")
        model = train_supervised(input=str(path), thread=1, seed=seed, verbose=0, quantize=QUANTIZE, **FASTTEXT_PARAMS)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save_model(str(out))
    return model


def metrics(labels: Sequence[bool], scores: Sequence[float]) -> dict[str, float]:
    from pipeline.train.toxicity import roc_auc

    acc = sum((s >= 0.5) == y for s, y in zip(scores, labels)) / len(labels) if labels else float("nan")
    return {"n": len(labels), "accuracy": acc, "roc_auc": roc_auc(labels, scores)}


def evaluate(docs: Sequence[Doc], model_path: Path) -> list[tuple[str, dict[str, float]]]:
    from stages.quality.classifier import QualityClassifier, QualityClassifierConfig

    clf = QualityClassifier(QualityClassifierConfig(model_path=str(model_path)))
    scores = clf.scores([d.text for d in docs])
    groups: dict[str, list[int]] = {"all": list(range(len(docs)))}
    for i, d in enumerate(docs):
        groups.setdefault(d.source, []).append(i)
    rows = []
    for name, idx in groups.items():
        labels = [docs[i].hq for i in idx]
        m = metrics(labels, [scores[i] for i in idx])
        m["mean_score"] = sum(scores[i] for i in idx) / len(idx)
        rows.append((name, m))
    return rows


def _table(title: str, rows: list[tuple[str, dict[str, float]]]) -> str:
    out = [f"| {title} | n | accuracy (P >= 0.5) | ROC-AUC | mean score |", "|---|---:|---:|---:|---:|"]
    for name, m in rows:
        auc = "-" if m["roc_auc"] != m["roc_auc"] else f"{m['roc_auc']:.3f}"
        out.append(f"| {name} | {m['n']} | {m['accuracy']:.3f} | {auc} | {m['mean_score']:.3f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="refinery train-quality", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("positives", nargs="?", type=Path, help="file or folder of high-quality documents")
    ap.add_argument("negatives", nargs="?", type=Path, help="file or folder of low-quality documents")
    ap.add_argument("--default", action="store_true", help="rebuild the shipped model from --corpora")
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--out", type=Path, help="model file (default: quality.ftz; with --default the shipped model)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--test-fraction", type=float, default=0.2)
    args = ap.parse_args(argv)
    if args.default == (args.positives is not None):
        ap.print_usage(sys.stderr)
        print("refinery train-quality: error: give POSITIVES and NEGATIVES, or --default", file=sys.stderr)
        return 2
    if not 0 < args.test_fraction < 1:
        print("refinery train-quality: error: --test-fraction must be between 0 and 1", file=sys.stderr)
        return 2
    extra: list[Doc] = []
    try:
        if args.default:
            pool, extra = default_sets(args.corpora, args.seed)
            out = args.out or shipped_model_path()
        else:
            if args.negatives is None:
                print("refinery train-quality: error: NEGATIVES missing", file=sys.stderr)
                return 2
            pool = [Doc(t, True, "positives") for t in read_texts(args.positives)]
            pool += [Doc(t, False, "negatives") for t in read_texts(args.negatives)]
            out = args.out or Path("quality.ftz")
    except (ValueError, OSError) as exc:
        print(f"refinery train-quality: error: {exc}", file=sys.stderr)
        return 2
    train_set, test_set = split(pool, args.seed, args.test_fraction)
    train_set = balance(train_set, args.seed)
    if not any(d.hq for d in train_set) or all(d.hq for d in train_set):
        print("refinery train-quality: error: need documents of both classes", file=sys.stderr)
        return 2
    print(f"train {len(train_set)} documents ({sum(d.hq for d in train_set)} positive), held out {len(test_set)}")
    train(train_set, out, args.seed)
    size = out.stat().st_size
    print(f"model: {out} ({size / 1e6:.2f} MB), seed {args.seed}")
    if size > MAX_BYTES:
        print(f"refinery train-quality: error: model is larger than {MAX_BYTES} bytes", file=sys.stderr)
        return 1
    print(_table("held-out set", evaluate(test_set, out)))
    if extra:
        print()
        print(_table("never trained on", evaluate(extra, out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
