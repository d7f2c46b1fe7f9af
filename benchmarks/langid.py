"""Language ID benchmark: accuracy, kept share and speed per language, tuned and reported on separate halves.

Data (read in place from ../shared/corpora):
  * lingua_sentences/<iso639-1>.txt, 1,000 sentences each (sorted alphabetically in the files).
    Documents are 10 consecutive sentences (100 per language); even-numbered documents are the
    TUNING half (thresholds, the combination rule), odd-numbered ones the REPORT half.
  * a second set nobody tuned on: xquad (240 Wikipedia paragraphs in each of 12 languages) and the
    first 240 JaQuAD paragraphs (ja).
Accuracy = `lang` equals the gold code (lid.176's `no` counts as `nb`), averaged over the languages
lid.176 knows (67 of lingua's 75). Kept = share of documents whose label is right that the stage keeps
(a) with no allowed list ("default settings"), (b) with `languages: [gold]`.

Configurations (each a LangID config): `fasttext 0.65` is a single threshold of 0.65 with no groups and
no second opinion (datatrove's rule); `thresholds` adds the per-language table; `+groups` the confusable groups; `+cld2` (the
default) the CLD2 second opinion.

Speed: the default stage against `fasttext 0.65`, same documents, one process (= one core), CPU time,
best of `--repeats`, the two alternating; and datatrove's LanguageFilter (same lid.176.ftz).

    PYTHONPATH=. python benchmarks/langid.py [--corpora ../shared/corpora] [--markdown]
    PYTHONPATH=. python benchmarks/langid.py --write-thresholds   # rebuild stages/data/langid_thresholds.json

Prefix (`--prefixes N ...`): the default stage reading only the first N characters (`max_chars`):
accuracy and kept share on both lingua halves and the second set, and, on the documents of a finished
run (`--crawl RUN`: its kept/ and rejects/langid/, the texts langid saw; a run of a recipe with
langid as its only stage keeps them unchanged), the share of documents whose `lang` and whose
decision (no allowed list, and `languages: [en]`) equal those of the 10,000-character default, and
the stage's CPU time per document (alternated rounds, median).

    PYTHONPATH=. python benchmarks/langid.py --prefixes 10000 5000 3000 2000 1000 --crawl /tmp/lid/run --no-speed

Web pages (`--web DIR`, a make_pipeline_input.py --jsonl directory): the default stage on its original
pages (benchmarks/toxicity.py's loader; tune / report halves by a hash of the URL): rejected share and
reasons with no list, `[en]` and `[de, fr, en]`; against benchmarks/data/langid_web_labels.tsv (pages a
reader read and judged) the rejected pages in an allowed language and the labels' verdicts; who is
right where CLD2 relabels, and where langid disagrees with CLD2 or the HPLT sample's own label; the
candidate changes (Unicode spaces, whole text, longest lines) per half; and the stage's speed against
`unicode_spaces: false` on every document of DIR.

    PYTHONPATH=. python benchmarks/langid.py --web /tmp/refinery-bench/jsonl56 --corpora ../shared/corpora --repeats 7

CLD2 second opinion (`--cld2`): which languages CLD2 is reliable on, the rule, and what it rescues.
  * Reliability: on the sentences of the TUNING half, per language, the precision of CLD2's counted
    answers (reliable, top language's share >= min_percent) naming it and the share of its sentences it
    names; the reliable set is where both pass (min_precision, min_recall). The rule's parameters
    (min_percent, top_k, min_precision, min_recall) are chosen on the tuning half: highest mean accuracy
    over sentences and documents with no language below its accuracy without CLD2.
  * Report half: per-language accuracy, without CLD2 / the previous rule (any CLD2 answer, any language) /
    the rule, on single sentences and 10-sentence documents; the languages lid.176 knows and CLD2 does not.
  * Rescues: documents kept below their threshold because CLD2 confirmed the label, and their precision,
    on report-half sentences and pairs of sentences (right when the label is the gold) plus mixed-language
    text (two languages' sentences side by side, words of two languages interleaved) and garbled text
    (letters shuffled within words), which should never be rescued.

    PYTHONPATH=. python benchmarks/langid.py --cld2 [--write-cld2-rule]
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from pipeline.schema import make_record, records_to_table
from stages.langid import FASTTEXT_K, LangID, bundled_model_path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script without PYTHONPATH
from benchmarks._timing import best_time  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = ROOT / "stages" / "data" / "langid_thresholds.json"
CLD2_RULE = ROOT / "stages" / "data" / "cld2_rule.json"
CONFIGS = {
    "fasttext 0.65": dict(min_score=0.65, groups=[], second_opinion=False, unicode_spaces=False),
    "thresholds": dict(groups=[], second_opinion=False),
    "+groups": dict(second_opinion=False),
    "+cld2 (default)": dict(),
}


def load(corpora: Path) -> dict[str, list[str]]:
    folder = corpora / "langid" / "lingua_sentences"
    return {
        p.stem: [l.strip() for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]
        for p in sorted(folder.glob("*.txt"))
        if len(p.stem) == 2
    }


def documents(sentences: list[str], size: int = 10) -> list[str]:
    return ["\n".join(sentences[i : i + size]) for i in range(0, len(sentences) - size + 1, size)]


def halves(data: dict[str, list[str]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(gold, document) pairs: tuning half (even documents), report half (odd documents)."""
    tune, report = [], []
    for gold, sents in data.items():
        for i, doc in enumerate(documents(sents)):
            (tune if i % 2 == 0 else report).append((gold, doc))
    return tune, report


