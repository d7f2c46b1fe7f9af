"""Train the toxicity model: `python -m pipeline.train.toxicity [--corpora DIR] [--out PATH] [--seed N]`.

Data (../shared/corpora/toxicity), labels mapped to toxic / clean:
  * Davidson 2017 tweets: class 0 (hate) and 1 (offensive) -> toxic, 2 (neither) -> clean;
  * Vicomtech Stormfront sentences: hate -> toxic, noHate -> clean (relation, idk/skip dropped);
  * Jigsaw sample (101 comments): toxic column. Too small to train on, so it is held out whole as
    an out-of-domain check;
  * background: sentences of WikiText-2 *validation* (../shared/corpora/quality) as clean. Tweets
    and forum posts alone teach the model that ordinary prose is suspicious (without them, up to 28%
    of Wikipedia sentences scored toxic); WikiText-2 *test* sentences and the lingua English
    sentences are then used only to measure the false-positive rate on clean prose.
Davidson and Stormfront are split per source and label (stratified), `--test-fraction` held out,
by a seeded shuffle, so the split is the same on every run. fastText is trained with thread=1 and
the seed (deterministic), quantised to <= 5 MB and written to stages/models/toxicity.ftz.
Held-out precision, recall, F1 (at P >= 0.5) and ROC-AUC are printed for our model and for
alt-profanity-check (`profanity_check.predict_prob`) on the same texts, per source and overall.
"""
from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from stages._fasttext import train_supervised
from stages.toxicity import CLEAN, TOXIC, preprocess

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
DEFAULT_OUT = Path(__file__).resolve().parent / "models" / "toxicity.ftz"
MAX_BYTES = 5 * 1024 * 1024

# fastText settings: word bigrams and character n-grams (misspelt slurs), small dim for size.
# lr 0.1 / 5 epochs: higher rates made the model overconfident on prose (docs/filters.md).
FASTTEXT_PARAMS = dict(lr=0.1, epoch=5, dim=32, wordNgrams=2, minn=3, maxn=5, bucket=200_000, loss="softmax")


@dataclass(frozen=True)
class Example:
    text: str
    toxic: bool
    source: str


