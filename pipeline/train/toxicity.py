"""Train the multilingual toxicity model: `refinery train-toxicity [--corpora DIR] [--out PATH] [--seed N]`.

One fastText model for every language, with the document's language as a feature: each line starts
with a language token (`xlang_de`), and the word bigrams pair it with the first word; 15% of the
training lines drop it so that documents without a `lang` column are scored too. Chinese and
Japanese are cut into characters by `stages.toxicity.preprocess` (fastText splits on spaces only).

Training data, only sets whose licence allows a shipped model (../shared/corpora/README.md):
  en  Davidson 2017 (MIT), Vicomtech Stormfront (CC BY-SA), MLMA en (MIT), Wikipedia talk CAT-LARGE gn
      (Apache / CC BY-SA);        de  GermEval 2018 (CC BY), GAHD train part (CC BY);        fr, ar  MLMA (MIT);
  pt  ToLD-Br (CC BY-SA, toxic = any category flagged by >= 2 of 3 annotators);
  pl  BAN-PL (CC BY; read inside its password-protected zip, never written out decrypted);
  zh  COLD (Apache);  ja  japanese-toxic-dataset (Apache);  tr  OffensEval 2020 tr, da  DKHate (CC BY);
  ko  BEEP! (CC BY-SA).
  Clean prose per language: WikiText-2 valid, Gutenberg books (odd-numbered), XQuAD articles 0-23,
  JaQuAD articles with an even index, lingua sentences 0-499 of each language (Apache repo).
  Spanish and Russian have no labelled set with such a licence here: their toxic examples (and
  Japanese's, 437 rows only) come from sentences written for this project (pipeline/train/data/
  written_<lang>.tsv, CC0: toxic lines with clean counterparts on the same topic; also en, fr, ja)
  and from the hand-written word lists and frames below.
  Insult insertion: clean training prose sentences of en, es, ru with one insult inserted (toxic),
  next to the same sentences left clean (`inserted`).
  English composed lines (`composed`, COMPOSED_EN): hateful and clean statements about groups and
  persons (hate without profanity, threats, misspellings; negated hate and counter-speech as clean),
  for the functional cases the labelled English sets lack; judged on the English functional dev cases
  (pipeline/train/identity_examples.py). The same for de, fr, es, pl, pt (pipeline/train/composed_hate.py),
  judged on the dev part (even frames) of benchmarks/toxicity_functional.py.
  Identity counter-examples: neutral, positive and hateful sentences about the identity groups from
  TRAIN_FRAMES below, a sentence-frame set disjoint from the test frames in
  tests/identity_templates.py and from the dev frames in pipeline/train/identity_examples.py (same
  groups, other sentences: templates are held out, groups are not).
  Every line is trained on without its identity terms (stages.toxicity.drop_identity_terms), as
  the stage scores it (`identity_terms: true`), and with the words in a negation's scope read as
  `not_<word>` (stages/_negation.py; `negation_scope: true`): "X are not vermin" and "X are vermin"
  are different lines to the model (docs/toxicity.md, "Functional suite").
  Tried and not used for training (docs/toxicity.md): French prose from the Debian package
  debian-handbook (CC BY-SA 3.0, pipeline/train/package_prose.py); its dev pages are a dev
  measurement in `dev_report`.
Evaluation only (non-commercial / research / no licence): HateBR (pt), HatEval (es, en), ru_paradetox
(ru); the Jigsaw 101-row sample (too small to train on). GAHD's dev and test parts are never trained on.

Splits: the authors' train/dev/test where they exist, else a seeded stratified 70/10/20 split. The
dev parts choose nothing automatically (`dev_report` prints them, with the identity dev frames, for a
person choosing a change); test parts are only reported. Written with thread=1 and the
seed (deterministic), quantised, then rewritten as the equivalent one-dimensional model
(pipeline/train/fasttext_linear.py: the quantised model's probabilities, faster) to
stages/models/toxicity.bin.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import random
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from pipeline.train import composed_hate, english_contrasts, identity_examples
from stages._fasttext import train_supervised
from stages.toxicity import CLEAN, TOXIC, drop_identity_terms, model_line, preprocess, split_spans

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
DEFAULT_OUT = ROOT / "stages" / "models" / "toxicity.bin"
MAX_BYTES = 5 * 1024 * 1024
LANGUAGES = ("en", "de", "fr", "es", "pt", "ru", "pl", "zh", "ja", "tr", "ar", "da", "ko")
UNSEEN_LANGUAGES = ("it", "nl", "sv", "cs", "hi", "vi", "uk", "fi")  # false-positive check only
DROP_LANG = 0.15  # share of training lines without the language token
# Lines are trained on without names of groups of people (stages/data/identity_terms.txt), as the
# stage scores them (`identity_terms: true`): a group's name is no evidence, what is said about it is
# (docs/toxicity.md, "Identity fairness"). --keep-identity-terms: names as features (the ablation there).
DROP_IDENTITY_TERMS = True

# fastText settings: words, word bigrams (CJK: characters and character pairs) and character 3-5-grams
# (inflected languages, misspellings). Without character n-grams prediction is 3-4x faster but the
# model no longer beats plain fastText in most languages (docs/toxicity.md). Quantised without pruning.
# 4 epochs (was 8): with 8, a short line of words the model never saw scored 0.99+ as often as not
# (docs/toxicity.md, "Web pages").
FASTTEXT_PARAMS = dict(lr=0.2, epoch=4, dim=16, wordNgrams=2, minn=3, maxn=5, minCount=2, bucket=200_000, loss="softmax")
# Per language, clean prose is repeated until clean lines >= this x toxic lines. 4 (was 2): with group
# names dropped, the weight they carried in hostile sets moved to ordinary words, and at 2 clean dev
# prose was rejected twice as often (docs/toxicity.md, "Identity fairness").
CLEAN_PER_TOXIC = 4.0
# Davidson 2017's class 1 ("offensive language", by the annotators' majority neither hate speech nor
# clean) is not trained on: its lines are mostly profanity and sexual slang aimed at no group
# ("bitch", "hoes", "pussy", "fuck"), so with them the model learned words, not hate, and scored
# profanity that is not hate and reclaimed words above threats and plain hate (docs/toxicity.md,
# "English"). The split is made first, so the dev and test parts are the same lines as before and
# keep their labels (class 1 toxic) in every measurement.
DROP_DAVIDSON_OFFENSIVE = True
CLEAN_PER_TOXIC_LANG: dict[str, float] = {}  # per-language overrides (none: French at 6 changed nothing on dev)
# Sentences written for this project (pipeline/train/data/written_<lang>.tsv, CC0): toxic lines with
# clean counterparts on the same topic, for languages without a licence-allowed labelled set (es, ru)
# and for English registers the labelled sets lack; French and Japanese everyday sentences. Each toxic
# line is repeated WRITTEN_REPEAT times, each clean one WRITTEN_REPEAT x WRITTEN_CLEAN_FACTOR times (the
# trainer's 4 : 1 clean : toxic share; at 1 : 1 short clean sentences of every language scored higher).
# Chosen on dev (docs/toxicity.md, "Data written for this project").
WRITTEN_DIR = Path(__file__).resolve().parent / "data"
WRITTEN_REPEAT = 6
WRITTEN_CLEAN_FACTOR = 4
# Insult insertion: per language with a word list (LEXICON, INSERT_WORDS), this many clean prose
# sentences of the language get one insult inserted at a random word boundary and become toxic lines.
# fastText scores the mean of a line's features, so one insult inside an ordinary sentence was
# averaged away; these lines, next to the same sentences left clean, put the weight on the insult.
INSERTED_PER_LANGUAGE = 2000
# Inserted and written lines always keep their language token (never among the DROP_LANG lines): they
# are one language's words, so the language-agnostic path (languages the model has no token for) is
# trained on the labelled sets and prose as before. (Measured: this did not lower the clean false
# positives of unseen languages, which rose with the new lines; docs/toxicity.md.)
KEEP_LANG_SOURCES: tuple[str, ...] = ("inserted", "written", "composed")
# Short fragments of the clean training prose (1 to FRAGMENT_WORDS words: a title, a name, a menu
# item, a caption), FRAGMENTS_PER_LANGUAGE per language, as clean lines. Why: the labelled toxic
# lines are short posts and the clean ones long prose, so shortness itself had become evidence, and
# a short line of words the model never saw ("moroso", "vaso splash", a person's name) scored 0.99+;
# web pages are full of such lines, and one of them decided the page (docs/toxicity.md, "Web pages").
FRAGMENTS_PER_LANGUAGE = 10_000
FRAGMENT_WORDS = 6
# Runs of fastText on the same examples (seeds seed, seed + 1, ...; each with its own line order and
# its own DROP_LANG lines), averaged into one model of the same size and speed
# (pipeline/train/fasttext_linear.average_linear): one run's scores of such lines depend on its seed
# (docs/toxicity.md, "Web pages").
RUNS = 3
# The plain baseline: fastText's own defaults on the raw text (newlines flattened), same examples.
QUANTIZE = dict(qnorm=True, dsub=4, cutoff=0, thread=1, verbose=0)
BASELINE_PARAMS = dict(lr=0.1, epoch=5, dim=100, wordNgrams=1, minn=0, maxn=0, loss="softmax")


@dataclass(frozen=True)
class Example:
    text: str
    toxic: bool
    source: str
    lang: str
    part: str  # train / dev / test


# -- reading the corpora ---------------------------------------------------------------------
def _csv(path: Path, **kw) -> Iterable[dict]:
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8-sig") as f:
        yield from csv.DictReader(f, **kw)


def _zst_text(path: Path) -> io.TextIOBase:
    import zstandard

    return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")), encoding="utf-8", newline="")


def _zst_csv(path: Path, **kw) -> list[dict]:
    csv.field_size_limit(sys.maxsize)
    with _zst_text(path) as f:
        return list(csv.DictReader(f, **kw))


def _tsv_rows(lines: Iterable[str]) -> Iterable[list[str]]:
    for line in lines:
        line = line.rstrip("\n")
        if line:
            yield line.split("\t")


def _split_parts(rows: list[tuple[str, bool]], source: str, lang: str, seed: int,
                 fractions=(0.7, 0.1)) -> list[Example]:
    """Seeded stratified 70/10/20 split of (text, toxic) rows."""
    out = []
    for label in (False, True):
        items = sorted({t for t, y in rows if y == label and t.strip()})
        random.Random(f"{seed}-{source}-{label}").shuffle(items)
        a = round(len(items) * fractions[0])
        b = a + round(len(items) * fractions[1])
        out += [Example(t, label, source, lang, "train" if i < a else "dev" if i < b else "test")
                for i, t in enumerate(items)]
    return out


def load_labelled(corpora: Path, seed: int = 13) -> list[Example]:
    """Every labelled set whose licence allows training (see the module docstring)."""
    tox = corpora / "toxicity"
    out: list[Example] = []
    davidson = list(_csv(tox / "davidson2017_labeled_data.csv"))
    offensive_only = {r["tweet"] for r in davidson if r["class"] == "1"}
    out += [e for e in _split_parts([(r["tweet"], r["class"] in ("0", "1")) for r in davidson], "davidson", "en", seed)
            if not (DROP_DAVIDSON_OFFENSIVE and e.part == "train" and e.text in offensive_only)]
    out += _split_parts([(r["text"], r["label"] == "hate") for r in _csv(tox / "vicomtech_stormfront_hate.tsv", delimiter="\t")
                         if r["label"] in ("hate", "noHate")], "stormfront", "en", seed)
    for lang in ("en", "fr", "ar"):
        out += _split_parts([(r["tweet"], r["sentiment"].strip() != "normal") for r in _csv(tox / "mlma" / f"mlma_{lang}.csv")],
                            f"mlma_{lang}", lang, seed)
    out += _split_parts([(r["text"], r["label"] == "1") for r in _csv(tox / "wikipedia_talk_cat_large" / "gn.csv")],
                        "wikipedia_talk", "en", seed)
    if TRAIN_GAHD:  # the authors' split: train part trained on, dev part a dev set, test part reported
        out += [Example(r["text"], r["label"] == "1", "gahd", "de", r["split"]) for r in _csv(tox / "gahd" / "gahd.csv")
                if r["split"] in ("train", "dev", "test") and r["text"].strip()]
    for name, part in (("training", "train"), ("test", "test")):
        with open(tox / "germeval2018" / f"germeval2018.{name}.txt", encoding="utf-8") as f:
            out += [Example(r[0], r[1] == "OFFENSE", "germeval2018", "de", part) for r in _tsv_rows(f) if len(r) >= 2]
    told = _zst_csv(tox / "told_br" / "ToLD-BR.csv.zst")
    cats = ("homophobia", "obscene", "insult", "racism", "misogyny", "xenophobia")
    out += _split_parts([(r["text"], max(float(r[c] or 0) for c in cats) >= 2) for r in told], "told_br", "pt", seed)
    out += _split_parts(list(_ban_pl(tox / "ban_pl" / "BAN-PL_2.zip")), "ban_pl", "pl", seed)
    cold = _zst_csv(tox / "cold" / "cold_train.csv.zst") + list(_csv(tox / "cold" / "cold_dev.csv")) + list(_csv(tox / "cold" / "cold_test.csv"))
    out += [Example(r["TEXT"], r["label"] == "1", "cold", "zh", r["split"]) for r in cold]
    ja = []
    for r in _csv(tox / "japanese_toxic" / "subset.csv"):
        toxic_votes = int(r["Toxic"]) + int(r["Very Toxic"])
        ja.append((r["text"], toxic_votes > int(r["Not Toxic"])))
    out += _split_parts(ja, "japanese_toxic", "ja", seed)
    with _zst_text(tox / "offenseval2020_tr" / "offenseval-tr-training-v1.tsv.zst") as f:
        out += [Example(r[1], r[2] == "OFF", "offenseval_tr", "tr", "train") for r in list(_tsv_rows(f))[1:] if len(r) >= 3]
    out += _offenseval_test(tox / "offenseval2020_tr" / "offenseval-tr-testset-v1.tsv",
                            tox / "offenseval2020_tr" / "offenseval-tr-labela-v1.tsv", "offenseval_tr", "tr")
    with open(tox / "offenseval2020_da" / "offenseval-da-training-v1.tsv", encoding="utf-8") as f:
        out += [Example(r[1], r[-1].strip() == "OFF", "dkhate", "da", "train") for r in list(_tsv_rows(f))[1:] if len(r) >= 3]
    out += _offenseval_test(tox / "offenseval2020_da" / "offenseval-da-test-v1.tsv",
                            tox / "offenseval2020_da" / "offenseval-da-labela-v1.csv", "dkhate", "da")
    for name, part in (("train", "train"), ("dev", "test")):
        out += [Example(r["comments"], r["hate"] != "none", "korean_hate", "ko", part)
                for r in _csv(tox / "korean_hate_speech" / f"{name}.tsv", delimiter="\t")]
    out = [e for e in out if e.text and e.text.strip()]
    # Some authors' splits repeat a text in train and test (COLD 45, DKHate 4, ...): held out means
    # never trained on, so such test and dev rows are dropped.
    trained = {e.text for e in out if e.part == "train"}
    return [e for e in out if e.part == "train" or e.text not in trained]


def _ban_pl(path: Path) -> Iterable[tuple[str, bool]]:
    """BAN-PL rows read inside the authors' zip (password from the README), never extracted."""
    with zipfile.ZipFile(path) as z:
        with z.open("BAN-PL.csv", pwd=b"BAN-PL_2") as raw:
            for r in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")):
                yield " ".join(r["Text"].split()), r["Class"] == "1"


