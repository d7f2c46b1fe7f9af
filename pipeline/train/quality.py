"""Train a DCLM-style fastText quality classifier: `refinery train-quality POSITIVES NEGATIVES`.

POSITIVES and NEGATIVES are files or folders of documents: `.jsonl` (optionally `.gz`/`.zst`,
the `text` field), `.parquet` (the `text` column, e.g. a run's kept/ or rejects/ folder) or
plain text (one document per line). The model labels `__label__hq` / `__label__cc`, as DCLM's,
so the quality stage's `classifier:` section reads it unchanged.

`refinery train-quality --default` rebuilds the multilingual model shipped in the package
(stages/models/quality.ftz) from ../shared/corpora, using only sets whose licence allows shipping
a model trained on them (docs/quality.md has the table per language):
  positives  prose: WikiText-2 validation (CC BY-SA 3.0, detokenised), the Project Gutenberg books
             (public domain), OpenStax's *Introduction to Python Programming* (CC BY 4.0), XQuAD's
             Wikipedia paragraphs in 12 languages (CC BY-SA 4.0), JaQuAD's Japanese Wikipedia
             paragraphs (CC BY-SA 3.0) and lingua's news sentences 0-499 per language (Apache-2.0
             repository, Leipzig corpora);
  negatives  short social messages and SMS: UCI SMS spam and ham (CC BY 4.0), Davidson tweets (MIT),
             Stormfront sentences (CC BY-SA 3.0), MLMA tweets en/fr/ar (MIT), GermEval 2018 de (CC BY),
             ToLD-Br pt (CC BY-SA), COLD zh (Apache), japanese-toxic-dataset ja (Apache), OffensEval
             2020 tr and DKHate da (CC BY), BEEP! ko (CC BY-SA). Toxic and non-toxic messages alike:
             the register is what is low quality. BAN-PL is never read.
Positives are cut into paragraph chunks; short negatives are joined into documents of the same
length range, so length alone separates nothing. Mentions, URLs, retweet marks, hashtag signs,
emoji and HTML entities are removed from the negatives, WikiText's tokenisation is undone, and per
language the share of all-lowercase documents is made equal in both classes (MLMA was lowercased
by its authors), so no artefact of a corpus separates the classes. Per language the classes are
balanced; a language with only one class here (es, ru, el, hi, ro, th, vi have prose but no
licence-allowed negatives) is not trained on, since its words would then simply mean "high
quality", and is scored through what it shares with the others (measured in docs/quality.md).

Every set is split by a seeded shuffle (an XQuAD article and its translations go to one side);
fastText trains with thread=1 and the seed (same model bytes), quantised to <= 5 MB. Held-out
accuracy and ROC-AUC are printed per source and per language, and with --default also on sets
never trained on: WikiText-2 test, the OpenStax books under CC BY-NC-SA, Paloma's 4chan threads,
HatEval es/en and HateBR pt (NC), ru_paradetox (no licence file), the Hindi hostility set (research
only), and lingua's sentences 500-999 of 75 languages (clean text: their median score per language
shows whether the model learned languages instead of quality).

Then (`--default`, or `--default --page-score-only` for the existing model) the page score's weights
are fitted to the model (`fit_page_score`, stages/quality/page_score.py): per-language offsets from
lingua's sentences 0-499, and a logistic model on the tune half (by site hash) of trafilatura's eval
pages cut into article, boilerplate and link-list documents (pipeline/train/web_pages.py) plus
prose and chat of the training part. Only those numbers come from the web pages; the table printed
after them is the quality stage's `quality_score` on the report half, the second set of pages, the
held-out prose vs chat and clean text of every language.
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
# minn/maxn: character 2-4-grams carry a language without negatives here (es, ru, ...) on what it shares
# with the others (per-language ROC-AUC 0.994 mean against 0.956 for words alone: benchmarks/quality_classifier.py)
FASTTEXT_PARAMS = dict(lr=0.1, epoch=5, dim=32, wordNgrams=2, minn=2, maxn=4, bucket=200_000, loss="softmax", minCount=2)
QUANTIZE = dict(qnorm=True, retrain=True, cutoff=100_000, thread=1, verbose=0)
LANG_TOKENS = False  # the shipped model reads no language token (measured: docs/quality.md)
CHUNK_CHARS = (300, 3000)  # positives are cut into chunks of this many characters
DENSE_CHUNK_CHARS = (100, 1000)  # in zh, ja, ko, where a character holds about what a word does elsewhere
DENSE = ("zh", "ja", "ko")


@dataclass(frozen=True)
class Doc:
    text: str
    hq: bool
    source: str
    lang: str | None = None
    group: str | None = None  # held out together (an XQuAD article in every language: translations)


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
# retweet marks, mentions, URLs, entities, GermEval's line-break marker, hashtag signs
_NOISE = re.compile(r"(?:\b[Rr][Tt]\b:?(?=\s*@)|@\w+:?|https?://\S+|www\.\S+|&#?\w+;|\|LBR\||(?<!\w)#(?=\w))")
# emoji and pictographs, dingbats, variation selectors, zero-width joiner: a tweet's, not a page's
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0E\uFE0F\u200D]")


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
    """A message without what marks its platform (mentions, URLs, retweet marks, hashtag signs,
    emoji), so the classifier cannot tell the classes apart by those."""
    return " ".join(_EMOJI.sub(" ", _NOISE.sub(" ", html.unescape(text))).split())


def chunks(text: str, rng: random.Random, lang: str | None = None) -> Iterator[str]:
    """Paragraph-aligned chunks of CHUNK_CHARS characters (a random target per chunk)."""
    lo, hi = DENSE_CHUNK_CHARS if lang in DENSE else CHUNK_CHARS
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    paras = [p for p in paras if p]
    cur: list[str] = []
    size, target = 0, rng.randint(lo, hi)
    for p in paras:
        cur.append(p)
        size += len(p)
        if size >= target:
            yield "\n".join(cur)
            cur, size, target = [], 0, rng.randint(lo, hi)
    if size >= lo:
        yield "\n".join(cur)


def join_short(texts: Sequence[str], rng: random.Random, lang: str | None = None) -> Iterator[str]:
    """Short messages joined one per line into documents of CHUNK_CHARS characters."""
    lo, hi = DENSE_CHUNK_CHARS if lang in DENSE else CHUNK_CHARS
    cur: list[str] = []
    size, target = 0, rng.randint(lo, hi)
    for t in texts:
        cur.append(t)
        size += len(t) + 1
        if size >= target:
            yield "\n".join(cur)
            cur, size, target = [], 0, rng.randint(lo, hi)


def _jsonl_zst(path: Path) -> list[dict]:
    with _open_text(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _messages(texts: Iterable[str], source: str, lang: str, rng: random.Random, hq: bool = False) -> list[Doc]:
    """Short messages (tweets, comments, SMS), cleaned, shuffled and joined into documents."""
    texts = sorted({c for c in (clean_social(t) for t in texts) if c})
    rng.shuffle(texts)
    return [Doc(d, hq, source, lang) for d in join_short(texts, rng, lang)]


# Languages with both classes in the training pool (licence-allowed sets; docs/quality.md).
TRAIN_LANGUAGES = ("en", "de", "fr", "pt", "zh", "ja", "ar", "tr", "da", "ko")
XQUAD_LANGUAGES = ("en", "ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
def lingua_halves(corpora: Path, lang: str) -> tuple[list[str], list[str]]:
    """A language's lingua sentences: the first half may be trained on (0-499 of 1,000), the
    second never is (ja has 412 sentences: 0-205 and 206-411)."""
    from pipeline.train.toxicity import lingua_sentences

    sents = lingua_sentences(corpora, lang)
    return sents[:len(sents) // 2], sents[len(sents) // 2:]
JAQUAD_ARTICLES = 200  # of 792: enough Japanese prose next to the other languages' few hundred documents


def default_sets(corpora: Path, seed: int) -> tuple[list[Doc], list[Doc]]:
    """(training pool, evaluation-only documents) for the shipped model. Positives are prose
    (encyclopaedia, books, news sentences), negatives short social messages and SMS; per language
    where the licences allow (docs/quality.md has the table)."""
    import csv

    from pipeline.train import toxicity as tx

    q, tox = corpora / "quality", corpora / "toxicity"
    rng = random.Random(seed)
    pool: list[Doc] = []
    # -- positives
    wiki = wikitext_articles(q / "wikitext2_valid.tokens.txt")
    pool += [Doc(c, True, "wikitext2-valid", "en") for c in chunks("\n\n".join(wiki), rng)]
    for book in _jsonl_zst(q / "gutenberg_books" / "gutenberg_books.jsonl.zst"):
        pool += [Doc(c, True, "gutenberg", "en") for c in chunks(book["text"], rng)]
    articles: dict[tuple[str, int], list[str]] = {}
    for r in tx.xquad_paragraphs(corpora):
        articles.setdefault((r["lang"], r["article"]), []).append(r["text"])
    for (lang, art), paras in sorted(articles.items()):  # one article's translations are held out together
        pool += [Doc(c, True, f"xquad-{lang}", lang, f"xquad:{art}") for c in chunks("\n\n".join(paras), rng, lang)]
    ja: dict[int, list[str]] = {}
    for r in tx.jaquad_paragraphs(corpora):
        if r["article"] < JAQUAD_ARTICLES:
            ja.setdefault(r["article"], []).append(r["text"])
    for art, paras in sorted(ja.items()):
        pool += [Doc(c, True, "jaquad", "ja", f"jaquad:{art}") for c in chunks("\n\n".join(paras), rng, "ja")]
    openstax = _jsonl_zst(q / "openstax_textbooks" / "openstax_textbooks.jsonl.zst")
    for r in openstax:
        if r["licence"] == "CC BY 4.0":
            pool += [Doc(c, True, "openstax-python", "en") for c in chunks(r["text"], rng)]
    for lang in sorted(set(TRAIN_LANGUAGES) | set(XQUAD_LANGUAGES)):
        sents = lingua_halves(corpora, lang)[0]
        pool += [Doc(d, True, f"lingua-{lang}", lang) for d in join_short(sents, rng, lang)]
    # -- negatives
    csv.field_size_limit(sys.maxsize)
    with open(q / "uci_sms_spam_collection.tsv", encoding="utf-8") as f:
        pool += _messages((r["SMS"] for r in csv.DictReader(f, delimiter="\t")), "sms", "en", rng)
    pool += _messages((r["tweet"] for r in tx._csv(tox / "davidson2017_labeled_data.csv")), "davidson-tweets", "en", rng)
    pool += _messages((r["text"] for r in tx._csv(tox / "vicomtech_stormfront_hate.tsv", delimiter="\t")), "stormfront", "en", rng)
    for lang in ("en", "fr", "ar"):
        pool += _messages((r["tweet"] for r in tx._csv(tox / "mlma" / f"mlma_{lang}.csv")), f"mlma-{lang}", lang, rng)
    germeval = []
    for name in ("training", "test"):
        with open(tox / "germeval2018" / f"germeval2018.{name}.txt", encoding="utf-8") as f:
            germeval += [r[0] for r in tx._tsv_rows(f)]
    pool += _messages(germeval, "germeval2018", "de", rng)
    pool += _messages((r["text"] for r in tx._zst_csv(tox / "told_br" / "ToLD-BR.csv.zst")), "told-br", "pt", rng)
    cold = tx._zst_csv(tox / "cold" / "cold_train.csv.zst") + list(tx._csv(tox / "cold" / "cold_dev.csv")) + list(tx._csv(tox / "cold" / "cold_test.csv"))
    pool += _messages((r["TEXT"] for r in cold), "cold", "zh", rng)
    pool += _messages((r["text"] for r in tx._csv(tox / "japanese_toxic" / "subset.csv")), "japanese-toxic", "ja", rng)
    with tx._zst_text(tox / "offenseval2020_tr" / "offenseval-tr-training-v1.tsv.zst") as f:
        pool += _messages((r[1] for r in list(tx._tsv_rows(f))[1:] if len(r) >= 3), "offenseval-tr", "tr", rng)
    with open(tox / "offenseval2020_da" / "offenseval-da-training-v1.tsv", encoding="utf-8") as f:
        pool += _messages((r[1] for r in list(tx._tsv_rows(f))[1:] if len(r) >= 3), "dkhate", "da", rng)
    ko = [r["comments"] for name in ("train", "dev") for r in tx._csv(tox / "korean_hate_speech" / f"{name}.tsv", delimiter="\t")]
    pool += _messages(ko, "beep", "ko", rng)

    # -- never trained on: other sets of the same kind, and sets whose licence allows evaluation only
    evaluation: list[Doc] = []
    wiki_test = wikitext_articles(q / "wikitext2_test.tokens.txt")
    evaluation += [Doc(c, True, "wikitext2-test", "en") for c in chunks("\n\n".join(wiki_test), rng)]
    for r in openstax:
        if r["licence"] != "CC BY 4.0":
            evaluation += [Doc(c, True, "openstax NC books", "en") for c in chunks(r["text"], rng)]
    with _open_text(q / "paloma_4chan_val.jsonl.gz") as fh:
        for line in fh:
            evaluation += [Doc(c, False, "4chan", "en") for c in chunks(json.loads(line)["text"].replace("\n", "\n\n"), rng)]
    social: dict[tuple[str, str], list[str]] = {}
    for e in tx.load_evaluation_only(corpora):  # HateBR pt, HatEval es/en, ru_paradetox, GAHD de, Jigsaw
        if e.source in ("hatebr", "hateval_es", "hateval_en", "ru_paradetox"):
            social.setdefault((e.source, e.lang), []).append(e.text)
    hindi = tox / "hindi_hostility_constraint2021"
    social[("hindi-hostility", "hi")] = [r["Post"] for name in ("valid.csv", "test.csv") for r in tx._csv(hindi / name)]
    for (source, lang), texts in sorted(social.items()):
        evaluation += _messages(texts, source, lang, rng)
    lingua = corpora / "langid" / "lingua_sentences"
    for path in sorted(lingua.glob("[a-z][a-z].txt")):
        sents = lingua_halves(corpora, path.stem)[1]
        evaluation += [Doc(d, True, "lingua-heldout", path.stem) for d in join_short(sents, rng, path.stem)]
    return pool, evaluation


def match_case(docs: Sequence[Doc], seed: int) -> list[Doc]:
    """Per language, lowercase a seeded share of one class so both classes hold the same share of
    all-lowercase documents. Some sets were lowercased by their authors (MLMA, parts of ToLD-Br):
    without this the model learns "capital letters = high quality" in those languages."""
    def lower(d: Doc) -> bool:
        return d.text == d.text.lower() and d.text != d.text.upper()

    rng = random.Random(seed)
    out = list(docs)
    by_lang: dict[str | None, list[int]] = {}
    for i, d in enumerate(out):
        by_lang.setdefault(d.lang, []).append(i)
    for lang in sorted(by_lang, key=str):
        idx = by_lang[lang]
        share = {hq: [i for i in idx if out[i].hq == hq] for hq in (True, False)}
        if not share[True] or not share[False]:
            continue
        frac = {hq: sum(lower(out[i]) for i in ix) / len(ix) for hq, ix in share.items()}
        hq = frac[True] < frac[False]  # the class to lowercase more of
        cased = [i for i in share[hq] if not lower(out[i])]
        want = round((frac[not hq] - frac[hq]) * len(share[hq]))
        for i in rng.sample(cased, min(want, len(cased))):
            out[i] = Doc(out[i].text.lower(), out[i].hq, out[i].source, out[i].lang, out[i].group)
    return out


# -- split, train, evaluate ----------------------------------------------------------------------
def split(docs: Sequence[Doc], seed: int, test_fraction: float) -> tuple[list[Doc], list[Doc]]:
    """Stratified by (source, label) with a seeded shuffle; a document with a `group` goes to the
    side its group's seeded draw picks, so no translation of a held-out article is trained on."""
    groups: dict[tuple[str, bool], list[Doc]] = {}
    train: list[Doc] = []
    test: list[Doc] = []
    for d in docs:
        if d.group is not None:
            (test if random.Random(f"{seed}:{d.group}").random() < test_fraction else train).append(d)
        else:
            groups.setdefault((d.source, d.hq), []).append(d)
    rng = random.Random(seed)
    for key in sorted(groups):
        items = list(groups[key])
        rng.shuffle(items)
        k = max(1, round(len(items) * test_fraction)) if len(items) > 1 else 0
        test += items[:k]
        train += items[k:]
    rng.shuffle(train)
    return train, test


