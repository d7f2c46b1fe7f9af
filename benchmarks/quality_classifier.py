"""The multilingual quality classifier: which training design ranks best, per language, and its cost.

Variants (each trained by pipeline/train/quality.py on the same seeded split of `default_sets`, the
shipped model's data; only the design differs):
  balanced      per language the same number of positives and negatives; languages with one class
                only (es, ru, el, hi, ro, th, vi: prose but no licence-allowed negatives) left out,
                so they are scored zero-shot (the shipped design, `balance`);
  one_class     the same, but the one-class languages' positives are trained on too;
  lang_tokens   balanced, each line starting with the language token (`xlang_de`, 15% without);
  subwords      balanced, with character 2-4-grams (minn/maxn) for transfer to unseen languages;
  subwords_one_class, subwords_3_5: the two changes together; character 3-5-grams.
Reported per variant: per language ROC-AUC on the held-out part and on the sets never trained on
(`evaluate(..., by="lang")`), the mean over the required languages, and how far apart the median
scores of clean held-out news sentences (lingua 500-999) of 75 languages sit: the spread of those
medians is what a model that learned *language* instead of quality would show.

Speed (`--speed PARQUET_DIR`, a run's kept/ folder with `text` and `lang`): the English-only model
(git `--english-model`, the file before the multilingual one) and the shipped model scoring the same
documents, alternated, CPU time of this process, median ratio over `--repeats` rounds; and the
stage-level cost: the English-only default scored only `lang == en` documents.

    PYTHONPATH=. python benchmarks/quality_classifier.py --variants balanced one_class lang_tokens subwords
    PYTHONPATH=. python benchmarks/quality_classifier.py --variants --speed /tmp/qc/run/kept --english-model /tmp/qc/quality_en.ftz
    PYTHONPATH=. python benchmarks/quality_classifier.py --variants --spread out/sample /tmp/qc/run50

Page score (`--page-score`): the quality stage's `quality_score` as it ranks now (rules + page score)
and as before (`page_score: false`: rules + the classifier's probability), on the sets of
`pipeline.train.quality.page_score_sets`: trafilatura's eval pages cut by site hash (`web_report`,
never fitted on; `web_tune`, fitted on), its cache pages (`web_second`, never fitted on), the
classifier's held-out prose vs chat, sets it never trained on, and clean text of 75 languages; plus
documents made from the held-out articles: a stub (the article's first line of at least 40
characters), word salad (each line's words shuffled: fluent words, no syntax) and, against the
boilerplate, each article's first lines cut to 80-1,200 characters (length alone cannot tell them apart).
With `--page-score-cost`: the stage's CPU per document with the page score on and off, alternated
rounds, a fresh stage each round.

    PYTHONPATH=. python benchmarks/quality_classifier.py --variants --page-score
    PYTHONPATH=. python benchmarks/quality_classifier.py --variants --page-score-cost --rounds 4

Scorer (`--scorer`): the memoised one-dimensional scorer (stages/_scalar_fasttext.py) against fastText
itself on the shipped model, on every document of quality_parity.py's corpora (`--per-file`) and of
`--jsonl` folders (crawl text): the largest |difference| of the scores, how many stored (float32)
scores differ, and how many documents land on the other side of a threshold (0.05, 0.10, ..., 0.95);
then the CPU time of both on documents neither has seen, in batches as the stage sends them,
alternated, a fresh scorer each round (its first batches included: a worker's start).

    PYTHONPATH=. python benchmarks/quality_classifier.py --variants --scorer --per-file 1500 --jsonl /tmp/refinery-bench/jsonl56
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH

from pipeline.train.quality import (
    DEFAULT_CORPORA, FASTTEXT_PARAMS, TRAIN_LANGUAGES, XQUAD_LANGUAGES, _quantile, balance, clean_text_table,
    default_sets, evaluate, match_case, scores_of, split, train,
)
from stages.quality.classifier import QualityClassifier, QualityClassifierConfig, shipped_model_path

REQUIRED = ("en", "de", "fr", "es", "pt", "ru", "zh", "ja")
REPORTED = REQUIRED + ("ar", "tr", "hi", "el", "ro", "th", "vi", "da", "ko")

WORDS = {**FASTTEXT_PARAMS, "minn": 0, "maxn": 0}  # words and word bigrams only, the English-only model's features
VARIANTS = {
    "balanced": dict(one_class=False, lang_tokens=False, params=WORDS),
    "one_class": dict(one_class=True, lang_tokens=False, params=WORDS),
    "lang_tokens": dict(one_class=False, lang_tokens=True, params=WORDS),
    "subwords": dict(one_class=False, lang_tokens=False, params=FASTTEXT_PARAMS),  # the shipped design
    "subwords_one_class": dict(one_class=True, lang_tokens=False, params=FASTTEXT_PARAMS),
    "subwords_3_5": dict(one_class=False, lang_tokens=False, params={**FASTTEXT_PARAMS, "minn": 3, "maxn": 5}),
}


def compare(corpora: Path, seed: int, names: list[str], work: Path) -> None:
    pool, extra = default_sets(corpora, seed)
    train_part, test = split(pool, seed, 0.2)
    train_part = match_case(train_part, seed)
    both = test + [d for d in extra if d.source != "lingua-heldout" or d.lang in XQUAD_LANGUAGES + TRAIN_LANGUAGES]
    header = "| variant | " + " | ".join(REPORTED) + " | mean AUC, required | clean-text medians: min / median / max |"
    lines = [header, "|---|" + "---:|" * (len(REPORTED) + 2)]
    for name in names:
        v = VARIANTS[name]
        model = work / f"{name}.ftz"
        train(balance(train_part, seed, one_class=v["one_class"]), model, seed, lang_tokens=v["lang_tokens"], params=v["params"])
        rows = dict(evaluate(both, model, by="lang"))
        scores = scores_of(extra, model)
        clean: dict[str, list[float]] = {}
        for d, s in zip(extra, scores):
            if d.source == "lingua-heldout":
                clean.setdefault(d.lang, []).append(s)
        meds = sorted(_quantile(xs, 0.5) for xs in clean.values())
        aucs = [rows[lang]["roc_auc"] for lang in REQUIRED if lang in rows]
        cells = [f"{rows[lang]['roc_auc']:.3f}" if lang in rows and rows[lang]["roc_auc"] == rows[lang]["roc_auc"] else "-"
                 for lang in REPORTED]
        lines.append(f"| {name} ({model.stat().st_size / 1e6:.1f} MB) | " + " | ".join(cells)
                     + f" | {statistics.mean(a for a in aucs if a == a):.3f} | {meds[0]:.3f} / {_quantile(meds, 0.5):.3f} / {meds[-1]:.3f} |")
        print(f"\n## {name}\n")
        print(clean_text_table(extra, scores))
    print("\nROC-AUC per language (held out + never trained on)\n")
    print("\n".join(lines))


def speed(kept: Path, english: Path, repeats: int) -> None:
    import pyarrow.parquet as pq

    t = pq.read_table(sorted(kept.glob("*.parquet")), columns=["text", "lang"]) if kept.is_dir() else pq.read_table(kept, columns=["text", "lang"])
    texts, langs = t.column("text").to_pylist(), t.column("lang").to_pylist()
    en = [i for i, lang in enumerate(langs) if lang == "en"]
    old = QualityClassifier(QualityClassifierConfig(model_path=str(english)))
    new = QualityClassifier(QualityClassifierConfig(model_path=str(shipped_model_path())))
    old.setup(), new.setup()
    jobs = {
        "english-only model, all documents": lambda: old.scores(texts, langs),
        "multilingual model, all documents": lambda: new.scores(texts, langs),
        "english-only default (en documents only)": lambda: old.scores([texts[i] for i in en], [langs[i] for i in en]),
    }
    cpu: dict[str, list[float]] = {k: [] for k in jobs}
    for _ in range(repeats):
        for k, fn in jobs.items():  # alternated, every round
            t0 = time.process_time()
            fn()
            cpu[k].append(time.process_time() - t0)
    base = statistics.median(cpu["english-only model, all documents"])
    print(f"\n{len(texts)} documents ({len(en)} en, {sum(map(len, texts)) / 1e6:.1f} M characters), {repeats} alternated rounds, CPU s (median)\n")
    print("| scorer | CPU s | ratio to the English-only model on the same documents |\n|---|---:|---:|")
    for k, xs in cpu.items():
        print(f"| {k} | {statistics.median(xs):.3f} | {statistics.median(xs) / base:.2f} |")


def scorer(per_file: int, jsonl: list[Path], rounds: int, batch: int = 1000) -> None:
    import json

    import numpy as np

    from benchmarks.quality_parity import corpus_documents
    from stages._scalar_fasttext import ScalarFastText
    from stages.quality.classifier import HQ, preprocess, preprocess_array

    docs = [d for ds in corpus_documents(per_file).values() for d in ds]
    n_corpora = len(docs)
    for folder in jsonl:
        for f in sorted(folder.glob("*.jsonl")):
            with open(f, encoding="utf-8") as fh:
                docs += [t for t in (json.loads(line).get("text") for line in fh) if isinstance(t, str)]
    clf = QualityClassifier(QualityClassifierConfig())
    clf.setup()
    model, path = clf._model, shipped_model_path()

    def fasttext_scores(texts: list[str]) -> list[float]:  # what the classifier computed before
        labels, probs = model.predict([preprocess(t) for t in texts], k=-1)
        return [next((min(1.0, float(p)) for lab, p in zip(ls, ps) if lab == HQ), 0.0) for ls, ps in zip(labels, probs)]

    def scalar_scores(sc, texts: list[str]) -> list[float]:
        return sc.predict(preprocess_array(texts)).tolist()

    def fresh():
        return ScalarFastText(model, HQ, path=path, all_labels=True)

    sc = fresh()
    theirs = np.array([x for k in range(0, len(docs), batch) for x in fasttext_scores(docs[k:k + batch])])
    ours = np.array([x for k in range(0, len(docs), batch) for x in scalar_scores(sc, docs[k:k + batch])])
    diff = np.abs(ours - theirs)
    f32 = ours.astype(np.float32) != theirs.astype(np.float32)
    flips = {t: int(((ours >= t) != (theirs >= t)).sum()) for t in np.round(np.arange(0.05, 1.0, 0.05), 2)}
    print(f"\n{len(docs)} documents ({n_corpora} of {per_file} per corpus file, {len(docs) - n_corpora} from --jsonl): "
          f"max |difference| {diff.max():.2e} (mean {diff.mean():.1e}); stored float32 scores differing: {int(f32.sum())} "
          f"(max {np.abs(ours.astype(np.float32).astype(float) - theirs.astype(np.float32)).max():.2e}); "
          f"documents on the other side of a threshold 0.05..0.95: {sum(flips.values())} {flips if any(flips.values()) else ''}")
    # speed: unseen documents in shuffled batches, alternated, a fresh scorer every round
    import random

    order = list(range(len(docs)))
    random.Random(0).shuffle(order)
    per_round = len(order) // rounds
    cpu: dict[str, list[float]] = {"fastText": [], "memoised scorer": []}
    for r in range(rounds):
        part = [docs[i] for i in order[r * per_round:(r + 1) * per_round]]
        half = len(part) // 2
        for name, texts in (("fastText", part[:half]), ("memoised scorer", part[half:])) if r % 2 == 0 else (
                ("memoised scorer", part[:half]), ("fastText", part[half:])):
            t0 = time.process_time()
            if name == "fastText":
                for k in range(0, len(texts), batch):
                    fasttext_scores(texts[k:k + batch])
            else:
                s = fresh()
                for k in range(0, len(texts), batch):
                    scalar_scores(s, texts[k:k + batch])
            cpu[name].append((time.process_time() - t0) / len(texts))
    a, b = statistics.median(cpu["fastText"]), statistics.median(cpu["memoised scorer"])
    print(f"CPU per document, {rounds} alternated rounds of {per_round // 2} unseen documents each (fresh scorer, "
          f"batches of {batch}): fastText {a * 1e6:.0f} us, memoised scorer {b * 1e6:.0f} us (set-up included): "
          f"**{a / b:.2f}x**; per round: {', '.join(f'{x / y:.2f}x' for x, y in zip(cpu['fastText'], cpu['memoised scorer']))}")


def spread(run: Path, top: int) -> None:
    """Per language, the quartiles of `quality_score` (and the classifier's score) among a run's kept
    documents: what a mixture's `where: quality_score >= x` buckets cut."""
    import pyarrow.parquet as pq

    t = pq.read_table(sorted((run / "kept").glob("*.parquet")), columns=["lang", "quality_score", "quality_classifier_score"])
    by: dict[str, list[tuple[float, float]]] = {}
    for lang, q, c in zip(*(t.column(k).to_pylist() for k in ("lang", "quality_score", "quality_classifier_score"))):
        if q is not None:
            by.setdefault(lang or "-", []).append((q, c))
    print(f"\n{run}: kept documents with a quality score, per language (the {top} largest, then the rest)\n")
    print("| language | kept | quality_score quartiles | IQR | classifier score quartiles | distinct scores |\n|---|---:|---|---:|---|---:|")
    langs = sorted(by, key=lambda k: -len(by[k]))
    rows = [(k, by[k]) for k in langs[:top]] + [("others", [x for k in langs[top:] for x in by[k]])]
    rows += [("non-English", [x for k in langs if k != "en" for x in by[k]])]
    for k, xs in rows:
        if not xs:
            continue
        q = [a for a, _ in xs]
        c = [b for _, b in xs if b is not None]
        qs = [_quantile(q, f) for f in (0.25, 0.5, 0.75)]
        cs = [_quantile(c, f) for f in (0.25, 0.5, 0.75)] if c else []
        print(f"| {k} | {len(xs)} | {' / '.join(f'{x:.3f}' for x in qs)} | {qs[2] - qs[0]:.3f} | "
              f"{' / '.join(f'{x:.3f}' for x in cs) or '-'} | {len(set(q))} |")


def page_score(corpora: Path, seed: int, rounds: int) -> None:
    import random

    from pipeline.train.quality import SAMPLE_LANGUAGES, clean_medians, page_score_rows, page_score_sets, stage_scores
    from pipeline.train.toxicity import roc_auc

    sets = page_score_sets(corpora, seed)
    rng = random.Random(seed)
    articles = [r for r in sets["web_report"] if r[3] == "article"]
    stubs, salad, pieces = [], [], []
    for text, lang, _, _ in articles:
        cur, target = [], rng.randint(80, 1200)  # the article's first lines, about a boilerplate region's length
        for ln in text.split("\n"):
            cur.append(ln)
            if sum(map(len, cur)) >= target:
                break
        pieces.append(("\n".join(cur), lang, True, "piece"))
        first = next((ln for ln in text.split("\n") if len(ln) >= 40), None)
        if first:
            stubs.append((first, lang, False, "stub"))
        lines = []
        for ln in text.split("\n"):
            words = ln.split()
            rng.shuffle(words)
            lines.append(" ".join(words))
        salad.append(("\n".join(lines), lang, False, "salad"))
    boiler = [r for r in sets["web_report"] if r[3] == "boilerplate"]
    sets["stubs"], sets["salad"], sets["pieces"] = articles + stubs, articles + salad, pieces + boiler
    names = ("web_report", "web_second", "web_tune", "prose_chat_report", "never_trained", "lingua_heldout", "stubs", "salad",
             "pieces")
    both = {}
    for label, on in (("before (rules + classifier)", False), ("now (rules + page score)", True)):
        scores = {n: stage_scores(sets[n], page_score=on) for n in names}
        rows = page_score_rows(sets, scores)
        for extra in ("stubs", "salad", "pieces"):
            sc, r = scores[extra]["quality_score"], sets[extra]
            question = "article piece (80-1,200 characters) vs boilerplate" if extra == "pieces" else f"article vs {extra}"
            rows.append((f"web_report: {question}", {"n": f"{sum(x[2] for x in r)} / {sum(not x[2] for x in r)}",
                                                             "auc": roc_auc([x[2] for x in r], sc)}))
        both[label] = (dict(rows), clean_medians(sets["lingua_heldout"], scores["lingua_heldout"]))
    (old, old_med), (new, new_med) = both.values()
    print("\n| set: question | n (pos / neg) | ROC-AUC before | ROC-AUC now | passing every rule (pos / neg) | before | now |")
    print("|---|---|---:|---:|---|---:|---:|")
    for k in new:
        print(f"| {k} | {new[k]['n']} | {old[k]['auc']:.3f} | {new[k]['auc']:.3f} | {new[k].get('n_kept', '-')} | "
              f"{old[k].get('auc_kept', float('nan')):.3f} | {new[k].get('auc_kept', float('nan')):.3f} |")
    print("\nclean text (lingua 500-999), median quality_score, before / now (distance to en now):")
    print("| language | before | now | now - en |\n|---|---:|---:|---:|")
    for k in SAMPLE_LANGUAGES:
        print(f"| {k} | {old_med[k]:.3f} | {new_med[k]:.3f} | {new_med[k] - new_med['en']:+.3f} |")
    for label, med in (("before", old_med), ("now", new_med)):
        off = sorted((k for k in med if abs(med[k] - med["en"]) > 0.15), key=lambda k: med[k] - med["en"])
        print(f"{label}: {len(off)} of {len(med)} languages more than 0.15 from en: "
              + " ".join(f"{k} {med[k] - med['en']:+.3f}" for k in off))


def page_score_cost(corpora: Path, seed: int, rounds: int) -> None:
    """The quality stage's CPU per document with the page score on and off, on held-out web pages and
    prose/chat documents, alternated (off, on, on, off, ...), a fresh stage each round."""
    import random

    import pyarrow as pa

    from pipeline.schema import make_record, records_to_table
    from pipeline.train.quality import page_score_sets
    from stages.quality.stage import Quality

    sets = page_score_sets(corpora, seed)
    rng = random.Random(seed)
    docs = [r for n in ("web_report", "prose_chat_report") for r in sets[n]]
    rng.shuffle(docs)
    per = len(docs) // (2 * rounds)
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for k in range(2 * rounds):
        on = (k % 4) in (1, 2)  # off, on, on, off, ...: each order equally often
        part = docs[k * per:(k + 1) * per]
        t = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=i, text=r[0]) for i, r in enumerate(part))
        t = t.append_column("lang", pa.array([r[1] for r in part], pa.string()))
        q = Quality(page_score=on)
        t0 = time.process_time()
        q.ensure_setup()
        q.annotate(t)
        cpu[on].append((time.process_time() - t0) / len(part))
    a, b = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"\nquality stage CPU per document ({2 * rounds} alternated rounds of {per} unseen documents, set-up included): "
          f"page score off {a * 1e3:.2f} ms, on {b * 1e3:.2f} ms: **{b / a:.3f}x**; per round off "
          f"{', '.join(f'{x * 1e3:.2f}' for x in cpu[False])}, on {', '.join(f'{x * 1e3:.2f}' for x in cpu[True])}")


