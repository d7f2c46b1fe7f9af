"""The shipped toxicity model against plain fastText baselines: what the baselines gain on sets about groups, and what it costs in fairness.

Plain fastText (fastText's defaults on the raw text, trained on exactly the shipped model's training
lines) leads the shipped model in ROC-AUC on Stormfront and GAHD, two sets of hate against groups.
This measures why, in one run:
- held-out F1 (P >= 0.5) and ROC-AUC per set for the shipped model, plain fastText, plain fastText
  with the names of groups dropped (stages/data/identity_terms.txt, as the shipped model is trained
  and scored), the shipped recipe retrained with the names kept as features (`--names-kept`, the
  trainer's `--keep-identity-terms`), and alt-profanity-check;
- the same tools on sentences that name a group without hate: the dev frames
  (pipeline/train/identity_examples.py) and the identity test's neutral and positive sentences
  (tests/identity_templates.py; the stage's goal: at most 2% rejected per group at the stage's rule), share
  at P >= 0.5 and at the rule's threshold, per language with the worst group.
alt-profanity-check was trained on Davidson and on Jigsaw's Wikipedia talk comments (its package
metadata): on davidson, jigsaw101 and wikipedia_talk it is not held out, marked "in its training".

    PYTHONPATH=. python benchmarks/toxicity_baselines.py [--names-kept] [--corpora ../shared/corpora]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pipeline.train import identity_examples  # noqa: E402
from pipeline.train import toxicity as T  # noqa: E402
from stages._fasttext import one_line  # noqa: E402
from stages.toxicity import IDENTITY_TERMS, Toxicity  # noqa: E402

APC_TRAINING = {"davidson", "jigsaw101", "wikipedia_talk"}
_PUNCT = ".,!?;:\"'()[]«»“”„"


def without_names(text: str) -> str:
    """The raw one-line text without tokens naming a group (case and edge punctuation ignored)."""
    return " ".join(w for w in one_line(text).split() if w.lower().strip(_PUNCT) not in IDENTITY_TERMS)


def identity_sets() -> dict[str, list[tuple[str, str, str]]]:
    """(lang, group, sentence) naming a group without hate: dev frames, and the 1b test's."""
    from identity_templates import sentences

    return {"dev frames": list(identity_examples.dev_sentences(T.GROUPS)),
            "1b test": [(lang, g, s) for lang, g, kind, s in sentences() if kind != "hateful"]}


def rates(score, rows: list[tuple[str, str, str]], threshold: float) -> dict[str, tuple[float, str, float]]:
    """Per language: share scoring >= threshold, the worst group and its share."""
    out = {}
    for lang in ("en", "de", "fr", "es"):
        mine = [(g, s) for l, g, s in rows if l == lang]
        flagged = [p >= threshold for p in score([s for _, s in mine], lang)]
        per_group: dict[str, list[bool]] = defaultdict(list)
        for (g, _), f in zip(mine, flagged):
            per_group[g].append(f)
        worst = max(sorted(per_group), key=lambda g: sum(per_group[g]) / len(per_group[g]))
        out[lang] = (sum(flagged) / len(flagged), worst, sum(per_group[worst]) / len(per_group[worst]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--names-kept", action="store_true",
                    help="also retrain the shipped recipe with names of groups as features (~1.5 CPU-min)")
    args = ap.parse_args(argv)
    if not (args.corpora / "toxicity").is_dir():
        print(f"error: no corpora at {args.corpora}", file=sys.stderr)
        return 2

    labelled = T.load_labelled(args.corpora, args.seed)
    train_set = T.training_set(labelled, args.corpora, args.seed)
    shipped = Toxicity()
    plain = T.baseline_scorer(T.train_baseline(train_set, args.seed))
    plain_nn = T.baseline_scorer(T.train_baseline(train_set, args.seed, without_names), without_names)
    tools = {"refinery (shipped)": shipped.score_texts,
             "plain fastText": lambda texts, lang: plain(texts),
             "plain fastText, names dropped": lambda texts, lang: plain_nn(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        if args.names_kept:
            T.DROP_IDENTITY_TERMS = False
            try:
                T.train(train_set, Path(tmp) / "kept.bin", args.seed)
            finally:
                T.DROP_IDENTITY_TERMS = True
            tools["refinery, names kept"] = Toxicity(model_path=str(Path(tmp) / "kept.bin"), identity_terms=False).score_texts
        try:
            from profanity_check import predict_prob

            tools["alt-profanity-check"] = lambda texts, lang: [float(p) for p in predict_prob(texts)]
        except ImportError:
            print("(alt-profanity-check not installed: left out)")

        print("Held-out sets (test parts), F1 at P >= 0.5 / ROC-AUC\n")
        print("| lang | set | n (toxic) | " + " | ".join(tools) + " |")
        print("|---|---|---:|" + "---|" * len(tools))
        sets = T.held_out_sets(labelled, T.load_evaluation_only(args.corpora, args.seed))
        for (lang, name), items in sorted(sets.items()):
            labels = [e.toxic for e in items]
            texts = [e.text for e in items]
            cells = []
            for tool, score in tools.items():
                m = T.prf(labels, score(texts, lang))
                note = " (in its training)" if tool == "alt-profanity-check" and name in APC_TRAINING else ""
                cells.append(f"{m['f1']:.3f} / {m['roc_auc']:.3f}{note}")
            print(f"| {lang} | {name} | {len(items)} ({sum(labels)}) | " + " | ".join(cells) + " |")

        threshold = T.default_threshold()
        print(f"\nSentences naming a group without hate: share scored >= 0.5 and >= {threshold} (the stage's rule "
              "on a one-sentence document), per language (worst group)\n")
        print("| sentences | tool | threshold | en | de | fr | es |")
        print("|---|---|---:|---|---|---|---|")
        for set_name, rows in identity_sets().items():
            for tool, score in tools.items():
                for th in (0.5, threshold):
                    r = rates(score, rows, th)
                    print(f"| {set_name} | {tool} | {th} | " + " | ".join(
                        f"{r[l][0]:.1%} ({r[l][1]} {r[l][2]:.0%})" for l in ("en", "de", "fr", "es")) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