MAX_REPEAT = 4  # the smaller class of a language is repeated up to this many times, then the larger is cut


def balance(docs: Sequence[Doc], seed: int, one_class: bool = False) -> list[Doc]:
    """Per language, the same number of positives and negatives (seeded): the smaller class is
    repeated (at most MAX_REPEAT times over), the larger cut to match. So no language, nor its
    words, carries a prior towards either class. A language with one class only is left out
    (`one_class=True` keeps it: it then learns "this language is high quality")."""
    rng = random.Random(seed)
    by_lang: dict[str | None, list[Doc]] = {}
    for d in docs:
        by_lang.setdefault(d.lang, []).append(d)
    out: list[Doc] = []
    for lang in sorted(by_lang, key=str):
        pos = [d for d in by_lang[lang] if d.hq]
        neg = [d for d in by_lang[lang] if not d.hq]
        if not pos or not neg:
            out += pos + neg if one_class else []
            continue
        small, big = sorted((pos, neg), key=len)
        n = min(len(big), MAX_REPEAT * len(small))
        out += _resample(small, n, rng) + _resample(big, n, rng)
    rng.shuffle(out)
    return out


def _resample(items: list[Doc], n: int, rng: random.Random) -> list[Doc]:
    """n items: whole copies of `items`, then a seeded sample of the rest."""
    reps, rest = divmod(n, len(items))
    return items * reps + rng.sample(items, rest)