def _offenseval_test(texts: Path, labels: Path, source: str, lang: str) -> list[Example]:
    gold = {}
    with open(labels, encoding="utf-8") as f:
        for line in f:
            parts = line.strip().replace("\t", ",").split(",")
            if len(parts) == 2:
                gold[parts[0]] = parts[1].strip() == "OFF"
    with open(texts, encoding="utf-8") as f:
        rows = list(_tsv_rows(f))[1:]
    return [Example(r[1], gold[r[0]], source, lang, "test") for r in rows if len(r) >= 2 and r[0] in gold]


def _half(key: str, seed: int) -> str:
    """"dev" or "test", half each, fixed by the text and the seed."""
    return "dev" if hashlib.sha256(f"{seed}-{key}".encode()).digest()[0] < 128 else "test"


def load_evaluation_only(corpora: Path, seed: int = 13) -> list[Example]:
    """Second sets for languages whose licence forbids training on them: never trained on; reported
    (part "test"), or, for hateval_es and ru_paradetox, half dev (looked at) and half test."""
    tox = corpora / "toxicity"
    out = [Example(r["comentario"], r["label_final"] == "1", "hatebr", "pt", "test") for r in _csv(tox / "hatebr" / "HateBR.csv")]
    # GAHD without TRAIN_GAHD: its test part only, as the authors split it (reported either way).
    if not TRAIN_GAHD:
        out += [Example(r["text"], r["label"] == "1", "gahd", "de", "test") for r in _csv(tox / "gahd" / "gahd.csv") if r["split"] == "test"]
    # HatEval es and ru_paradetox are what the Spanish and Russian training lines (written for this
    # project) are judged by: half of each is a dev part (choices were made looking at it), the other
    # half the test part reported (seeded by text; a ru_paradetox toxic comment and its paraphrases
    # fall in the same half). HatEval en chose nothing and is reported whole.
    for lang in ("es", "en"):
        for name in ("train", "dev"):
            with open(tox / "hateval2019" / f"{name}_{lang}.tsv", encoding="utf-8") as f:
                out += [Example(r["text"], r["HS"] == "1", f"hateval_{lang}", lang,
                                _half(r["text"], seed) if lang == "es" else "test")
                        for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    seen = set()
    for name in ("train", "dev"):
        for r in _csv(tox / "ru_paradetox" / f"{name}.tsv", delimiter="\t"):
            part = _half(r.get("toxic_comment") or "", seed)
            for col, toxic in (("toxic_comment", True), ("neutral_comment1", False), ("neutral_comment2", False), ("neutral_comment3", False)):
                t = (r.get(col) or "").strip()
                if t and t not in seen:
                    seen.add(t)
                    out.append(Example(t, toxic, "ru_paradetox", "ru", part))
    out += [Example(r["comment_text"], r["toxic"] == "1", "jigsaw101", "en", "test") for r in _csv(tox / "jigsaw_test_examples_101.csv")]
    return [e for e in out if e.text.strip()]


# -- clean prose ------------------------------------------------------------------------------
def wikitext_sentences(path: Path) -> list[str]:
    out = []
    for para in path.read_text(encoding="utf-8").split("\n"):
        if len(para) > 100 and not para.strip().startswith("="):
            out.extend(s for s in split_spans(para, "sentence") if len(s) > 20)
    return out


def xquad_paragraphs(corpora: Path) -> list[dict]:
    with _zst_text(corpora / "quality" / "xquad_wikipedia" / "xquad_paragraphs.jsonl.zst") as f:
        return [json.loads(l) for l in f if l.strip()]


def jaquad_paragraphs(corpora: Path) -> list[dict]:
    with _zst_text(corpora / "quality" / "jaquad_wikipedia" / "jaquad_contexts.jsonl.zst") as f:
        rows = [json.loads(l) for l in f if l.strip()]
    titles = sorted({r["title"] for r in rows})
    index = {t: i for i, t in enumerate(titles)}
    for r in rows:
        r["article"] = index[r["title"]]
    return rows


def gutenberg_books(corpora: Path) -> list[str]:
    with _zst_text(corpora / "quality" / "gutenberg_books" / "gutenberg_books.jsonl.zst") as f:
        return [json.loads(l)["text"] for l in f if l.strip()]


def lingua_sentences(corpora: Path, lang: str) -> list[str]:
    path = corpora / "langid" / "lingua_sentences" / f"{lang}.txt"
    return [l.strip() for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] if path.is_file() else []


def openstax_sentences(corpora: Path, part: str) -> list[str]:
    """Sentences of OpenStax textbook sections (CC BY-NC-SA except one CC BY book: evaluation only, never
    trained on), the `dev` or `test` half of the sections (fixed by a hash of the section's module id).
    Clean English prose of another kind than the training prose: political science, U.S. history,
    psychology, anatomy, philosophy (the nearest thing here to the issue's unseen public speeches)."""
    out = []
    with _zst_text(corpora / "quality" / "openstax_textbooks" / "openstax_textbooks.jsonl.zst") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if _half(r["module"], 0) != part:
                continue
            for para in r["text"].split("\n"):
                if len(para) > 60:
                    out += [s for s in split_spans(para, "sentence") if len(s) > 20]
    return out


def background(corpora: Path) -> list[Example]:
    """Clean prose for training; the other halves are for false-positive rates and whole documents."""
    out = [Example(s, False, "wikitext_valid", "en", "train") for s in wikitext_sentences(corpora / "quality" / "wikitext2_valid.tokens.txt")]
    for i, book in enumerate(gutenberg_books(corpora)):
        if i % 2 == 1:
            paras = [p for p in book.split("\n\n") if len(p) > 80]
            out += [Example(s, False, "gutenberg", "en", "train") for p in paras[:400] for s in split_spans(p, "sentence") if len(s) > 20]
    for r in xquad_paragraphs(corpora):
        if r["article"] < 24 and r["lang"] in LANGUAGES:
            out += [Example(s, False, "xquad", r["lang"], "train") for s in split_spans(r["text"], "sentence") if len(s) > 10]
    for r in jaquad_paragraphs(corpora):
        if r["article"] % 2 == 0 and r["article"] < 200:
            out += [Example(s, False, "jaquad", "ja", "train") for s in split_spans(r["text"], "sentence") if len(s) > 10]
    for lang in LANGUAGES:
        out += [Example(s, False, "lingua", lang, "train") for s in lingua_sentences(corpora, lang)[:500]]
    return out


# -- generated examples -----------------------------------------------------------------------
# Identity groups (plural noun phrases) for training counter-examples. The test set in
# tests/identity_templates.py uses the same groups in other sentence frames.
GROUPS = {
    "en": ["women", "men", "Muslims", "Jews", "Christians", "gay people", "lesbians", "trans people", "immigrants",
           "refugees", "Black people", "white people", "Asians", "Turks", "Africans", "Arabs", "disabled people",
           "old people", "Hindus", "Buddhists", "atheists", "Catholics", "girls", "foreigners", "migrants"],
    "de": ["Frauen", "Männer", "Muslime", "Juden", "Christen", "Schwule", "Lesben", "trans Menschen", "Einwanderer",
           "Flüchtlinge", "Schwarze", "Weiße", "Asiaten", "Türken", "Afrikaner", "Araber", "Menschen mit Behinderung",
           "alte Menschen", "Hindus", "Buddhisten", "Atheisten", "Katholiken", "Mädchen", "Ausländer", "Migranten"],
    "fr": ["femmes", "hommes", "musulmans", "juifs", "chrétiens", "homosexuels", "lesbiennes", "personnes trans",
           "immigrés", "réfugiés", "Noirs", "Blancs", "Asiatiques", "Turcs", "Africains", "Arabes",
           "personnes handicapées", "personnes âgées", "hindous", "bouddhistes", "athées", "catholiques", "filles",
           "étrangers", "migrants"],
    "es": ["mujeres", "hombres", "musulmanes", "judíos", "cristianos", "gays", "lesbianas", "personas trans",
           "inmigrantes", "refugiados", "negros", "blancos", "asiáticos", "turcos", "africanos", "árabes",
           "personas con discapacidad", "ancianos", "hindúes", "budistas", "ateos", "católicos", "chicas",
           "extranjeros", "migrantes"],
}
TRAIN_FRAMES = {
    "en": {
        "clean": ["Many {g} live in this neighbourhood.", "The report describes the history of {g} in Europe.",
                  "Our school welcomes {g} and everyone else.", "I had dinner with some {g} from work yesterday.",
                  "The museum has an exhibition about {g}.", "{G} deserve the same rights as anyone.",
                  "She wrote a book about {g} and their families.", "We invited {g} to speak at the conference.",
                  "The survey asked {g} about their jobs.", "I admire the {g} who organised the festival.",
                  "My cousin teaches {g} at the local college.", "The team includes {g} from several countries.",
                  "Most {g} I know are kind and funny.", "A group of {g} opened a bakery on our street.",
                  "The city council met with {g} last week.", "{G} and their friends celebrated together.",
                  "I am proud of the {g} in our community.", "The film tells the story of two {g}.",
                  "There were {g} and others at the meeting.", "The doctor said that {g} are welcome at the clinic.",
                  "Lots of {g} attended the concert.", "He grew up with {g} and loved it.",
                  "I really enjoy working with {g}.", "{G} have always been part of this town.",
                  "The children of {g} go to the same school as mine.", "We cooked for the {g} who visited us.",
                  "Thanks to all the {g} who helped.", "Some {g} came to the library to study.",
                  "The newspaper interviewed {g} about housing.", "{G} are great friends of ours."],
        "toxic": ["{G} are disgusting vermin.", "I hate {g}, they should all die.", "Kill all the {g}.",
                  "{G} are filthy animals and a plague.", "Get rid of the {g}, they are subhuman trash.",
                  "{G} are worthless scum who should be exterminated.", "Fuck all {g}.",
                  "{G} are a cancer on this country.", "Send the {g} to the gas chambers.",
                  "{G} are ugly, dirty and stupid."],
    },
    "de": {
        "clean": ["Viele {g} wohnen in diesem Viertel.", "Der Bericht beschreibt die Geschichte der {g} in Europa.",
                  "Unsere Schule heißt {g} willkommen.", "Ich war gestern mit {g} aus der Arbeit essen.",
                  "Das Museum zeigt eine Ausstellung über {g}.", "{G} verdienen die gleichen Rechte wie alle.",
                  "Wir haben {g} zur Konferenz eingeladen.", "Die Umfrage fragte {g} nach ihrer Arbeit.",
                  "Meine Cousine unterrichtet {g} an der Volkshochschule.", "Im Team sind {g} aus mehreren Ländern.",
                  "Die meisten {g}, die ich kenne, sind freundlich.", "Ein paar {g} haben in unserer Straße eine Bäckerei eröffnet.",
                  "Der Stadtrat hat sich letzte Woche mit {g} getroffen.", "Ich bin stolz auf die {g} in unserer Gemeinde.",
                  "Der Film erzählt die Geschichte von zwei {g}.", "Viele {g} kamen zum Konzert.",
                  "Ich arbeite sehr gern mit {g}.", "{G} gehören schon immer zu dieser Stadt.",
                  "Danke an alle {g}, die geholfen haben.", "Die Zeitung hat {g} zum Thema Wohnen befragt."],
        "toxic": ["{G} sind widerliches Ungeziefer.", "Ich hasse {g}, sie sollen alle verrecken.",
                  "{G} sind dreckige Tiere und eine Plage.", "Weg mit den {g}, das ist alles Abschaum.",
                  "{G} sind wertloser Dreck und gehören vergast.", "Scheiß {g}, alle raus.",
                  "{G} sind ein Krebsgeschwür für dieses Land.", "{G} sind hässlich, dreckig und dumm."],
    },
    "fr": {
        "clean": ["Beaucoup de {g} habitent dans ce quartier.", "Le rapport décrit l'histoire des {g} en Europe.",
                  "Notre école accueille les {g}.", "J'ai dîné hier avec des {g} du travail.",
                  "Le musée présente une exposition sur les {g}.", "Les {g} méritent les mêmes droits que tout le monde.",
                  "Nous avons invité des {g} à la conférence.", "L'enquête interrogeait les {g} sur leur travail.",
                  "Ma cousine enseigne à des {g} au lycée.", "L'équipe compte des {g} de plusieurs pays.",
                  "La plupart des {g} que je connais sont gentils.", "Des {g} ont ouvert une boulangerie dans notre rue.",
                  "Le conseil municipal a rencontré des {g} la semaine dernière.", "Je suis fier des {g} de notre quartier.",
                  "Le film raconte l'histoire de deux {g}.", "Beaucoup de {g} sont venus au concert.",
                  "J'aime beaucoup travailler avec des {g}.", "Les {g} font partie de cette ville depuis toujours.",
                  "Merci à tous les {g} qui ont aidé.", "Le journal a interrogé des {g} sur le logement."],
        "toxic": ["Les {g} sont de la vermine dégoûtante.", "Je hais les {g}, qu'ils crèvent tous.",
                  "Les {g} sont des animaux sales et une peste.", "Dehors les {g}, ce sont des ordures.",
                  "Les {g} sont des sous-hommes, il faut les exterminer.", "Nique les {g}.",
                  "Les {g} sont un cancer pour ce pays.", "Les {g} sont moches, sales et cons."],
    },
    "es": {
        "clean": ["Muchos {g} viven en este barrio.", "El informe describe la historia de los {g} en Europa.",
                  "Nuestra escuela da la bienvenida a los {g}.", "Ayer cené con unos {g} del trabajo.",
                  "El museo tiene una exposición sobre los {g}.", "Los {g} merecen los mismos derechos que todos.",
                  "Invitamos a {g} a la conferencia.", "La encuesta preguntó a los {g} por su trabajo.",
                  "Mi prima da clases a {g} en el instituto.", "En el equipo hay {g} de varios países.",
                  "La mayoría de los {g} que conozco son amables.", "Unos {g} abrieron una panadería en nuestra calle.",
                  "El ayuntamiento se reunió con {g} la semana pasada.", "Estoy orgulloso de los {g} de nuestro barrio.",
                  "La película cuenta la historia de dos {g}.", "Muchos {g} vinieron al concierto.",
                  "Me gusta mucho trabajar con {g}.", "Los {g} siempre han sido parte de esta ciudad.",
                  "Gracias a todos los {g} que ayudaron.", "El periódico entrevistó a {g} sobre la vivienda."],
        "toxic": ["Los {g} son una plaga asquerosa.", "Odio a los {g}, que se mueran todos.",
                  "Los {g} son animales sucios y basura.", "Fuera los {g}, son escoria.",
                  "Los {g} son infrahumanos, hay que exterminarlos.", "Que se jodan los {g}.",
                  "Los {g} son un cáncer para este país.", "Los {g} son feos, sucios y estúpidos."],
    },
}
# Each identity line once: without the group's name a frame is already 25 identical lines (one per
# group). Eight repeats (when names were features) made the frames' own words carry the weight.
IDENTITY_REPEAT = 1

# Hand-written insults and frames for languages without a trainable labelled set (es, ru) or
# with a tiny one (ja). Frames marked {w} take a word; clean frames use the same persons.
LEXICON = {
    "es": (["idiota", "imbécil", "estúpido", "gilipollas", "cabrón", "hijo de puta", "puta", "mierda", "pendejo",
            "maricón", "subnormal", "zorra", "basura", "asqueroso", "retrasado", "tarado", "capullo", "malparido",
            "perra", "escoria", "payaso", "inútil de mierda", "mamón", "culero"],
           ["eres un {w}", "qué {w} eres", "cállate, {w}", "{w}, vete a la mierda", "ese tío es un {w}",
            "el presidente es un {w}", "sois unos {w}", "jaja menudo {w}", "@usuario {w}", "tu madre es una {w}"],
           ["eres un buen amigo", "qué amable eres", "gracias por tu ayuda", "ese tío es muy simpático",
            "el presidente habló hoy en el congreso", "sois unos cracks", "jaja menudo partido", "@usuario gracias",
            "tu madre cocina muy bien", "no estoy de acuerdo con tu opinión", "mañana lloverá en Madrid",
            "qué partido tan aburrido", "el gobierno subirá los impuestos", "me encanta esta canción"]),
    "ru": (["идиот", "дебил", "дурак", "урод", "тварь", "сука", "мразь", "ублюдок", "козел", "придурок", "быдло",
            "чмо", "пидор", "блядь", "хуй", "шлюха", "дерьмо", "падла", "гнида", "мудак", "дура", "кретин", "скотина",
            "говно"],
           ["ты {w}", "какой же ты {w}", "заткнись, {w}", "иди на хуй, {w}", "он просто {w}", "все они {w}",
            "этот депутат {w}", "ну и {w}", "{w}, пошел вон", "сам ты {w}"],
           ["ты хороший друг", "какой же ты молодец", "спасибо за помощь", "он просто устал", "все они пришли вовремя",
            "этот депутат выступил в думе", "ну и погода сегодня", "пошел дождь", "сам ты прав", "я не согласен с вами",
            "завтра будет холодно", "мне нравится эта песня", "правительство повысит налоги", "хорошего дня"]),
    "ja": (["バカ", "死ね", "ブス", "キモい", "クズ", "ゴミ", "カス", "アホ", "うざい", "消えろ", "ガイジ", "チョン",
            "売国奴", "底辺", "雑魚", "ハゲ", "デブ", "きちがい"],
           ["お前は{w}", "本当に{w}だな", "{w}", "こいつ{w}", "{w}かよ", "マジで{w}", "あいつは{w}だ", "{w}!"],
           ["ありがとう", "本当にすごいね", "こいつ面白い", "今日はいい天気", "マジで楽しかった", "あいつは優しい",
            "お疲れ様です", "また明日", "応援しています", "おいしかった"]),
}


def generated(seed: int) -> list[Example]:
    """Identity counter-examples (TRAIN_FRAMES x GROUPS, repeated) and lexicon sentences."""
    out = []
    for lang, frames in TRAIN_FRAMES.items():
        groups = GROUPS[lang]
        for kind, templates in frames.items():
            for t in templates:
                for g in groups:
                    e = Example(t.format(g=g, G=g[0].upper() + g[1:]), kind == "toxic", "identity_frames", lang, "train")
                    out += [e] * IDENTITY_REPEAT
    rng = random.Random(seed)
    for lang, (words, toxic_frames, clean_lines) in LEXICON.items():
        for w in words:
            for f in toxic_frames:
                out.append(Example(f.format(w=w), True, "lexicon", lang, "train"))
        out += [Example(c, False, "lexicon", lang, "train") for c in clean_lines for _ in range(3)]
    rng.shuffle(out)
    return out


# English insults for insertion (es and ru use their LEXICON words). Written for this project from
# common knowledge of the language, not taken from a set. Expletives that insult nobody (fuck,
# fucking, shit, bullshit, and dick, also a name in books) are not inserted: a sentence with one is
# not toxic, and inserted ones taught the model that it is (docs/toxicity.md, "English").
INSERT_WORDS = {
    "en": ["fuck you", "stupid bitch", "asshole", "cunt",
           "dickhead", "motherfucker", "bastard", "son of a bitch", "piece of shit", "retard", "retarded", "faggot",
           "fag", "whore", "slut", "hoe", "moron", "idiot", "you idiot", "dumbass", "jackass", "scumbag", "twat",
           "wanker", "prick", "nigger", "nigga", "kike", "spic", "chink", "tranny", "shut the fuck up",
           "go to hell", "kill yourself", "stupid", "pussy", "douchebag", "loser"],
}


# English statements about groups of people, composed (written for this project, CC0): what the labelled
# English sets lack is hate said without profanity (a HateCheck-like suite's main cases: "I loathe X",
# "X are locusts", "X should be executed") and clean sentences of the same shape (negated hate,
# counter-speech, praise). Group names are dropped before training, so these lines teach the predicate.
# Each predicate is composed with COMPOSED_SUBJECTS subjects drawn (seeded) from the English groups and
# some plain references; a share of the hateful ones get the predicate's key word misspelled
# (`obfuscate`). Chosen on dev (the English functional dev cases and the labelled dev parts,
# docs/toxicity.md "English functional cases"); the dev cases' rarer words (locusts, pestilence, loathe,
# execute, lined up, waste of space, repulsive, pigs, thieves, dumb) are left out of these lists so that
# the dev cases measure how far the model carries over to words it was not given.
COMPOSED_EN = {
    # "<subject> are ..." : hateful / clean
    "are": (
        ["vermin", "rats", "cockroaches", "apes", "monkeys", "dogs", "animals", "beasts", "insects",
         "parasites", "leeches", "germs", "a disease", "a plague", "a cancer",
         "an infestation", "filth", "trash", "garbage", "scum", "savages", "subhuman", "not human",
         "a waste of oxygen", "worthless", "useless", "pathetic", "disgusting",
         "revolting", "vile", "evil", "inferior", "stupid", "brainless", "lazy", "dirty", "filthy",
         "criminals", "crooks", "liars", "rapists", "terrorists", "a threat to our children",
         "ruining this country", "destroying everything we built", "too stupid to think", "a stain on humanity"],
        ["neighbours", "friends", "colleagues", "people", "human beings", "citizens", "voters", "parents",
         "students", "teachers", "nurses", "doctors", "engineers", "farmers", "artists", "athletes", "welcome here",
         "part of this country", "kind", "generous", "clever", "hard-working", "funny", "brave", "honest",
         "talented", "friendly", "patient", "thoughtful", "valued members of the community", "equal citizens",
         "just as capable as anyone", "building a life here", "helping their neighbours", "running small businesses",
         "good at their jobs", "welcome at our table", "as diverse as any other group", "entitled to respect",
         "treated unfairly too often", "underrepresented in parliament", "raising families here", "paying taxes",
         "volunteering at the shelter", "studying at the university", "proud of their heritage",
         "part of our history", "the people next door", "a big part of the team", "loved by their families"]),
    # "I ... <subject>." : hateful / clean verbs
    "feel": (
        ["hate", "despise", "detest", "can't stand", "am disgusted by", "am sick of", "want to get rid of",
         "would never hire", "spit on", "abhor", "can't bear to look at"],
        ["like", "admire", "respect", "love", "appreciate", "am grateful to", "enjoy working with", "would gladly hire",
         "stand with", "support", "trust", "am happy to meet"]),
    # "<verb> all <subject>." (threats) : hateful / clean
    "do": (
        ["kill", "murder", "slaughter", "exterminate", "gas", "hang", "shoot", "stab", "burn", "lynch",
         "beat up", "deport", "drown", "torture", "wipe out", "string up"],
        ["welcome", "thank", "invite", "help", "hire", "feed", "visit", "call", "teach", "protect", "include",
         "support", "celebrate", "meet", "listen to", "pay"]),
    # "<subject> should be ..." : hateful / clean
    "should be": (
        ["killed", "shot", "hanged", "burned alive", "gassed", "exterminated", "locked up for good",
         "put in camps", "wiped out", "sterilised", "beaten", "thrown out like trash", "put down like dogs"],
        ["welcomed", "paid fairly", "heard", "respected", "invited", "helped", "protected", "included", "thanked",
         "supported", "treated equally", "listened to", "given a chance", "celebrated"]),
    # "<person> is ..." (insults aimed at one person, without profanity) : hateful / clean
    "is": (
        ["an idiot", "a moron", "a clown", "a joke", "a loser", "clueless", "ignorant", "brainless", "a disgrace",
         "an embarrassment", "incompetent", "a coward", "a parasite", "a rat", "a snake", "a liar", "a fraud",
         "a troll", "garbage", "trash", "worthless", "pathetic", "a waste of oxygen", "too stupid to edit",
         "a creep", "a lunatic", "a halfwit", "a nobody", "vile", "a degenerate"],
        ["right", "mistaken", "a good editor", "kind", "busy", "new here", "a careful reader", "helpful",
         "an expert", "late", "patient", "thoughtful", "correct on this point", "a good friend", "on holiday",
         "a teacher", "a volunteer", "tired", "honest", "in charge of the project", "from the north",
         "a fast learner", "retired", "allowed to disagree", "the new admin", "a student", "online now",
         "quite funny", "usually careful", "away this week"]),
}
COMPOSED_PERSONS = ["You are", "He is", "She is", "This editor is", "Your boss is", "That guy is",
                    "Honestly, you are", "The admin is", "Your friend is", "The author is"]
# Clean sentences that name a hateful predicate in order to reject it (negated hate, counter-speech).
COMPOSED_EN_REJECTING = ["I don't think {g} are {p}.", "It is wrong to say that {g} are {p}.",
                         "Nobody should call {g} {p}.", "{G} are not {p}.",
                         "Claiming that {g} are {p} is hateful.", "He was banned for writing that {g} are {p}."]
COMPOSED_SUBJECTS = 3
COMPOSED_PLAIN_SUBJECTS = ["those people", "these people", "people like them", "all of them", "such people"]
COMPOSED_REJECTING_SHARE = 1.0  # share of hateful "are" predicates also used in a rejecting clean line (0.25: negated dev cases scored toxic half the time)
COMPOSED_OBFUSCATED_SHARE = 0.5  # share of hateful lines written again with the key word misspelled
# The same idea in de, fr, es, pl, pt (pipeline/train/composed_hate.py); [] trains without them.
COMPOSED_LANGUAGES: tuple[str, ...] = ("de", "fr", "es", "pl", "pt")
# GAHD (German adversarial hate speech, CC BY): its train part trained on, its dev part a dev set, its test
# part reported. Earlier kept out because its "<group> sind ..." sentences made German sentences about
# groups score as hate; with group names dropped (identity terms) the identity tests pass with it.
TRAIN_GAHD = True
# (hateful, clean) repeats of each line of COMPOSED_LANGUAGES: their labelled sets are ten times larger
# than the composed lines, and at (1, 2) the dev cases' hate was still scored like neutral statements.
COMPOSED_MORE_REPEAT = (8, 8)
# (hateful, clean) repeats of each line of pipeline/train/english_contrasts.py (profanity that insults
# nobody, reclaimed self-naming, exclusion said without a hateful word); () trains without them.
ENGLISH_CONTRASTS_REPEAT: tuple[int, ...] = (2, 4)
COMPOSED_REPEAT = (2, 4)  # (toxic, clean) repeats of each composed line (1, 4) was better on dev but failed the French hateful guard


def obfuscate(word: str, rng: random.Random) -> str:
    """One misspelling of the kind used to get past filters: letters as digits or signs, a letter
    dropped, two letters swapped, or letters spaced out."""
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    if len(letters) < 3:
        return word
    kind = rng.randrange(4)
    if kind == 0:
        leet = {"a": "@", "e": "3", "i": "1", "o": "0", "s": "$", "t": "7"}
        idx = [i for i in letters if word[i] in leet]
        if idx:
            i = rng.choice(idx)
            return word[:i] + leet[word[i]] + word[i + 1:]
    if kind == 1:
        i = rng.choice(letters[1:])
        return word[:i] + word[i + 1:]
    if kind == 2:
        i = rng.choice(letters[1:-1])
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    return " ".join(word)


def composed(seed: int) -> list[Example]:
    """COMPOSED_EN: each predicate with COMPOSED_SUBJECTS subjects (seeded), hateful and clean, plus
    rejecting clean lines and misspelled hateful ones."""
    rng = random.Random(f"{seed}-composed")
    subjects = GROUPS["en"] + COMPOSED_PLAIN_SUBJECTS
    out = []

    def add(text: str, toxic: bool):
        out.extend([Example(text[0].upper() + text[1:], toxic, "composed", "en", "train")] * COMPOSED_REPEAT[0 if toxic else 1])

    frames = {"are": "{g} are {p}.", "feel": "I {p} {g}.", "do": "{P} all {g}.", "should be": "{g} should be {p}.",
              "is": "{g} {p}."}
    for kind, (hateful, clean) in COMPOSED_EN.items():
        for toxic, preds in ((True, hateful), (False, clean)):
            for p in preds:
                for g in rng.sample(COMPOSED_PERSONS if kind == "is" else subjects, COMPOSED_SUBJECTS):
                    add(frames[kind].format(g=g, p=p, P=p[0].upper() + p[1:]), toxic)
                    if toxic and rng.random() < COMPOSED_OBFUSCATED_SHARE:
                        words = p.split()
                        key = max(range(len(words)), key=lambda i: len(words[i]))
                        words[key] = obfuscate(words[key], rng)
                        add(frames[kind].format(g=g, p=" ".join(words), P=" ".join(words)), True)
                if toxic and kind == "are" and rng.random() < COMPOSED_REJECTING_SHARE:
                    g = rng.choice(subjects)
                    add(rng.choice(COMPOSED_EN_REJECTING).format(g=g, G=g, p=p), False)
    if ENGLISH_CONTRASTS_REPEAT:
        for text, toxic in english_contrasts.lines(GROUPS["en"], COMPOSED_PLAIN_SUBJECTS, seed, COMPOSED_SUBJECTS):
            out.extend([Example(text, toxic, "composed", "en", "train")] * ENGLISH_CONTRASTS_REPEAT[0 if toxic else 1])
    for lang in COMPOSED_LANGUAGES:
        groups = GROUPS.get(lang) or composed_hate.GROUPS_EXTRA[lang]
        for text, toxic in composed_hate.composed_lines(lang, groups, seed, obfuscate, COMPOSED_SUBJECTS,
                                                        COMPOSED_OBFUSCATED_SHARE):
            out.extend([Example(text, toxic, "composed", lang, "train")] * COMPOSED_MORE_REPEAT[0 if toxic else 1])
    return out


def load_written(directory: Path = WRITTEN_DIR) -> list[Example]:
    """Sentences written for this project (written_<lang>.tsv: `toxic|clean <TAB> text`, CC0)."""
    out = []
    for path in sorted(directory.glob("written_*.tsv")):
        lang = path.stem.split("_", 1)[1]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            label, sep, text = line.partition("\t")
            if not sep or label not in ("toxic", "clean") or not text.strip():
                raise ValueError(f"{path}:{n}: expected 'toxic|clean<TAB>text'")
            out.append(Example(text.strip(), label == "toxic", "written", lang, "train"))
    return out


def insertion_words(lang: str) -> list[str]:
    return INSERT_WORDS.get(lang) or (LEXICON[lang][0] if lang in LEXICON else [])


def inserted(examples: Sequence[Example], seed: int, per_language: int | None = None,
             languages: Sequence[str] = ("en", "es", "ru")) -> list[Example]:
    """Toxic lines made from clean prose sentences (training prose only) with one insult inserted at
    a random word boundary; the same sentences stay in training as clean lines."""
    per_language = INSERTED_PER_LANGUAGE if per_language is None else per_language
    out = []
    for lang in languages:
        words = insertion_words(lang)
        prose = sorted({e.text for e in examples if e.lang == lang and e.source in PROSE_SOURCES and not e.toxic})
        if not words or not prose:
            continue
        rng = random.Random(f"{seed}-insert-{lang}")
        for text in rng.sample(prose, min(per_language, len(prose))):
            tokens = text.split()
            tokens.insert(rng.randint(0, len(tokens)), rng.choice(words))
            out.append(Example(" ".join(tokens), True, "inserted", lang, "train"))
    return out


# -- training ---------------------------------------------------------------------------------
def fragments(prose: Sequence[Example], seed: int, per_language: int | None = None) -> list[Example]:
    """Clean fragments of 1..FRAGMENT_WORDS consecutive words of the clean training prose, per language
    (words of Chinese and Japanese prose: the model's tokens, characters)."""
    per_language = FRAGMENTS_PER_LANGUAGE if per_language is None else per_language
    out: list[Example] = []
    for lang in LANGUAGES:
        texts = [e.text for e in prose if e.lang == lang and e.source in PROSE_SOURCES]
        if not texts or not per_language:
            continue
        rng = random.Random(f"{seed}-fragment-{lang}")
        for _ in range(per_language):
            words = preprocess(rng.choice(texts)).split()
            if not words:
                continue
            k = rng.randint(1, min(FRAGMENT_WORDS, len(words)))
            i = rng.randint(0, len(words) - k)
            out.append(Example(" ".join(words[i:i + k]), False, "fragment", lang, "train"))
    return out


def training_set(labelled: Sequence[Example], corpora: Path, seed: int) -> list[Example]:
    """Labelled train parts, clean prose, generated and written lines, insult insertions; per
    language clean prose up to CLEAN_PER_TOXIC x the toxic lines."""
    prose = background(corpora)
    written = [e for e in load_written() for _ in range(WRITTEN_REPEAT * (1 if e.toxic else WRITTEN_CLEAN_FACTOR))]
    return balanced([e for e in labelled if e.part == "train"] + prose + generated(seed) + written
                    + composed(seed) + inserted(prose, seed) + fragments(prose, seed))


def balanced(examples: Sequence[Example]) -> list[Example]:
    """Per language, clean prose repeated until clean lines are CLEAN_PER_TOXIC x the toxic ones.

    MLMA (fr, ar, en) and BEEP! (ko) are mostly toxic, so without this the language token alone
    pushes ordinary prose of those languages towards toxic (5-11% of held-out lingua sentences).
    """
    out = list(examples)
    for lang in LANGUAGES:
        toxic = sum(e.toxic for e in examples if e.lang == lang)
        clean = sum(not e.toxic for e in examples if e.lang == lang)
        prose = [e for e in examples if e.lang == lang and e.source in PROSE_SOURCES]
        missing = int(CLEAN_PER_TOXIC_LANG.get(lang, CLEAN_PER_TOXIC) * toxic) - clean
        if missing > 0 and prose:
            out += [prose[i % len(prose)] for i in range(missing)]
    return out


def default_threshold() -> float:
    """The stage's default document rule threshold (`max_score`): what the dev tables measure at."""
    from stages.toxicity import ToxicityConfig

    return ToxicityConfig.model_fields["max_score"].default


def identity_dev_table(model_path: Path, threshold: float | None = None) -> dict[str, dict]:
    """Per language, on the dev identity sentences (never trained on, not the test's): share of the
    neutral ones scoring >= threshold, the worst group's share, and share of the hateful ones caught."""
    threshold = default_threshold() if threshold is None else threshold
    from stages.toxicity import Toxicity

    stage = Toxicity(model_path=str(model_path), identity_terms=DROP_IDENTITY_TERMS)
    neutral = identity_examples.dev_sentences(GROUPS)
    hateful = identity_examples.dev_hateful_sentences(GROUPS)
    out = {}
    for lang in identity_examples.DEV_FRAMES:
        rows = [(g, s) for l, g, s in neutral if l == lang]
        flagged = [p >= threshold for p in stage.score_texts([s for _, s in rows], lang)]
        per_group: dict[str, list[bool]] = {}
        for (g, _), f in zip(rows, flagged):
            per_group.setdefault(g, []).append(f)
        worst = max(per_group, key=lambda g: (sum(per_group[g]), g))
        texts = [s for l, _, s in hateful if l == lang]
        caught = sum(p >= threshold for p in stage.score_texts(texts, lang)) / len(texts)
        out[lang] = {"neutral": sum(flagged) / len(flagged), "worst_group": worst,
                     "worst": sum(per_group[worst]) / len(per_group[worst]), "hateful": caught}
    return out


def functional_dev_table(model_path: Path, threshold: float | None = None) -> list[tuple[str, bool, int, float]]:
    """English functional dev cases (pipeline/train/identity_examples.py): per category (hateful or
    not), how many and the share scoring >= threshold; the last row is the ROC-AUC over all of them."""
    threshold = default_threshold() if threshold is None else threshold
    cases = identity_examples.dev_functional_cases()
    scores = ours_scorer(model_path)([s for *_, s in cases], "en")
    out, by_cat = [], {}
    for (cat, hateful, _), p in zip(cases, scores):
        by_cat.setdefault((cat, hateful), []).append(p >= threshold)
    for (cat, hateful), flagged in by_cat.items():
        out.append((cat, hateful, len(flagged), sum(flagged) / len(flagged)))
    out.append(("ROC-AUC, all", True, len(cases), roc_auc([h for _, h, _ in cases], scores)))
    return out


def dev_report(labelled: Sequence[Example], model_path: Path, threshold: float | None = None) -> list[str]:
    """Markdown lines of everything a training change is chosen by (never the test parts):
    labelled dev parts (ROC-AUC, F1 at 0.5), identity dev sentences, and clean dev prose from the
    handbook's dev pages (share of paragraphs >= threshold, i.e. the stage's rule on one-paragraph documents)."""
    threshold = default_threshold() if threshold is None else threshold
    from pipeline.train import package_prose

    ours = ours_scorer(model_path)
    lines = ["| lang | dev set | n (toxic) | ROC-AUC | F1 at 0.5 |", "|---|---|---:|---:|---:|"]
    sets: dict[tuple[str, str], list[Example]] = {}
    for e in labelled:
        if e.part == "dev":
            sets.setdefault((e.lang, e.source), []).append(e)
    for (lang, name), items in sorted(sets.items()):
        m = prf([e.toxic for e in items], ours([e.text for e in items], lang))
        lines.append(f"| {lang} | {name} | {len(items)} ({sum(e.toxic for e in items)}) | {m['roc_auc']:.3f} | {m['f1']:.3f} |")
    lines += ["", f"| lang | identity dev neutral >= {threshold} | worst group | hateful caught | handbook dev paragraphs >= {threshold} |",
              "|---|---:|---|---:|---:|"]
    for lang, r in identity_dev_table(model_path, threshold).items():
        paras = in_language(package_prose.handbook_paragraphs(lang, "dev"), lang)
        fp = f"{sum(p >= threshold for p in ours(paras, lang)) / len(paras):.1%} of {len(paras)}" if paras else "-"
        lines.append(f"| {lang} | {r['neutral']:.1%} | {r['worst_group']} {r['worst']:.0%} | {r['hateful']:.1%} | {fp} |")
    lines += ["", f"| en functional dev category | hateful | n | share >= {threshold} |", "|---|---|---:|---:|"]
    for cat, hateful, n, share in functional_dev_table(model_path, threshold):
        cell = f"{share:.3f}" if cat.startswith("ROC-AUC") else f"{share:.1%}"
        lines.append(f"| {cat} | {'yes' if hateful else 'no'} | {n} | {cell} |")
    return lines


def in_language(texts: Sequence[str], lang: str) -> list[str]:
    """The texts whose top lid.176 label is `lang` (a translation's untranslated paragraphs dropped)."""
    if not texts:
        return []
    from stages.langid import LangID

    stage = LangID()
    stage.ensure_setup()
    return [t for t, pairs in zip(texts, stage.predict(list(texts))) if pairs and pairs[0][0] == lang]


PROSE_SOURCES = ("wikitext_valid", "gutenberg", "xquad", "jaquad", "lingua")


def training_lines(examples: Sequence[Example], seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for e in examples:
        drop = rng.random() < DROP_LANG
        line = model_line(e.text, None if drop and e.source not in KEEP_LANG_SOURCES else e.lang)
        if DROP_IDENTITY_TERMS:
            line = drop_identity_terms(line)
        if line:
            lines.append(f"{TOXIC if e.toxic else CLEAN} {line}")
    rng.shuffle(lines)
    return lines


def train(examples: Sequence[Example], out: Path, seed: int, quantize: bool = True):
    """Train RUNS times (seeds seed, seed + 1, ...), quantise, rewrite each as the equivalent
    one-dimensional model (same probabilities, faster: pipeline/train/fasttext_linear.py), save their
    mean to `out`; returns the model."""
    from pipeline.train.fasttext_linear import average_linear, to_linear
    from stages._fasttext import load_model

    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for k in range(RUNS):  # the same examples; each run its own line order and initialisation
            path = Path(tmp) / "train.txt"
            path.write_text("\n".join(training_lines(examples, seed + k)) + "\n", encoding="utf-8")
            model = train_supervised(input=str(path), thread=1, seed=seed + k, verbose=0, **FASTTEXT_PARAMS,
                                     quantize=QUANTIZE if quantize else None)
            full = Path(tmp) / ("model.ftz" if quantize else "model.bin")
            model.save_model(str(full))
            runs.append(Path(tmp) / f"linear-{k}.bin")
            to_linear(full, runs[-1] if RUNS > 1 else out)
        if RUNS > 1:
            average_linear(runs, out)
    return load_model(out)


def train_baseline(examples: Sequence[Example], seed: int, line: Callable[[str], str] | None = None):
    """Plain fastText on the same examples: raw text on one line (or `line(text)`), fastText's defaults."""
    from stages._fasttext import one_line

    line = line or one_line
    rng = random.Random(seed)
    lines = [f"{TOXIC if e.toxic else CLEAN} {t}" for e in examples if (t := line(e.text))]
    rng.shuffle(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return train_supervised(input=str(path), thread=1, seed=seed, verbose=0, **BASELINE_PARAMS)


def baseline_scorer(model, line: Callable[[str], str] | None = None) -> Callable[[list[str]], list[float]]:
    from stages._fasttext import one_line
    from stages.toxicity import toxic_probability

    line = line or one_line

    def score(texts: list[str]) -> list[float]:
        lines = [line(t) or " " for t in texts]
        labels, probs = model.predict(lines, k=-1)
        return [toxic_probability(l, p) for l, p in zip(labels, probs)]

    return score


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


def ours_scorer(model_path: Path, use_lang: bool = True) -> Callable[[list[str], str], list[float]]:
    from stages.toxicity import Toxicity

    stage = Toxicity(model_path=str(model_path), identity_terms=DROP_IDENTITY_TERMS)
    return lambda texts, lang: stage.score_texts(texts, lang if use_lang else None)


def evaluate(sets: dict[tuple[str, str], list[Example]], model_path: Path, baseline) -> list[tuple]:
    """Rows (lang, set, n, n toxic, tool, metrics) on held-out examples, every tool on the same texts."""
    ours = ours_scorer(model_path)
    ours_nolang = ours_scorer(model_path, use_lang=False)
    tools: dict[str, Callable[[list[str], str], list[float]]] = {
        "refinery": ours, "refinery (no lang)": ours_nolang,
        "plain fastText": lambda texts, lang: baseline_scorer(baseline)(texts),
    }
    try:
        from profanity_check import predict_prob

        tools["alt-profanity-check"] = lambda texts, lang: [float(p) for p in predict_prob(texts)]
    except ImportError:  # pragma: no cover
        pass
    rows = []
    for (lang, name), items in sorted(sets.items()):
        labels = [e.toxic for e in items]
        texts = [e.text for e in items]
        for tool, score in tools.items():
            rows.append((lang, name, len(items), sum(labels), tool, prf(labels, score(texts, lang))))
    return rows


def held_out_sets(labelled: Sequence[Example], extra: Sequence[Example]) -> dict[tuple[str, str], list[Example]]:
    sets: dict[tuple[str, str], list[Example]] = {}
    for e in list(labelled) + list(extra):
        if e.part == "test":
            sets.setdefault((e.lang, e.source), []).append(e)
    return sets


def clean_prose_rates(corpora: Path, model_path: Path) -> list[tuple[str, str, int, float, float, float]]:
    """Share of held-out clean sentences (lingua 500-999, WikiText-2 test, Gutenberg even books, the
    OpenStax test half) scored toxic: refinery at P >= 0.5, at the stage's default rule (each sentence
    a one-paragraph document: P >= max_score), alt-profanity-check at P >= 0.5 (its `predict`)."""
    from profanity_check import predict_prob

    ours = ours_scorer(model_path)
    rule = default_threshold()
    sets = {(lang, "lingua 500-999"): lingua_sentences(corpora, lang)[500:] for lang in LANGUAGES}
    # languages the model has no token for: scored language-agnostically
    sets.update({(lang, "lingua 0-999 (no language token)"): lingua_sentences(corpora, lang) for lang in UNSEEN_LANGUAGES})
    sets[("en", "WikiText-2 test")] = wikitext_sentences(corpora / "quality" / "wikitext2_test.tokens.txt")
    books = [b for i, b in enumerate(gutenberg_books(corpora)) if i % 2 == 0]
    sets[("en", "Gutenberg even books")] = [s for b in books for p in b.split("\n\n")[:300] for s in split_spans(p, "sentence") if len(s) > 20]
    sets[("en", "OpenStax textbooks, test half (NC, evaluation only)")] = openstax_sentences(corpora, "test")
    rows = []
    for (lang, name), texts in sets.items():
        if texts:
            scores = ours(texts, lang)
            a = sum(p >= 0.5 for p in scores) / len(texts)
            d = sum(p >= rule for p in scores) / len(texts)
            b = sum(p >= 0.5 for p in predict_prob(texts)) / len(texts)
            rows.append((lang, name, len(texts), a, d, b))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="refinery train-toxicity", description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--no-eval", action="store_true", help="train and write the model only")
    ap.add_argument("--fasttext", type=json.loads, default={}, help='experiments: JSON overriding fastText settings, e.g. {"dim": 32}')
    ap.add_argument("--keep-identity-terms", action="store_true",
                    help="ablation: train with names of groups of people as features (score it with identity_terms: false)")
    args = ap.parse_args(argv)
    global DROP_IDENTITY_TERMS
    DROP_IDENTITY_TERMS = not args.keep_identity_terms
    if not (args.corpora / "toxicity").is_dir():
        print(f"error: no corpora at {args.corpora}", file=sys.stderr)
        return 2

    labelled = load_labelled(args.corpora, args.seed)
    train_set = training_set(labelled, args.corpora, args.seed)
    n_tox = sum(e.toxic for e in train_set)
    print(f"train {len(train_set)} lines ({n_tox} toxic)")
    FASTTEXT_PARAMS.update(args.fasttext)
    train(train_set, args.out, args.seed)
    size = args.out.stat().st_size
    print(f"model: {args.out} ({size / 1e6:.2f} MB)")
    if size > MAX_BYTES:
        print(f"error: model is larger than {MAX_BYTES} bytes", file=sys.stderr)
        return 1
    # what a training change is chosen by (dev parts, the dev halves of HatEval es and ru_paradetox,
    # dev identity frames, dev handbook pages)
    evaluation_only = load_evaluation_only(args.corpora, args.seed)
    print("\n".join(dev_report(labelled + [e for e in evaluation_only if e.part == "dev"], args.out)))
    print()
    if args.no_eval:
        return 0
    baseline = train_baseline(train_set, args.seed)
    rows = evaluate(held_out_sets(labelled, evaluation_only), args.out, baseline)
    print("| lang | held-out set | n (toxic) | tool | precision | recall | F1 | ROC-AUC |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for lang, name, n, k, tool, m in rows:
        print(f"| {lang} | {name} | {n} ({k}) | {tool} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['roc_auc']:.3f} |")
    print()
    print(f"| lang | clean sentences (never trained on) | n | refinery P >= 0.5 | refinery, default rule (P >= {default_threshold()}) "
          "| alt-profanity-check P >= 0.5 |")
    print("|---|---|---:|---:|---:|---:|")
    for lang, name, n, a, d, b in clean_prose_rates(args.corpora, args.out):
        print(f"| {lang} | {name} | {n} | {a:.2%} | {d:.2%} | {b:.2%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
