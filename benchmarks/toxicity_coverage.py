"""Which languages the toxicity stage judges: the shipped model's held-out ROC-AUC per language.

    PYTHONPATH=. python benchmarks/toxicity_coverage.py [--write]

Per language, every held-out measurement the project has, none of which chose anything in training:
  * the labelled sets' test parts (`refinery train-toxicity`'s held-out sets: the authors' test splits or
    the seeded 20% never trained on, GAHD's test split among them; the evaluation-only sets, NC or research
    licences: HateBR, HatEval, ru_paradetox's test half, the Jigsaw sample; CONSTRAINT 2021 Hindi test), pooled;
  * the functional suite's test part (benchmarks/toxicity_functional.py, odd frames) where the language
    has one.
  * the clean prose documents of benchmarks/toxicity_prose.py in the language (books, encyclopedia
    articles, textbook sections, lingua sentences), judged at the stage's default document rule.
A language is judged where each ROC-AUC reaches stages.toxicity.MIN_AUC and no clean prose set loses
more than MAX_PROSE of its documents. `--write` stores the result
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
# A language is judged only where the stage at its defaults rejects at most this share of every
# held-out clean prose set of benchmarks/toxicity_prose.py in that language (the goal).
MAX_PROSE = 0.005


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
    for lang, rate in clean_prose(corpora, sorted(res)).items():
        res[lang]["clean_prose"] = rate
    return res


def clean_prose(corpora: Path, langs: list[str]) -> dict[str, dict]:
    """Per language, the held-out clean documents of benchmarks/toxicity_prose.py (books, encyclopedia
    articles, textbook sections, lingua sentences) the stage rejects at its default document rule with
    the language judged: the worst set's share (a language is judged only where it is <= MAX_PROSE)."""
    import pyarrow as pa

    from benchmarks.toxicity_prose import documents
    from pipeline.schema import make_record, records_to_table
    from stages.toxicity import Toxicity

    out: dict[str, dict] = {}
    for (lang, name), docs in sorted(documents(corpora).items()):
        if lang not in langs:
            continue
        st = Toxicity(languages=[lang])
        t = records_to_table(make_record(source="p", kind="jsonl", file="f", offset=i, text=d) for i, d in enumerate(docs))
        rejected = sum(r is not None for r in st.decide(st.annotate(t.append_column("lang", pa.array([lang] * len(docs), pa.string())))))
        rate = round(rejected / len(docs), 4)
        if lang not in out or rate > out[lang]["rejected_share"]:
            out[lang] = {"set": name, "documents": len(docs), "rejected": rejected, "rejected_share": rate}
    return out


def main(argv: list[str] | None = None) -> None:
    from stages.toxicity import MIN_AUC, bundled_model_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--write", action="store_true", help=f"store the judged languages in {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    res = measure(args.corpora)
    print("| lang | labelled test sets: n (toxic), ROC-AUC | functional suite test part: n, ROC-AUC "
          "| clean prose rejected, worst set | judged |")
    print("|---|---:|---:|---:|---|")
    judged, not_judged = {}, {}
    for lang, r in sorted(res.items()):
        aucs = [m["auc"] for m in r.values() if "auc" in m]
        cp = r.get("clean_prose")
        ok = all(a >= MIN_AUC for a in aucs) and (cp is None or cp["rejected_share"] <= MAX_PROSE)
        lt, ft = r.get("labelled_test"), r.get("functional_test")
        a = "{:,} ({:,}), {:.3f}".format(lt["n"], lt["toxic"], lt["auc"]) if lt else "-"
        b = "{}, {:.3f}".format(ft["n"], ft["auc"]) if ft else "-"
        c = "{} of {:,} ({:.2%}, {})".format(cp["rejected"], cp["documents"], cp["rejected_share"], cp["set"]) if cp else "-"
        print(f"| {lang} | {a} | {b} | {c} | {'yes' if ok else 'no'} |")
        (judged if ok else not_judged)[lang] = {"auc": min(aucs), **r}
    listed = ", ".join("{} {:.3f}".format(l, v["auc"]) for l, v in judged.items())
    print(f"judged (every held-out ROC-AUC >= {MIN_AUC}, clean prose rejected <= {MAX_PROSE:.1%}): {listed or 'none'}")
    if args.write:
        model = hashlib.sha256(bundled_model_path().read_bytes()).hexdigest()
        OUT.write_text(json.dumps({
            "about": "languages the shipped toxicity model judges: every held-out ROC-AUC >= min_auc and held-out "
                     "clean prose rejected <= max_prose_rejected at the default rule; auc is the lowest ROC-AUC "
                     "(docs/toxicity.md)",
            "command": COMMAND, "model_sha256": model, "min_auc": MIN_AUC, "max_prose_rejected": MAX_PROSE,
            "judged": judged, "not_judged": not_judged}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