DROP_LANG = 0.15  # with language tokens: share of training lines without one (documents without `lang`)


def training_lines(docs: Iterable[Doc], seed: int, lang_tokens: bool) -> list[str]:
    from stages.quality.classifier import language_token

    rng = random.Random(seed)
    lines = []
    for d in docs:
        line = preprocess(d.text)
        tok = language_token(d.lang) if lang_tokens and rng.random() >= DROP_LANG else None
        if line:
            lines.append(f"{HQ if d.hq else LQ} {tok + ' ' if tok else ''}{line}")
    return lines


def train(docs: Iterable[Doc], out: Path, seed: int, lang_tokens: bool = False, params: dict | None = None):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        path.write_text("".join(f"{line}\n" for line in training_lines(docs, seed, lang_tokens)), encoding="utf-8")
        model = train_supervised(input=str(path), thread=1, seed=seed, verbose=0, quantize=QUANTIZE,
                                 **(params or FASTTEXT_PARAMS))
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save_model(str(out))
    return model


def metrics(labels: Sequence[bool], scores: Sequence[float]) -> dict[str, float]:
    from pipeline.train.toxicity import roc_auc

    acc = sum((s >= 0.5) == y for s, y in zip(scores, labels)) / len(labels) if labels else float("nan")
    return {"n": len(labels), "accuracy": acc, "roc_auc": roc_auc(labels, scores)}