# Hand-written for the docs (licence-clean): what lands in each bucket of quality_score.
BUCKET_SAMPLES = [
    ("article", "en", "The old bridge over the river was built in 1843 by a local stonemason, who used granite from a quarry a few miles "
     "upstream. It survived the great flood of 1910, when the water rose higher than anyone in the town could remember.\n"
     "Engineers who inspected it last year found that the arches, although worn, are sound, and the council has decided to "
     "repair the parapet rather than replace the structure."),
    ("article", "de", "Die Brücke wurde 1843 von einem Steinmetz aus dem Ort gebaut, der Granit aus einem Steinbruch flussaufwärts "
     "verwendete. Sie überstand das große Hochwasser von 1910, als das Wasser höher stieg als je zuvor.\n"
     "Ingenieure, die sie im vergangenen Jahr untersuchten, fanden die Bögen zwar abgenutzt, aber tragfähig; der Gemeinderat "
     "will deshalb die Brüstung ausbessern, statt das Bauwerk zu ersetzen."),
    ("article", "pl", "Most na rzece zbudował w 1843 roku miejscowy kamieniarz z granitu z kamieniołomu położonego kilka kilometrów "
     "w górę rzeki. Przetrwał wielką powódź z 1910 roku, gdy woda podniosła się wyżej niż kiedykolwiek wcześniej.\n"
     "Inżynierowie, którzy zbadali go w zeszłym roku, uznali, że łuki, choć zużyte, są w dobrym stanie, więc rada miasta "
     "postanowiła naprawić balustradę zamiast wymieniać całą konstrukcję."),
    ("recipe", "en", "Almond biscuits\n200 g flour\n100 g sugar\n100 g ground almonds\n1 egg\n"
     "Mix the flour, sugar and almonds, then add the egg and knead everything into a smooth dough. Let it rest in the fridge for "
     "an hour.\nRoll the dough out thinly, cut out the biscuits and bake them at 180 degrees for about ten minutes, until golden."),
    ("forum answer", "en", "I had the same problem with my old bike last summer. In the end it was the chain, which was far too loose, "
     "so it kept slipping whenever I went uphill. A new chain cost me about twenty pounds and the shop fitted it in ten minutes, "
     "so I would check that first before you replace the whole gear set."),
    ("product page", "en", "Oak bench, 120 cm\nSolid oak, oiled finish. Seats three.\nPrice: 249.00 EUR\nIn stock\n"
     "Add to basket\nDelivery in 3-5 working days"),
    ("short news", "en", "The council will vote on the bridge repairs on Tuesday. The meeting is open to the public."),
    ("author bio", "en", "About the author\nAnna writes about local history and old buildings. She lives by the river with two cats.\n"
     "Follow her on Twitter"),
    ("testimonial", "en", "\"Great service, the team fixed our roof in two days. Highly recommended!\" - Mark, Leeds\n"
     "\"Friendly and fast.\" - Sue"),
    ("link list", "en", "\n".join(f"Bridge news {i}: council meeting on {i} May" for i in range(1, 13))),
    ("footer", "de", "Startseite\nÜber uns\nKontakt\nImpressum\nDatenschutz\nNewsletter abonnieren\n© 2024 Beispiel GmbH"),
    ("SEO", "en", "Best cheap bridge repair near me. Bridge repair cost, bridge repair prices, bridge repair companies. Cheap bridge "
     "repair near me today. Call now for the best bridge repair near me deals."),
    ("chat", "en", "lol did u see the bridge today??\nya its closed again smh\nugh my bus takes forever now"),
]
BUCKETS = ((0.9, 1.01), (0.75, 0.9), (0.6, 0.75), (0.0, 0.6))