def second_set(corpora: Path) -> list[tuple[str, str]]:
    import zstandard

    def jsonl(path: Path) -> list[dict]:
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return [json.loads(l) for l in io.TextIOWrapper(raw, encoding="utf-8") if l.strip()]

    q = corpora / "quality"
    out = [(r["lang"], r["text"]) for r in jsonl(q / "xquad_wikipedia" / "xquad_paragraphs.jsonl.zst")]
    out += [("ja", r["text"]) for r in jsonl(q / "jaquad_wikipedia" / "jaquad_contexts.jsonl.zst")[:240]]
    return out


def table(texts: list[str]):
    return records_to_table(
        make_record(source="bench", kind="jsonl", file="lingua", offset=i, text=t) for i, t in enumerate(texts)
    )


def norm(label: str | None) -> str | None:
    return "nb" if label == "no" else label


def derive_thresholds(tune: list[tuple[str, str]], golds: set[str]) -> dict[str, float]:
    """FineWeb-2's rule per label: clip(median - std, 0.3, 0.9) of the (group) scores of the tuning
    documents fastText labels with it; labels of lingua languages with >= 10 such documents.

    Only documents of the languages lid.176 knows: lingua has 8 unknown languages of 75, ten times
    their share of the web, and their documents, labelled `en` with low scores, would pull `en`'s
    threshold down to the 0.3 floor."""
    stage = LangID(second_opinion=False, min_score=0.0)
    tune = [(g, t) for g, t in tune if g in golds]
    out = stage.annotate(table([t for _, t in tune]))
    scores = defaultdict(list)
    for lang, s, gs in zip(*(out.column(c).to_pylist() for c in ("lang", "lang_score", "lang_group_score"))):
        if lang is not None:
            scores[lang].append(gs if gs is not None else s)
    return {
        lang: round(max(0.3, min(0.9, statistics.median(x) - statistics.pstdev(x))), 4)
        for lang, x in sorted(scores.items())
        if norm(lang) in golds and len(x) >= 10
    }


def evaluate(config: dict, docs: list[tuple[str, str]], known: set[str]) -> dict:
    """Per gold language: accuracy, kept share of right-labelled documents (no list / [gold]); CLD2 calls."""
    stage = LangID(**config)
    out = stage.annotate(table([t for _, t in docs]))
    langs = out.column("lang").to_pylist()
    keep_any = [r is None for r in stage.decide(out)]
    per = defaultdict(lambda: {"n": 0, "right": 0, "kept_any": 0, "kept_gold": 0, "cld2": 0, "wrong": defaultdict(int)})
    golds = sorted({g for g, _ in docs})
    rows_of = defaultdict(list)
    for i, (g, _) in enumerate(docs):
        rows_of[g].append(i)
    cld2 = out.column("lang_cld2").to_pylist()
    for g in golds:
        idx = rows_of[g]
        # a language lid.176 does not know is refused as an allowed language: none of its documents is kept
        keep_gold = ([r is None for r in LangID(languages=[g], **config).decide(out.take(idx))] if g in known
                     else [False] * len(idx))
        p = per[g]
        for j, i in enumerate(idx):
            p["n"] += 1
            p["cld2"] += cld2[i] is not None
            if norm(langs[i]) == g:
                p["right"] += 1
                p["kept_any"] += keep_any[i]
                p["kept_gold"] += keep_gold[j]
            else:
                p["wrong"][langs[i]] += 1
    k = [g for g in golds if g in known]
    right = sum(per[g]["right"] for g in k)
    return {
        "per": per,
        "accuracy": sum(per[g]["right"] / per[g]["n"] for g in k) / len(k),
        "kept_any": sum(per[g]["kept_any"] for g in k) / max(1, right),
        "kept_gold": sum(per[g]["kept_gold"] for g in k) / max(1, right),
        "cld2_share": sum(per[g]["cld2"] for g in golds) / sum(per[g]["n"] for g in golds),
    }


def web_pages(corpora: Path) -> None:
    """Real web pages (HPLT sample, 192 with text): how often CLD2 is asked and what is kept."""
    import zstandard

    texts = []
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        texts += [t for t in (json.loads(l).get("t") for l in io.TextIOWrapper(raw, encoding="utf-8", errors="replace")) if t]
    tab = table(texts)
    old, new = LangID(**CONFIGS["fasttext 0.65"]), LangID()
    a, b = old.annotate(tab), new.annotate(tab)
    kept_old = sum(r is None for r in old.decide(a))
    kept_new = sum(r is None for r in new.decide(b))
    asked = sum(x is not None for x in b.column("lang_cld2").to_pylist())
    relabelled = sum(x != y for x, y in zip(a.column("lang").to_pylist(), b.column("lang").to_pylist()))
    print(f"HPLT web pages: {len(texts)}; CLD2 asked for {asked} ({asked / len(texts):.0%}); kept with no list: "
          f"fasttext 0.65 {kept_old}, default {kept_new}; label changed by the default: {relabelled}")