def scores_of(docs: Sequence[Doc], model_path: Path) -> list[float]:
    """The stage's classifier on each document, with its language (as a run scores it)."""
    from stages.quality.classifier import QualityClassifier, QualityClassifierConfig

    clf = QualityClassifier(QualityClassifierConfig(model_path=str(model_path)))
    return clf.scores([d.text for d in docs], [d.lang for d in docs])


def _quantile(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def evaluate(docs: Sequence[Doc], model_path: Path, by: str = "source",
             scores: Sequence[float] | None = None) -> list[tuple[str, dict[str, float]]]:
    """Accuracy, ROC-AUC and median scores of each class, for all documents and per `by`
    (`source` or `lang`)."""
    if scores is None:
        scores = scores_of(docs, model_path)
    groups: dict[str, list[int]] = {"all": list(range(len(docs)))}
    for i, d in enumerate(docs):
        groups.setdefault(str(getattr(d, by)), []).append(i)
    rows = []
    for name in ["all"] + sorted(k for k in groups if k != "all"):
        idx = groups[name]
        labels = [docs[i].hq for i in idx]
        m = metrics(labels, [scores[i] for i in idx])
        m["mean_score"] = sum(scores[i] for i in idx) / len(idx)
        m["n_pos"] = sum(labels)
        m["median_pos"] = _quantile([scores[i] for i in idx if docs[i].hq], 0.5)
        m["median_neg"] = _quantile([scores[i] for i in idx if not docs[i].hq], 0.5)
        rows.append((name, m))
    return rows


def _f(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


def _table(title: str, rows: list[tuple[str, dict[str, float]]]) -> str:
    out = [f"| {title} | n (positive) | accuracy (P >= 0.5) | ROC-AUC | median score, positives | median score, negatives |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, m in rows:
        out.append(f"| {name} | {m['n']} ({m['n_pos']}) | {m['accuracy']:.3f} | {_f(m['roc_auc'])} | "
                   f"{_f(m['median_pos'])} | {_f(m['median_neg'])} |")
    return "\n".join(out)


def clean_text_table(docs: Sequence[Doc], scores: Sequence[float]) -> str:
    """Per language, the scores of clean news sentences never trained on (lingua 500-999): if the
    model had learned languages, these medians would sit far apart."""
    by: dict[str, list[float]] = {}
    for d, s in zip(docs, scores):
        if d.source == "lingua-heldout":
            by.setdefault(d.lang, []).append(s)
    if not by:
        return ""
    out = ["| language | documents | median | quartiles |", "|---|---:|---:|---|"]
    for lang in sorted(by):
        xs = by[lang]
        out.append(f"| {lang}{' (trained)' if lang in TRAIN_LANGUAGES else ''} | {len(xs)} | {_quantile(xs, 0.5):.3f} | "
                   f"{_quantile(xs, 0.25):.3f}-{_quantile(xs, 0.75):.3f} |")
    meds = sorted(_quantile(xs, 0.5) for xs in by.values())
    out.append(f"\nmedians over {len(meds)} languages: min {meds[0]:.3f}, quartiles {_quantile(meds, 0.25):.3f} / "
               f"{_quantile(meds, 0.5):.3f} / {_quantile(meds, 0.75):.3f}, max {meds[-1]:.3f}")
    return "\n".join(out)


PAGE_SCORE_PROSE_DOCS = 3000  # prose and chat documents of the training part next to the web pages
WEB_ARCHIVE = "web/trafilatura_eval_html_benchmark.tar.zst"


def page_score_sets(corpora: Path, seed: int) -> dict[str, list[tuple[str, str | None, bool, str]]]:
    """(text, lang, label, group) per set, for fitting (`fit`, `lingua`) and reporting (the rest) the
    page score: `web_tune`/`web_report` are the two site-hash halves of trafilatura's eval pages,
    `web_second` its cache pages (another set, never tuned on), `prose_chat_fit`/`prose_chat_report`
    the classifier's training and held-out documents (prose vs chat), `lingua` clean text of every
    language (sentences 0-499: offsets), `lingua_heldout` (500-999: reported)."""
    from pipeline.train.web_pages import read_benchmark, split_by_site, with_languages

    archive = corpora / WEB_ARCHIVE
    web = with_languages(read_benchmark(archive, "eval"))
    tune, report = split_by_site(web, seed)
    second = with_languages(read_benchmark(archive, "cache"))
    pool, extra = default_sets(corpora, seed)
    train_part, test_part = split(pool, seed, 0.2)
    fit_docs = random.Random(seed).sample(train_part, min(PAGE_SCORE_PROSE_DOCS, len(train_part)))
    rng = random.Random(seed)
    lingua: list[tuple[str, str | None, bool, str]] = []
    for path in sorted((corpora / "langid" / "lingua_sentences").glob("[a-z][a-z].txt")):
        lingua += [(d, path.stem, True, "lingua") for d in join_short(lingua_halves(corpora, path.stem)[0], rng, path.stem)]
    as_rows = lambda docs, grp: [(d.text, d.lang, d.hq, grp(d)) for d in docs]  # noqa: E731
    return {
        "web_tune": as_rows(tune, lambda d: d.kind), "web_report": as_rows(report, lambda d: d.kind),
        "web_second": as_rows(second, lambda d: d.kind),
        "prose_chat_fit": as_rows(fit_docs, lambda d: "prose" if d.hq else "chat"),
        "prose_chat_report": as_rows(test_part, lambda d: "prose" if d.hq else "chat"),
        "lingua": lingua,
        "lingua_heldout": [(d.text, d.lang, True, "lingua") for d in extra if d.source == "lingua-heldout"],
        "never_trained": [(d.text, d.lang, d.hq, d.source) for d in extra if d.source != "lingua-heldout"],
    }


def stage_inputs(rows: Sequence[tuple[str, str | None, bool, str]], model_path: Path) -> tuple[list[str], list[float], list[float | None]]:
    """What the quality stage's page score reads for each document: the text the classifier scores
    (C4's cleaned text if the rules up to C4 pass), the classifier's score and the rule score."""
    from stages.quality.stage import Quality

    q = Quality(classifier=None)
    q.ensure_setup()
    texts, rule = [], []
    for text, lang, *_ in rows:
        signals, cleaned = q.evaluate(text, lang)
        texts.append(text if cleaned is None else cleaned)
        rule.append(signals["quality_score"])
    from stages.quality.classifier import QualityClassifier, QualityClassifierConfig

    clf = QualityClassifier(QualityClassifierConfig(model_path=str(model_path)))
    return texts, clf.scores(texts, [r[1] for r in rows]), rule


def fit_page_score(sets: dict, model_path: Path, out: Path, l2: float = 1.0) -> dict:
    """Fit the page score's weights to `model_path`'s classifier and write them to `out`: language
    offsets from clean text (lingua 0-499), then a logistic model on the tune half of the web pages
    (article = 1, boilerplate and link lists = 0) and prose vs chat, each (set, kind) group weighted
    equally. Only these numbers come from the web pages: no page text is in the file."""
    import numpy as np

    from stages.quality.page_score import feature_rows, fit, language_offsets

    lingua_texts = [r[0] for r in sets["lingua"]]
    from stages.quality.classifier import QualityClassifier, QualityClassifierConfig

    clf = QualityClassifier(QualityClassifierConfig(model_path=str(model_path)))
    by_lang: dict[str, list[float]] = {}
    for r, p in zip(sets["lingua"], clf.scores(lingua_texts, [r[1] for r in sets["lingua"]])):
        by_lang.setdefault(r[1], []).append(p)
    offsets = language_offsets(by_lang)
    xs, ys, ws = [], [], []
    for name in ("web_tune", "prose_chat_fit"):
        rows = sets[name]
        texts, cls, _ = stage_inputs(rows, model_path)
        xs.append(feature_rows(texts, cls, [r[1] for r in rows], offsets))
        ys.append(np.array([r[2] for r in rows], float))
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(r[3], []).append(i)
        w = np.zeros(len(rows))
        for idx in groups.values():
            w[idx] = 1.0 / len(idx)
        ws.append(w)
    weights = fit(np.vstack(xs), np.concatenate(ys), np.concatenate(ws), l2=l2)
    weights["language_offsets"] = offsets
    weights["fitted_to"] = {"model_bytes": model_path.stat().st_size}
    out.write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")
    return weights


SAMPLE_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja")  # the sample corpus's (samples/)


def stage_scores(rows: Sequence[tuple[str, str | None, bool, str]], model_path: Path | None = None,
                 weights: Path | None = None, page_score: bool = True) -> dict[str, list]:
    """The quality stage's columns for each document, scored as a run scores it (with its `lang`)."""
    from pipeline.schema import make_record, records_to_table
    from stages.quality.stage import Quality

    q = Quality(classifier={"model_path": str(model_path) if model_path else None}, page_score=page_score,
                page_score_weights=str(weights) if weights else None, drop_on_rules=False)
    q.ensure_setup()
    out: dict[str, list] = {}
    for k in range(0, len(rows), 1000):
        part = rows[k:k + 1000]
        t = records_to_table(make_record(source="s", kind="jsonl", file="f", offset=i, text=r[0]) for i, r in enumerate(part))
        t = q.annotate(t.append_column("lang", pa_array([r[1] for r in part])))
        for col in ("quality_score", "quality_rule_score", "quality_classifier_score", "quality_page_score", "quality_failed_rules"):
            if col in t.column_names:
                out.setdefault(col, []).extend(t.column(col).to_pylist())
    return out


def pa_array(values):
    import pyarrow as pa

    return pa.array(values, pa.string())


def page_score_rows(sets: dict, scores: dict[str, dict[str, list]], column: str = "quality_score") -> list[tuple[str, dict]]:
    """ROC-AUC of `column` per question: article vs the same pages' boilerplate and vs link lists
    (all documents, and only those passing every rule: how kept documents are ranked), prose vs chat."""
    from pipeline.train.toxicity import roc_auc

    out = []
    for name in ("web_report", "web_second", "web_tune"):
        rows, sc = sets[name], scores[name]
        for neg in ("boilerplate", "list"):
            idx = [i for i, r in enumerate(rows) if r[3] in ("article", neg)]
            kept = [i for i in idx if not sc["quality_failed_rules"][i]]
            out.append((f"{name}: article vs {neg}", {
                "n": f"{sum(rows[i][2] for i in idx)} / {sum(not rows[i][2] for i in idx)}",
                "auc": roc_auc([rows[i][2] for i in idx], [sc[column][i] or 0.0 for i in idx]),
                "n_kept": f"{sum(rows[i][2] for i in kept)} / {sum(not rows[i][2] for i in kept)}",
                "auc_kept": roc_auc([rows[i][2] for i in kept], [sc[column][i] or 0.0 for i in kept])}))
    for name in ("prose_chat_report", "never_trained"):
        rows, sc = sets[name], scores[name]
        kept = [i for i in range(len(rows)) if not sc["quality_failed_rules"][i]]
        out.append((f"{name}: prose vs chat", {
            "n": f"{sum(r[2] for r in rows)} / {sum(not r[2] for r in rows)}",
            "auc": roc_auc([r[2] for r in rows], [x or 0.0 for x in sc[column]]),
            "n_kept": f"{sum(rows[i][2] for i in kept)} / {sum(not rows[i][2] for i in kept)}",
            "auc_kept": roc_auc([rows[i][2] for i in kept], [sc[column][i] or 0.0 for i in kept])}))
    return out


def clean_medians(rows, scores: dict[str, list], column: str = "quality_score") -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r, s in zip(rows, scores[column]):
        if s is not None:
            by.setdefault(r[1], []).append(s)
    return {k: _quantile(v, 0.5) for k, v in sorted(by.items())}


def page_score_table(sets: dict, model: Path, weights: Path) -> str:
    names = ("web_report", "web_second", "web_tune", "prose_chat_report", "never_trained", "lingua_heldout")
    scores = {n: stage_scores(sets[n], model, weights) for n in names}
    lines = ["| set: question | n (pos / neg) | ROC-AUC, quality_score | passing every rule | ROC-AUC there |", "|---|---|---:|---|---:|"]
    for name, m in page_score_rows(sets, scores):
        lines.append(f"| {name} | {m['n']} | {_f(m['auc'])} | {m['n_kept']} | {_f(m['auc_kept'])} |")
    med = clean_medians(sets["lingua_heldout"], scores["lingua_heldout"])
    en = med["en"]
    lines.append("\nclean text (lingua sentences 500-999), median quality_score per language, and its distance to en:")
    lines.append(" ".join(f"{k} {med[k]:.3f} ({med[k] - en:+.3f})" for k in SAMPLE_LANGUAGES if k in med))
    off = sorted((k for k in med if abs(med[k] - en) > 0.15), key=lambda k: med[k] - en)
    lines.append(f"{len(off)} of {len(med)} languages more than 0.15 from en: " + " ".join(f"{k} {med[k] - en:+.3f}" for k in off))
    return "\n".join(lines)


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
    ap.add_argument("--page-score-only", action="store_true",
                    help="with --default: keep the model, refit only the page score's weights (stages/models/quality_page.json)")
    args = ap.parse_args(argv)
    if args.default == (args.positives is not None):
        ap.print_usage(sys.stderr)
        print("refinery train-quality: error: give POSITIVES and NEGATIVES, or --default", file=sys.stderr)
        return 2
    if not 0 < args.test_fraction < 1:
        print("refinery train-quality: error: --test-fraction must be between 0 and 1", file=sys.stderr)
        return 2
    if args.page_score_only:
        if not args.default:
            print("refinery train-quality: error: --page-score-only needs --default", file=sys.stderr)
            return 2
        return _page_score_main(args)
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
    train_set = balance(match_case(train_set, args.seed) if args.default else train_set, args.seed, one_class=not args.default)
    if not any(d.hq for d in train_set) or all(d.hq for d in train_set):
        print("refinery train-quality: error: need documents of both classes", file=sys.stderr)
        return 2
    langs = sorted({d.lang for d in train_set if d.lang})
    print(f"train {len(train_set)} documents ({sum(d.hq for d in train_set)} positive)"
          + (f" in {len(langs)} languages ({' '.join(langs)})" if langs else "") + f", held out {len(test_set)}")
    train(train_set, out, args.seed, lang_tokens=args.default and LANG_TOKENS)
    size = out.stat().st_size
    print(f"model: {out} ({size / 1e6:.2f} MB), seed {args.seed}")
    if size > MAX_BYTES:
        print(f"refinery train-quality: error: model is larger than {MAX_BYTES} bytes", file=sys.stderr)
        return 1
    print(_table("held-out set", evaluate(test_set, out)))
    if extra:
        scores = scores_of(extra, out)
        print()
        print(_table("never trained on", evaluate(extra, out, scores=scores)))
        both = test_set + [d for d in extra if d.source != "lingua-heldout" or d.lang in XQUAD_LANGUAGES + TRAIN_LANGUAGES]
        print()
        print(_table("per language: held out + never trained on", evaluate(both, out, by="lang")))
        print()
        print(clean_text_table(extra, scores))
        return _page_score_main(args, out)
    return 0


def _page_score_main(args, model: Path | None = None) -> int:
    from stages.quality.page_score import shipped_weights_path

    model = model or args.out or shipped_model_path()
    out = shipped_weights_path() if model == shipped_model_path() else model.with_suffix(".page.json")
    if not model.is_file():
        print(f"refinery train-quality: error: {model}: no such model file", file=sys.stderr)
        return 2
    try:
        sets = page_score_sets(args.corpora, args.seed)
    except (ValueError, OSError) as exc:
        print(f"refinery train-quality: error: {exc}", file=sys.stderr)
        return 2
    w = fit_page_score(sets, model, out)
    print(f"page score: {out} ({len(w['language_offsets'])} language offsets), fitted to {model}")
    print(page_score_table(sets, model, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
