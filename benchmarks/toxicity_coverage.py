"""Which languages the toxicity stage judges: the shipped model's held-out ROC-AUC per language.

    PYTHONPATH=. python benchmarks/toxicity_coverage.py [--write]

Per language, every held-out measurement the project has, none of which chose anything in training:
  * the labelled sets' test parts (`refinery train-toxicity`'s held-out sets: the authors' test splits or
    the seeded 20% never trained on, GAHD's test split among them; the evaluation-only sets, NC or research
    licences: HateBR, HatEval, ru_paradetox's test half, the Jigsaw sample; CONSTRAINT 2021 Hindi test), pooled;
  * the functional suite's test part (benchmarks/toxicity_functional.py, odd frames) where the language
    has one.
A language is judged where each of them reaches stages.toxicity.MIN_AUC. `--write` stores the result
in stages/data/toxicity_languages.json, which the stage reads (`languages: null`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "stages" / "data" / "toxicity_languages.json"
COMMAND = "PYTHONPATH=. python benchmarks/toxicity_coverage.py --write"


def held_out(corpora: Path) -> dict[str, list[tuple[str, bool]]]:
    from pipeline.train.toxicity import _csv, load_evaluation_only, load_labelled

    out: dict[str, list[tuple[str, bool]]] = {}
    for e in load_labelled(corpora) + load_evaluation_only(corpora):
        if e.part == "test":
            out.setdefault(e.lang, []).append((e.text, e.toxic))
    hindi = corpora / "toxicity" / "hindi_hostility_constraint2021" / "test.csv"
    if hindi.is_file():  # research use only: evaluation, never training
        out["hi"] = [(r["Post"], any(x in r["Labels Set"] for x in ("hate", "offensive"))) for r in _csv(hindi)]
    return out


def measure(corpora: Path) -> dict[str, dict]:
    from benchmarks import toxicity_functional as suite
    from pipeline.train.toxicity import roc_auc
    from stages.toxicity import Toxicity

    every = Toxicity(languages=sorted(set(held_out(corpora)) | set(suite.LANGUAGES)))  # measure all, judge none
    every.ensure_setup()
    res: dict[str, dict] = {}
    for lang, rows in sorted(held_out(corpora).items()):
        scores = every.score_texts([t for t, _ in rows], lang)
        res.setdefault(lang, {})["labelled_test"] = {"n": len(rows), "toxic": sum(y for _, y in rows),
                                                     "auc": round(roc_auc([y for _, y in rows], scores), 4)}
    for lang, r in suite.measure(every, "test").items():
        res.setdefault(lang, {})["functional_test"] = {"n": r["n"], "auc": round(r["auc"], 4)}
    return res


def main(argv: list[str] | None = None) -> None:
    from stages.toxicity import MIN_AUC, bundled_model_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--write", action="store_true", help=f"store the judged languages in {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    res = measure(args.corpora)
    print("| lang | labelled test sets: n (toxic), ROC-AUC | functional suite test part: n, ROC-AUC | judged |")
    print("|---|---:|---:|---|")
    judged, not_judged = {}, {}
    for lang, r in sorted(res.items()):
        aucs = [m["auc"] for m in r.values()]
        ok = all(a >= MIN_AUC for a in aucs)
        lt, ft = r.get("labelled_test"), r.get("functional_test")
        a = "{:,} ({:,}), {:.3f}".format(lt["n"], lt["toxic"], lt["auc"]) if lt else "-"
        b = "{}, {:.3f}".format(ft["n"], ft["auc"]) if ft else "-"
        print(f"| {lang} | {a} | {b} | {'yes' if ok else 'no'} |")
        (judged if ok else not_judged)[lang] = {"auc": min(aucs), **r}
    listed = ", ".join("{} {:.3f}".format(l, v["auc"]) for l, v in judged.items())
    print(f"judged (every held-out ROC-AUC >= {MIN_AUC}): {listed or 'none'}")
    if args.write:
        model = hashlib.sha256(bundled_model_path().read_bytes()).hexdigest()
        OUT.write_text(json.dumps({
            "about": "languages the shipped toxicity model judges: every held-out ROC-AUC >= min_auc; auc is the "
                     "lowest of them (docs/toxicity.md)",
            "command": COMMAND, "model_sha256": model, "min_auc": MIN_AUC,
            "judged": judged, "not_judged": not_judged}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