def load_examples(corpora: Path) -> list[Example]:
    folder = corpora / "toxicity"
    csv.field_size_limit(sys.maxsize)
    out: list[Example] = []
    with open(folder / "davidson2017_labeled_data.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            out.append(Example(r["tweet"], r["class"] in ("0", "1"), "davidson"))
    with open(folder / "vicomtech_stormfront_hate.tsv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["label"] in ("hate", "noHate"):
                out.append(Example(r["text"], r["label"] == "hate", "stormfront"))
    with open(folder / "jigsaw_test_examples_101.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            out.append(Example(r["comment_text"], r["toxic"] == "1", "jigsaw"))
    return out


def load_background(path: Path, limit: int | None = None) -> list[str]:
    """Sentences of WikiText-2 paragraphs (headings and short lines skipped): clean prose."""
    from stages.toxicity import split_spans

    out = []
    for para in path.read_text(encoding="utf-8").split("\n"):
        if len(para) > 100 and not para.strip().startswith("="):
            out.extend(s for s in split_spans(para, "sentence") if len(s) > 20)
    return out[:limit]


def limit_per_source(examples: Sequence[Example], limit: int, seed: int) -> list[Example]:
    """A seeded random subset of at most `limit` examples from each source."""
    shuffled = list(examples)
    random.Random(seed).shuffle(shuffled)
    counts: dict[str, int] = {}
    out = []
    for e in shuffled:
        if counts.get(e.source, 0) < limit:
            counts[e.source] = counts.get(e.source, 0) + 1
            out.append(e)
    return out


def split(examples: Sequence[Example], seed: int, test_fraction: float) -> tuple[list[Example], list[Example]]:
    """Stratified by (source, label); Jigsaw entirely held out."""
    groups: dict[tuple[str, bool], list[Example]] = {}
    for e in examples:
        groups.setdefault((e.source, e.toxic), []).append(e)
    rng = random.Random(seed)
    train: list[Example] = []
    test: list[Example] = []
    for key in sorted(groups):
        items = list(groups[key])
        if key[0] == "jigsaw":
            test.extend(items)
            continue
        rng.shuffle(items)
        k = round(len(items) * test_fraction)
        test.extend(items[:k])
        train.extend(items[k:])
    rng.shuffle(train)
    return train, test


def write_fasttext_file(examples: Sequence[Example], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for e in examples:
            line = preprocess(e.text)
            if line:
                f.write(f"{TOXIC if e.toxic else CLEAN} {line}\n")


def train(train_set: Sequence[Example], out: Path, seed: int, quantize: bool = True):
    """Train, quantise, save to `out`; returns the (quantised) model."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        write_fasttext_file(train_set, path)
        model = train_supervised(
            input=str(path), thread=1, seed=seed, verbose=0, **FASTTEXT_PARAMS,
            quantize=dict(qnorm=True, retrain=True, cutoff=50_000, thread=1, verbose=0) if quantize else None,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save_model(str(out))
    return model


# -- metrics ---------------------------------------------------------------------------------
def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float:
    """Mann-Whitney U: probability a random toxic example outscores a random clean one (ties 1/2)."""
    pairs = sorted(zip(scores, labels))
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return float("nan")
    rank_sum = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        avg_rank = (i + j + 1) / 2  # 1-based average rank of the tie group
        rank_sum += avg_rank * sum(1 for _, y in pairs[i:j] if y)
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def prf(labels: Sequence[bool], scores: Sequence[float], threshold: float = 0.5) -> dict[str, float]:
    pred = [s >= threshold for s in scores]
    tp = sum(1 for p, y in zip(pred, labels) if p and y)
    fp = sum(1 for p, y in zip(pred, labels) if p and not y)
    fn = sum(1 for p, y in zip(pred, labels) if not p and y)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "roc_auc": roc_auc(labels, scores)}


def scorers(model_path: Path) -> dict[str, Callable[[list[str]], list[float]]]:
    """Our model and, when installed, alt-profanity-check, each text -> P(toxic)."""
    from stages.toxicity import Toxicity

    ours = Toxicity(model_path=str(model_path), granularity="document")
    out: dict[str, Callable[[list[str]], list[float]]] = {"refinery fastText": ours.score_texts}
    try:
        from profanity_check import predict_prob

        out["alt-profanity-check"] = lambda texts: [float(p) for p in predict_prob(texts)]
    except ImportError:
        pass
    return out


def evaluate(test: Sequence[Example], model_path: Path) -> list[tuple[str, str, int, dict[str, float]]]:
    rows = []
    by_source = {"all held-out": list(test)}
    for e in test:
        by_source.setdefault(e.source, []).append(e)
    for name, score in scorers(model_path).items():
        for subset, items in by_source.items():
            labels = [e.toxic for e in items]
            rows.append((subset, name, len(items), prf(labels, score([e.text for e in items]))))
    return sorted(rows, key=lambda r: (r[0] != "all held-out", r[0], r[1]))


def clean_prose(corpora: Path) -> dict[str, list[str]]:
    """Clean text never trained on, for false-positive rates."""
    return {
        "WikiText-2 test sentences": load_background(corpora / "quality" / "wikitext2_test.tokens.txt"),
        "lingua English sentences": (corpora / "langid" / "lingua_sentences" / "en.txt")
        .read_text(encoding="utf-8")
        .splitlines(),
    }


def false_positive_rates(corpora: Path, model_path: Path) -> list[tuple[str, str, int, float]]:
    rows = []
    for name, score in scorers(model_path).items():
        for subset, texts in clean_prose(corpora).items():
            rows.append((subset, name, len(texts), sum(p >= 0.5 for p in score(texts)) / len(texts)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.train.toxicity", description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--test-fraction", type=float, default=0.2)
    ap.add_argument("--limit", type=int, default=None, help="at most this many examples per source (quick runs)")
    args = ap.parse_args(argv)

    examples = load_examples(args.corpora)
    if args.limit:
        examples = limit_per_source(examples, args.limit, args.seed)
    train_set, test_set = split(examples, args.seed, args.test_fraction)
    background = load_background(args.corpora / "quality" / "wikitext2_valid.tokens.txt", args.limit)
    train_set += [Example(t, False, "wikitext") for t in background]
    random.Random(args.seed).shuffle(train_set)
    n_tox = sum(e.toxic for e in train_set)
    print(f"train {len(train_set)} ({n_tox} toxic, {len(background)} WikiText background), held-out {len(test_set)} ({sum(e.toxic for e in test_set)} toxic)")
    train(train_set, args.out, args.seed)
    size = args.out.stat().st_size
    print(f"model: {args.out} ({size / 1e6:.2f} MB)")
    if size > MAX_BYTES:
        print(f"error: model is larger than {MAX_BYTES} bytes", file=sys.stderr)
        return 1
    print("| held-out set | model | n | precision | recall | F1 | ROC-AUC |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for subset, name, n, m in evaluate(test_set, args.out):
        print(f"| {subset} | {name} | {n} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['roc_auc']:.3f} |")
    print()
    print("| clean prose (never trained on) | model | n | scored toxic (P >= 0.5) |")
    print("|---|---|---:|---:|")
    for subset, name, n, rate in false_positive_rates(args.corpora, args.out):
        print(f"| {subset} | {name} | {n} | {rate:.2%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