WEB_LABELS = ROOT / "benchmarks" / "data" / "langid_web_labels.tsv"
WEB_SETTINGS = {"no list": None, "languages: [en]": ["en"], "languages: [de, fr, en]": ["de", "fr", "en"]}
# OpenLID (HPLT) labels are ISO 639-3 with a script; lid.176 answers ISO 639-1.
ISO3 = {"eng": "en", "deu": "de", "spa": "es", "jpn": "ja", "rus": "ru", "zho": "zh", "kor": "ko", "ron": "ro",
        "dan": "da", "fra": "fr", "ita": "it", "por": "pt", "slk": "sk", "bul": "bg", "srp": "sr", "tat": "tt",
        "mya": "my", "arb": "ar", "nld": "nl", "swe": "sv", "bos": "bs", "ces": "cs", "mlt": "mt", "tur": "tr",
        "jav": "jv", "pol": "pl", "pes": "fa", "som": "so", "tha": "th", "zul": "zu", "lit": "lt", "hat": "ht",
        "nno": "nn", "vie": "vi", "kat": "ka", "hin": "hi"}


def longest_lines(text: str, budget: int = 3_000) -> str:
    """The longest lines of `text` up to `budget` characters (a candidate: main paragraphs, not the prefix)."""
    out, n = [], 0
    for line in sorted((l.strip() for l in text.splitlines() if l.strip()), key=len, reverse=True):
        out.append(line)
        n += len(line)
        if n >= budget:
            break
    return "\n".join(out)