def bucket_samples() -> None:
    from pipeline.train.quality import stage_scores

    rows = [(t, lang, True, kind) for kind, lang, t in BUCKET_SAMPLES]
    sc = stage_scores(rows)
    print("\n| bucket | kind | lang | quality_score | page score | rules | text (start) |\n|---|---|---|---:|---:|---:|---|")
    order = sorted(range(len(rows)), key=lambda i: -sc["quality_score"][i])
    for i in order:
        q = sc["quality_score"][i]
        b = next(f"{lo:.2f}-{min(hi, 1):.2f}" for lo, hi in BUCKETS if lo <= q < hi)
        text = rows[i][0].replace("\n", " / ")
        print(f"| {b} | {rows[i][3]} | {rows[i][1]} | {q:.3f} | {sc['quality_page_score'][i]:.3f} | "
              f"{sc['quality_rule_score'][i]:.2f} | {text[:90]}{'...' if len(text) > 90 else ''} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--work", type=Path)
    ap.add_argument("--speed", type=Path, help="a run's kept/ folder (or one parquet file) with text and lang")
    ap.add_argument("--english-model", type=Path, help="the English-only model file, for --speed")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--spread", type=Path, nargs="*", default=[], help="finished runs: quality_score quartiles per language")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--scorer", action="store_true", help="the memoised scorer against fastText: scores and speed")
    ap.add_argument("--page-score", action="store_true", help="quality_score before/after the page score: ROC-AUC")
    ap.add_argument("--page-score-cost", action="store_true", help="the quality stage's CPU per document, page score on/off")
    ap.add_argument("--per-file", type=int, default=1500, help="for --scorer: documents per corpus file")
    ap.add_argument("--jsonl", type=Path, nargs="*", default=[], help="for --scorer: folders of .jsonl documents")
    ap.add_argument("--rounds", type=int, default=6, help="for --scorer: alternated speed rounds")
    args = ap.parse_args()
    if args.variants:
        with tempfile.TemporaryDirectory() as tmp:
            compare(args.corpora, args.seed, args.variants, args.work or Path(tmp))
    if args.speed:
        speed(args.speed, args.english_model, args.repeats)
    for run in args.spread:
        spread(run, args.top)
    if args.scorer:
        scorer(args.per_file, args.jsonl, args.rounds)
    if args.page_score:
        bucket_samples()
        page_score(args.corpora, args.seed, args.rounds)
    if args.page_score_cost:
        page_score_cost(args.corpora, args.seed, args.rounds)


if __name__ == "__main__":
    main()