def web_rows(directory: Path, corpora: Path) -> list[dict]:
    """The original pages of a make_pipeline_input.py --jsonl directory (benchmarks/toxicity.py's loader:
    url, half by a hash of the URL, text), with the HPLT sample's own label where the page comes from it
    and the reader's judgement where benchmarks/data/langid_web_labels.tsv has one."""
    import zstandard

    from benchmarks.toxicity import web_pages as original_pages

    hplt = {}
    for name in ("hplt_sample100_CC.jsonl.zst", "hplt_sample100_IAwide.jsonl.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(corpora / "web" / name, "rb"))
        for line in io.TextIOWrapper(raw, encoding="utf-8", errors="replace"):
            r = json.loads(line)
            if r.get("lang"):  # make_pipeline_input.py writes the URL with spaces as %20
                hplt[r["u"].replace(" ", "%20")] = ISO3.get(r["lang"].split("_")[0], r["lang"])
    labels = {}
    for line in WEB_LABELS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            url, _, because, lang, reader, kind, right, _ = line.split("\t")
            labels[url] = {"because": because, "lang": lang, "reader": reader, "kind": kind, "right": right}
    rows = [{"url": r["url"], "half": r["half"], "text": r["text"]} for r in original_pages(directory)]
    for r in rows:
        r["hplt"] = hplt.get(r["url"])
        r["read"] = labels.get(r["url"])
    return rows


def verdict(row: dict, lang: str | None) -> str:
    """yes / no / unclear / unread: is `lang` right for a page the reader read? A label other than the
    one read is right when it is the reader's language (never for pages judged unclear)."""
    read = row["read"]
    if read is None:
        return "unread"
    if lang == read["lang"]:
        return read["right"]
    return "unclear" if read["right"] == "unclear" else ("yes" if lang == read["reader"] else "no")


def web(directory: Path, corpora: Path) -> None:
    """Language ID on real web pages: reject shares and reasons, the read pages' verdicts, disagreements
    with CLD2 and HPLT's OpenLID, and the candidate changes, per half (tune / report)."""
    from stages._cld2 import detect

    rows = web_rows(directory, corpora)
    texts = [r["text"] for r in rows]
    tab = table(texts)
    halves_of = {"tune": [i for i, r in enumerate(rows) if r["half"] == "tune"],
                 "report": [i for i, r in enumerate(rows) if r["half"] == "report"]}
    read = [i for i, r in enumerate(rows) if r["read"]]
    print(f"\nweb pages (originals of {directory}): {len(rows)} (tune {len(halves_of['tune'])}, report "
          f"{len(halves_of['report'])}); read by a reader ({WEB_LABELS.relative_to(ROOT)}): {len(read)}")

    stage = LangID()
    out = stage.annotate(tab)
    langs = out.column("lang").to_pylist()
    decisions = {name: LangID(languages=langs_).decide(out) for name, langs_ in WEB_SETTINGS.items()}
    print("| setting | half | pages | rejected | language_not_allowed | language_score_too_low |"
          " rejected pages read | of them in an allowed language (reader) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, dec in decisions.items():
        allowed = stage.allowed("bench") if WEB_SETTINGS[name] is None else LangID(languages=WEB_SETTINGS[name]).allowed("bench")
        for half, idx in (*halves_of.items(), ("both", range(len(rows)))):
            rej = [i for i in idx if dec[i]]
            rej_read = [i for i in rej if rows[i]["read"]]
            lost = [i for i in rej_read if allowed is None or rows[i]["read"]["reader"] in allowed]
            n = len(idx)
            print(f"| {name} | {half} | {n} | {len(rej)} ({len(rej) / n:.2%}) "
                  f"| {sum(dec[i] == 'language_not_allowed' for i in idx)} | {sum(dec[i] == 'language_score_too_low' for i in idx)} "
                  f"| {len(rej_read)} | {len(lost)} |")
    for name, dec in decisions.items():
        kinds: dict[tuple, int] = defaultdict(int)
        for i in read:
            if dec[i]:
                kinds[(rows[i]["read"]["kind"], verdict(rows[i], langs[i]))] += 1
        print(f"rejected read pages, {name}, (kind, label right): "
              + ", ".join(f"{k} {v}: {n}" for (k, v), n in sorted(kinds.items(), key=lambda kv: -kv[1])))

    verdicts = defaultdict(int)
    for i in read:
        verdicts[verdict(rows[i], langs[i])] += 1
    print(f"labels of the read pages (default stage): right {verdicts['yes']}, wrong {verdicts['no']}, "
          f"unclear (mixed) {verdicts['unclear']}")
    sample = [i for i in read if "sample-kept" in rows[i]["read"]["because"]]
    print(f"random sample of kept pages: {sum(verdict(rows[i], langs[i]) == 'yes' for i in sample)} of {len(sample)} right, "
          f"{sum(verdict(rows[i], langs[i]) == 'no' for i in sample)} wrong, "
          f"{sum(verdict(rows[i], langs[i]) == 'unclear' for i in sample)} unclear")

    top = [p[0][0] if p else None for p in stage.predict(texts, k=1)]
    relabelled = [i for i in range(len(rows)) if langs[i] != top[i]]
    tally = defaultdict(int)
    for i in relabelled:
        mine, ft = verdict(rows[i], langs[i]), verdict(rows[i], top[i])
        tally[mine if mine in ("unread", "unclear") else "CLD2" if mine == "yes" else "fastText" if ft == "yes" else "neither"] += 1
    print(f"CLD2 replaced fastText's label on {len(relabelled)} pages; right: "
          + ", ".join(f"{k} {v}" for k, v in sorted(tally.items(), key=lambda kv: -kv[1])))

    # who is right where langid and another model disagree (outside confusable groups)
    def differ(a: str | None, b: str | None) -> bool:
        return a is not None and b is not None and a != b and b not in (stage.group(a) or ())

    cld2 = [detect(t[:3000]) for t in texts]
    for other, theirs in (("CLD2 (reliable)", [g if ok else None for g, ok in cld2]), ("HPLT OpenLID", [r["hplt"] for r in rows])):
        idx = [i for i in range(len(rows)) if differ(langs[i], theirs[i])]
        tally: dict[str, int] = defaultdict(int)
        for i in idx:
            mine, their = verdict(rows[i], langs[i]), verdict(rows[i], theirs[i])
            tally["unread" if mine == "unread" else "unclear" if mine == "unclear" else
                  "langid" if mine == "yes" else other if their == "yes" else "neither"] += 1
        print(f"langid vs {other}: {sum(t is not None for t in theirs)} pages with an answer, {len(idx)} disagree; right: "
              + ", ".join(f"{k} {v}" for k, v in sorted(tally.items(), key=lambda kv: -kv[1])))

    # candidates, each against the stage without it: Unicode spaces (the default since this measurement)
    # against the stage before; scoring the whole text or the longest lines against the default
    before = LangID(unicode_spaces=False).annotate(tab).column("lang").to_pylist()
    candidates = {
        "unicode_spaces (default) vs before": (langs, before),
        "whole text (max_chars: null) vs default": (LangID(max_chars=None).annotate(tab).column("lang").to_pylist(), langs),
        "longest lines (3,000 characters) vs default": (
            LangID().annotate(table([longest_lines(t) for t in texts])).column("lang").to_pylist(), langs),
    }
    print("\ncandidates: labels changed, and the new label per the reader")
    print("| candidate | half | labels changed | right after | wrong after | unclear | unread | pages |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name, (cand, ref) in candidates.items():
        for half, idx in halves_of.items():
            changed = [i for i in idx if cand[i] != ref[i]]
            v = defaultdict(int)
            for i in changed:
                v[verdict(rows[i], cand[i])] += 1
            pages = "; ".join(f"{rows[i]['url'][:40]} {ref[i]}->{cand[i]} ({verdict(rows[i], cand[i])})" for i in changed)
            print(f"| {name} | {half} | {len(changed)} | {v['yes']} | {v['no']} | {v['unclear']} | {v['unread']} | {pages} |")


def web_speed(directory: Path, rounds: int) -> None:
    """CPU time of the default stage against the same stage without `unicode_spaces`, on every document
    of the directory (copies included), one process, set-up and the memo of token rows warm, alternated;
    the median ratio over `rounds`."""
    import time

    docs = [json.loads(line)["text"] for path in sorted(directory.glob("*.jsonl")) if path.name != "manifest.jsonl"
            for line in open(path, encoding="utf-8")]
    tab = table(docs)
    on, off = LangID(), LangID(unicode_spaces=False)
    for st in (on, off):
        st.decide(st.annotate(tab))
    ratios, t_on = [], []
    for _ in range(rounds):
        t = time.process_time()
        off.decide(off.annotate(tab))
        t_off = time.process_time() - t
        t = time.process_time()
        on.decide(on.annotate(tab))
        t_on.append(time.process_time() - t)
        ratios.append(t_off / t_on[-1])
    print(f"\nspeed, {len(docs)} documents: default {len(docs) / statistics.median(t_on):,.0f} docs per CPU-s; "
          f"speed against `unicode_spaces: false` {statistics.median(ratios):.3f} (median of {rounds} alternated rounds)")


def speed(docs: list[str], repeats: int) -> None:
    tab = table(docs)
    mb = sum(len(t.encode("utf-8")) for t in docs) / 1e6
    old, new = LangID(**CONFIGS["fasttext 0.65"]), LangID()
    old.ensure_setup()
    new.ensure_setup()

    def run(stage):
        return lambda: stage.decide(stage.annotate(tab))

    from datatrove.data import Document
    from datatrove.pipeline.filters import LanguageFilter
    from fasttext.FastText import _FastText

    dt = LanguageFilter(languages=["en", "de"])
    dt.model._model = _FastText(model_path=str(bundled_model_path()))
    dt_docs = [Document(text=t, id=str(i)) for i, t in enumerate(docs)]

    def theirs():
        for d in dt_docs:
            dt.filter(d)

    t_old = t_new = t_dt = float("inf")
    for _ in range(repeats):  # alternate, so load changes hit all three alike
        t_old = min(t_old, best_time(run(old), 1))
        t_new = min(t_new, best_time(run(new), 1))
        t_dt = min(t_dt, best_time(theirs, 1))
    print(f"speed on {len(docs)} docs ({mb:.2f} MB), 1 core, CPU time, best of {repeats} alternating runs:")
    print("| tool | docs/s | MB/s | speed vs fastText-only |")
    print("|---|---:|---:|---:|")
    for name, t in (("refinery langid, fastText only (0.65)", t_old), ("refinery langid default (+cld2)", t_new),
                    ("datatrove LanguageFilter", t_dt)):
        print(f"| {name} | {len(docs) / t:,.0f} | {mb / t:.2f} | {t_old / t:.2f} |")

    # The fastText-only configuration still makes datatrove's decisions.
    same = LangID(languages=["en", "de"], **CONFIGS["fasttext 0.65"])
    ours = [r is None for r in same.decide(same.annotate(tab))]
    agree = sum(a == bool(dt.filter(Document(text=t, id=str(i)))) for i, (a, t) in enumerate(zip(ours, docs)))
    print(f"keep/drop agreement of `fasttext 0.65` with datatrove LanguageFilter([en, de]): {agree}/{len(docs)}")


def crawl_texts(run: Path) -> list[str]:
    import pyarrow.parquet as pq

    files = sorted((run / "kept").glob("*.parquet")) + sorted((run / "rejects" / "langid").glob("*.parquet"))
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist() if t]


def prefixes(sizes: list[int], sets, known: set[str], crawl: list[str], repeats: int) -> None:
    import time

    base = 10_000
    print(f"\nprefix (max_chars) of the default stage; base {base}")
    print("| max_chars | set | accuracy | kept, no list | kept, languages: [gold] |\n|---|---|---:|---:|---:|")
    for n in sizes:
        for set_name, docs in sets:
            r = evaluate({"max_chars": n}, docs, known)
            print(f"| {n} | {set_name} | {r['accuracy']:.4f} | {r['kept_any']:.4f} | {r['kept_gold']:.4f} |", flush=True)
    if not crawl:
        return
    tab = table(crawl)
    chars = sum(map(len, crawl))
    out = {}
    for n in sorted(set(sizes) | {base}):
        st, en = LangID(max_chars=n), LangID(max_chars=n, languages=["en"])
        a = st.annotate(tab)
        out[n] = (a.column("lang").to_pylist(), st.decide(a), en.decide(a))
    cpu: dict[int, list[float]] = {n: [] for n in out}
    for _ in range(repeats):  # alternated rounds
        for n in out:
            st = LangID(max_chars=n)
            st.ensure_setup()
            t0 = time.process_time()
            st.decide(st.annotate(tab))
            cpu[n].append(time.process_time() - t0)
    ref = out[base]
    print(f"\n{len(crawl)} crawl documents ({chars / 1e6:.1f} M characters, {sum(len(t) > base for t in crawl)} longer than {base}):")
    print("| max_chars | same `lang` as 10,000 | same decision, no list | same decision, languages: [en] | CPU s (median) | docs per CPU-s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, (langs, dec, dec_en) in out.items():
        same = [sum(x == y for x, y in zip(a, b)) / len(crawl) for a, b in zip((langs, dec, dec_en), ref)]
        t = statistics.median(cpu[n])
        print(f"| {n} | {same[0]:.2%} | {same[1]:.2%} | {same[2]:.2%} | {t:.2f} | {len(crawl) / t:,.0f} |")


# -- the CLD2 second opinion ----------------------------------------------------------------------
def sentences(docs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(g, line) for g, d in docs for line in d.split("\n")]


def cld2_reliability(units: list[tuple[str, str]], counts) -> dict[str, dict]:
    """Per language: how many units, how often CLD2's counted answer names it, and how often rightly."""
    import stages.langid

    per: dict[str, dict] = defaultdict(lambda: {"n": 0, "said": 0, "right": 0})
    for gold, text in units:
        a = stages.langid._cld2_analyse(text)
        per[gold]["n"] += 1
        if counts(a):
            said = norm(a.lang)
            per[said]["said"] += 1
            per[gold]["right"] += said == gold
    return per


def reliable_set(per: dict[str, dict], min_precision: float, min_said: int = 20) -> list[str]:
    """Languages CLD2 names precisely (at least `min_said` times)."""
    return sorted(g for g, p in per.items() if p["said"] >= min_said and p["right"] / p["said"] >= min_precision)


def recognised_set(per: dict[str, dict], min_recall: float) -> list[str]:
    """Languages whose sentences CLD2 names at least `min_recall` of the time."""
    return sorted(g for g, p in per.items() if p["n"] and p["right"] / p["n"] >= min_recall)


class Scored:
    """fastText's pairs for a set of units, computed once; identify + decide under any CLD2 rule."""

    def __init__(self, units: list[tuple[str, str]]):
        self.units = units
        self.stage = LangID()
        self.pairs = self.stage.predict([t for _, t in units], k=FASTTEXT_K)

    def run(self, rule, second_opinion: bool = True, languages=None) -> tuple[list[dict], list[str | None]]:
        stage = LangID(second_opinion=second_opinion, languages=languages)
        stage.model, stage.scorer, stage._use_cld2 = self.stage.model, self.stage.scorer, second_opinion
        stage._ready = True
        if rule is not None:
            stage.cld2_rule = rule
        rows = [stage.identify(t, p, "bench") for (_, t), p in zip(self.units, self.pairs)]
        cols = {k: [r[k] for r in rows] for k in rows[0]}
        tab = pa.table({"source": ["bench"] * len(rows), "lang": pa.array(cols["lang"], pa.string()),
                        "lang_score": pa.array(cols["lang_score"], pa.float32()),
                        "lang_group_score": pa.array(cols["lang_group_score"], pa.float32()),
                        "lang_cld2": pa.array(cols["lang_cld2"], pa.string())})
        return rows, stage.decide(tab)


def previous_rule():
    """The rule before reliability was measured: any reliable CLD2 answer counts, for any language."""
    from stages._cld2 import known as cld2_known
    from stages.langid import Cld2Rule

    probe = LangID()
    probe.ensure_setup()
    every = {l[9:] for l in probe.model.get_labels()} | set(cld2_known()) | {"nb"}
    return Cld2Rule(every, every, 0, 0, True, 0.0)


def per_language_accuracy(scored: Scored, rows: list[dict]) -> dict[str, float]:
    right, n = defaultdict(int), defaultdict(int)
    for (g, _), r in zip(scored.units, rows):
        n[g] += 1
        right[g] += norm(r["lang"]) == g
    return {g: right[g] / n[g] for g in n}


def rescues(scored: "Scored", rule) -> dict[str, int]:
    """Documents kept (no allowed list) with their score below the threshold, by kind: right (clean text,
    gold label), wrong (clean text, another label), mixed, garbled."""
    rows, dec = scored.run(rule)
    probe = LangID()
    tally = {"right": 0, "wrong": 0, "mixed": 0, "garbled": 0}
    for (g, _), row, d in zip(scored.units, rows, dec):
        eff = row["lang_group_score"] if row["lang_group_score"] is not None else row["lang_score"]
        if d is None and row["lang"] is not None and eff < probe.threshold(row["lang"], "bench"):
            tally[g if g in ("mixed", "garbled") else "right" if norm(row["lang"]) == g else "wrong"] += 1
    return tally


def rescue_units(docs: list[tuple[str, str]], known: set[str]) -> list[tuple[str, str]]:
    """Single sentences and pairs of sentences of the languages lid.176 knows, mixed-language and garbled text."""
    sents = sentences(docs)
    pairs_ = [(g, f"{a} {b}") for (g, a), (g2, b) in zip(sents[::2], sents[1::2]) if g == g2]
    return [(g, t) for g, t in sents + pairs_ if g in known] + mixed_and_garbled(sents)


MIN_RESCUE_PRECISION = 0.95


def choose_cld2_rule(tune: list[tuple[str, str]], known: set[str]) -> tuple[dict, list[str]]:
    """The rule's parameters, on the tuning half: among the rules with no language below its accuracy
    without CLD2 (sentences and documents of the languages lid.176 knows) and a rescue precision of at
    least MIN_RESCUE_PRECISION, the highest mean accuracy."""
    from stages.langid import Cld2Rule

    sets = [Scored(sentences(tune)), Scored(tune)]
    rescue_set = Scored(rescue_units(tune, known))
    off = [per_language_accuracy(s, s.run(None, second_opinion=False)[0]) for s in sets]
    log, best = [], None
    min_percent = 90
    # the sets: where CLD2's reliable answers (enough share of the text) are precise, and the languages it
    # names often; the score gate then applies to each answer
    per = cld2_reliability(sentences(tune), Cld2Rule((), (), min_percent, 0, False, 0.0).counts)
    for min_score in (500, 800):
        for min_precision in (0.9, 0.95):
            reliable = reliable_set(per, min_precision)
            for min_recall in (0.5, 0.8):
                recognised = recognised_set(per, min_recall)
                for top_k in (0, 5):
                    swaps = False  # with swaps, `nl` loses to `af` on every setting tried (docs/measurements)
                    rule = Cld2Rule(reliable, recognised, min_percent, top_k, swaps, min_score)
                    on = [per_language_accuracy(s, s.run(rule)[0]) for s in sets]
                    drops = [(g, round(o[g] - a[g], 3)) for o, a in zip(off, on) for g in a if g in known and a[g] < o[g]]
                    mean = statistics.mean(a[g] for a in on for g in a if g in known)
                    r = rescues(rescue_set, rule)
                    precision = r["right"] / max(1, sum(r.values()))
                    log.append(f"min_score {min_score}, min_precision {min_precision}, min_recall {min_recall}, top_k "
                               f"{top_k}: {len(reliable)} reliable, {len(recognised)} recognised, mean accuracy {mean:.4f}, "
                               f"drops {drops}, rescues {r} (precision {precision:.3f})")
                    print(log[-1], flush=True)
                    key = (not drops and precision >= MIN_RESCUE_PRECISION, -len(drops), mean)
                    if best is None or key > best[0]:
                        best = (key, dict(reliable=reliable, recognised=recognised, min_percent=min_percent,
                                          min_score=min_score, top_k=top_k, group_swaps=swaps,
                                          min_precision=min_precision, min_recall=min_recall))
    return best[1], log


def mixed_and_garbled(units: list[tuple[str, str]], seed: int = 0) -> list[tuple[str, str]]:
    """("mixed" | "garbled", text): two languages' sentences side by side, words of two languages
    interleaved, letters shuffled within words."""
    import random

    rnd = random.Random(seed)
    by = defaultdict(list)
    for g, t in units:
        by[g].append(t)
    pairs = [("en", "de"), ("en", "fr"), ("en", "es"), ("de", "nl"), ("es", "pt"), ("fr", "it"), ("ru", "uk"),
             ("pl", "cs"), ("en", "nl"), ("en", "it"), ("sv", "da"), ("en", "pl"), ("de", "fr"), ("en", "tr")]
    out = []
    for a, b in pairs:
        for i in range(60):
            x, y = rnd.choice(by[a]), rnd.choice(by[b])
            out.append(("mixed", f"{x} {y}"))
            wx, wy = x.split(), y.split()
            out.append(("mixed", " ".join(w for pair in zip(wx, wy) for w in pair)))
    for g in sorted(by):
        for t in rnd.sample(by[g], min(20, len(by[g]))):
            out.append(("garbled", " ".join("".join(rnd.sample(w, len(w))) for w in t.split())))
    return out


def cld2_report(tune, report, known: set[str], write: bool) -> None:
    from functools import lru_cache

    import stages.langid
    from stages._cld2 import known as cld2_known
    from stages.langid import Cld2Rule

    # CLD2's answer per text, once: the rules compared below differ only in how they use it
    stages.langid._cld2_analyse = lru_cache(maxsize=None)(stages.langid._cld2_analyse)

    if write:
        chosen, log = choose_cld2_rule(tune, known)
        per = cld2_reliability(sentences(tune), Cld2Rule((), (), chosen["min_percent"], 0, False, 0.0).counts)
        CLD2_RULE.write_text(json.dumps({
            **chosen,
            "data": "lingua_sentences, the sentences of the even-numbered 10-sentence documents (tuning half), 75 languages",
            "command": "PYTHONPATH=. python benchmarks/langid.py --cld2 --write-cld2-rule",
            "measured": {g: {"sentences": p["n"], "cld2_named": p["said"], "right": p["right"]} for g, p in sorted(per.items())},
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {CLD2_RULE}: {chosen}")
    rule = Cld2Rule.bundled()
    old = previous_rule()
    probe = LangID()
    probe.ensure_setup()
    labels = sorted(l[9:] for l in probe.model.get_labels())
    unknown = [l for l in labels if l not in cld2_known()]
    print(f"\nlid.176 labels CLD2 does not know ({len(unknown)} of {len(labels)}; never replaced, never confirmed): "
          + " ".join(unknown))
    print(f"rule (tuning half): answers count with min_percent {rule.min_percent}, min_score {rule.min_score:g}; "
          f"top_k {rule.top_k}, group_swaps {rule.group_swaps}")
    print(f"CLD2's reliable languages (precision >= {rule.min_precision}; may replace or confirm a label): "
          f"{len(rule.reliable)}: " + " ".join(sorted(rule.reliable)))
    print(f"languages CLD2 recognises (recall >= {rule.min_recall}; may be replaced): {len(rule.recognised)}: "
          + " ".join(sorted(rule.recognised)))
    per_r = cld2_reliability(sentences(report), Cld2Rule((), (), rule.min_percent, 0, False, 0.0).counts)
    print("\nCLD2 on the report half's sentences, per language (answers CLD2 calls reliable, share >= min_percent):")
    print("| lang | sentences | CLD2 names it | precision | recall | reliable | recognised |")
    print("|---|---:|---:|---:|---:|---|---|")
    for g in sorted(g for g in per_r if per_r[g]["n"]):
        p = per_r[g]
        prec = f"{p['right'] / p['said']:.3f}" if p["said"] else "-"
        print(f"| {g} | {p['n']} | {p['said']} | {prec} | {p['right'] / p['n']:.3f} | {'yes' if rule.trusts(g) else ''} "
              f"| {'yes' if rule.may_replace(g) else ''} |")

    for set_name, units in (("sentences", sentences(report)), ("10-sentence documents", report)):
        sc = Scored(units)
        acc = {name: per_language_accuracy(sc, sc.run(r, second_opinion=so)[0])
               for name, r, so in (("off", None, False), ("previous", old, True), ("rule", rule, True))}
        golds = sorted(acc["off"])
        k = [g for g in golds if g in known]
        print(f"\nreport half, {set_name}: accuracy per language, second opinion off / previous rule / this rule "
              f"(mean over the {len(k)} languages lid.176 knows: " + ", ".join(
                  f"{n} {statistics.mean(a[g] for g in k):.4f}" for n, a in acc.items()) + ")")
        print("| lang | off | previous | rule | rule - off |")
        print("|---|---:|---:|---:|---:|")
        for g in golds:
            d = acc["rule"][g] - acc["off"][g]
            flag = "" if g in known else " (unknown to lid.176)"
            print(f"| {g}{flag} | {acc['off'][g]:.3f} | {acc['previous'][g]:.3f} | {acc['rule'][g]:.3f} | {d:+.3f} |")
        drops = [g for g in k if acc["rule"][g] < acc["off"][g]]
        print(f"languages lid.176 knows whose accuracy drops with this rule: {drops or 'none'}")

    # rescues: kept below the threshold because CLD2 confirmed the label
    units = rescue_units(report, known)
    sc = Scored(units)
    print("\nrescues on the report half (no allowed list; a rescue = kept with its score below the threshold):")
    print("| rule | rescued | right (clean text, gold label) | wrong label | mixed-language | garbled | precision |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in (("previous", old), ("this rule", rule)):
        tally = rescues(sc, r)
        n = sum(tally.values())
        print(f"| {name} | {n} | {tally['right']} | {tally['wrong']} | {tally['mixed']} | {tally['garbled']} "
              f"| {tally['right'] / max(1, n):.3f} |")
    print(f"(units: {sum(g in known for g, _ in units)} clean sentences and sentence pairs, "
          f"{sum(g == 'mixed' for g, _ in units)} mixed, {sum(g == 'garbled' for g, _ in units)} garbled)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the per-language tables")
    ap.add_argument("--write-thresholds", action="store_true", help=f"derive and write {THRESHOLDS.relative_to(ROOT)}")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--prefixes", type=int, nargs="*", help="max_chars values to compare (then stop)")
    ap.add_argument("--crawl", type=Path, help="with --prefixes: a finished run whose kept/ and rejects/langid/ hold the texts langid saw")
    ap.add_argument("--cld2", action="store_true", help="the CLD2 second opinion: reliability, per-language table, rescues (then stop)")
    ap.add_argument("--write-cld2-rule", action="store_true", help=f"with --cld2: choose the rule on the tuning half, write {CLD2_RULE.relative_to(ROOT)}")
    ap.add_argument("--web", type=Path, help="a make_pipeline_input.py --jsonl directory: langid on its original pages (then stop)")
    args = ap.parse_args(argv)

    if args.web:
        web(args.web, args.corpora)
        if not args.no_speed:
            web_speed(args.web, args.repeats)
        return
    data = load(args.corpora)
    tune, report = halves(data)
    probe = LangID(min_score=0.65)
    probe.ensure_setup()
    known = {l[9:] for l in probe.model.get_labels()} | {"nb"}
    known_gold = {g for g in data if g in known}
    if args.cld2:
        cld2_report(tune, report, known, args.write_cld2_rule)
        return
    if args.write_thresholds:
        th = derive_thresholds(tune, known_gold)
        THRESHOLDS.parent.mkdir(exist_ok=True)
        THRESHOLDS.write_text(json.dumps({
            "model": "lid.176.ftz (stages/models)",
            "rule": "clip(median - std, 0.3, 0.9) of the scores (group-summed for confusable groups) of the "
                    "documents labelled with the language (FineWeb-2)",
            "data": "lingua_sentences, 10-sentence documents, even-numbered (tuning half), of the 67 languages lid.176 knows",
            "command": "PYTHONPATH=. python benchmarks/langid.py --write-thresholds",
            "thresholds": th,
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {len(th)} thresholds to {THRESHOLDS}")
        return

    if args.speed_only:
        speed([t for _, t in tune + report], args.repeats)
        return
    second = second_set(args.corpora)
    sets = (("lingua tuning half", tune), ("lingua report half", report), ("xquad + jaquad", second))
    if args.prefixes:
        prefixes(args.prefixes, sets, known, crawl_texts(args.crawl) if args.crawl else [], args.repeats)
        return
    results = {}
    print(f"languages: {len(data)}; unknown to lid.176: {', '.join(sorted(set(data) - known))}")
    print("| configuration | set | accuracy | kept, no list | kept, languages: [gold] | CLD2 asked |")
    print("|---|---|---:|---:|---:|---:|")
    for name, cfg in CONFIGS.items():
        for set_name, docs in sets:
            r = evaluate(cfg, docs, known)
            results[(name, set_name)] = r
            print(f"| {name} | {set_name} | {r['accuracy']:.4f} | {r['kept_any']:.4f} | {r['kept_gold']:.4f} "
                  f"| {r['cld2_share']:.3f} |")

    if args.markdown:
        for set_name in ("lingua report half", "xquad + jaquad"):
            old, new = results[("fasttext 0.65", set_name)]["per"], results[("+cld2 (default)", set_name)]["per"]
            print(f"\nper language, {set_name}: accuracy and kept share (languages: [gold]) of right-labelled documents")
            print("| lang | docs | acc fastText 0.65 | acc default | kept fastText 0.65 | kept default | most frequent wrong label (default) |")
            print("|---|---:|---:|---:|---:|---:|---|")
            for g in sorted(new):
                o, n = old[g], new[g]
                wrong = max(n["wrong"].items(), key=lambda kv: kv[1])[0] if n["wrong"] else ""
                mark = "" if g in known else " (unknown to lid.176)"
                print(f"| {g}{mark} | {n['n']} | {o['right'] / o['n']:.2f} | {n['right'] / n['n']:.2f} "
                      f"| {o['kept_gold'] / max(1, o['right']):.2f} | {n['kept_gold'] / max(1, n['right']):.2f} | {wrong} |")
    web_pages(args.corpora)
    if not args.no_speed:
        speed([t for _, t in tune + report], args.repeats)


if __name__ == "__main__":
    main()
