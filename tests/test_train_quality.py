"""`refinery train-quality` and the shipped quality model (stages/models/quality.ftz)."""
from __future__ import annotations

import gzip
import json
import random
import statistics
import subprocess
import sys

import pyarrow as pa
import pytest

from pipeline.train.quality import (
    Doc, balance, chunks, clean_social, detokenize_wikitext, join_short, match_case, read_texts, split, training_lines,
)
from stages.quality.classifier import QualityClassifier, QualityClassifierConfig, shipped_model_path
from stages.quality.stage import Quality, combined_score
from tests.test_quality import GOOD, table


def test_detokenize_and_clean():
    assert detokenize_wikitext('It is 6 @,@ 000 km ( 24 in ) long , " red " and <unk> old .') == 'It is 6,000 km (24 in) long, "red" and old.'
    assert clean_social("RT @bob: look &amp; see https://t.co/x now") == "look & see now"
    assert clean_social("rt @user so #happy today \U0001F602\u2764\ufe0f|LBR|see you") == "so happy today see you"
    assert clean_social("C# and F# stay, 3#4 too") == "C# and F# stay, 3#4 too"


def test_chunks_and_joins_have_the_same_length_range():
    rng = random.Random(0)
    text = "\n\n".join("word " * 40 for _ in range(200))
    cs = list(chunks(text, rng))
    js = list(join_short(["short message here"] * 2000, rng))
    assert cs and js and all(300 <= len(c) for c in cs) and all(300 <= len(j) <= 3100 for j in js)


def test_split_is_seeded_and_stratified():
    docs = [Doc(f"d{i}", i % 2 == 0, "a" if i < 50 else "b") for i in range(100)]
    a, b = split(docs, 1, 0.2), split(docs, 1, 0.2)
    assert a == b and len(a[1]) == 20 and not set(a[0]) & set(a[1])
    bal = balance(a[0] + [Doc("x", True, "c")] * 10, 1)
    assert sum(d.hq for d in bal) == sum(not d.hq for d in bal)


def test_split_holds_out_a_group_in_every_language():
    docs = [Doc(f"{lang}{art}", True, f"xquad-{lang}", lang, f"xquad:{art}") for lang in ("en", "de", "zh") for art in range(50)]
    train, test = split(docs, 5, 0.2)
    held = {d.group for d in test}
    assert held and not held & {d.group for d in train}
    assert all(sum(d.group == g for d in test) == 3 for g in held)  # the article in all three languages


def test_balance_per_language():
    docs = ([Doc(f"en+{i}", True, "a", "en") for i in range(30)] + [Doc(f"en-{i}", False, "b", "en") for i in range(5)]
            + [Doc(f"de+{i}", True, "c", "de") for i in range(4)] + [Doc(f"de-{i}", False, "d", "de") for i in range(6)]
            + [Doc(f"es+{i}", True, "e", "es") for i in range(9)])
    bal = balance(docs, 0)
    count = {(lang, hq): sum(d.lang == lang and d.hq == hq for d in bal) for lang in ("en", "de", "es") for hq in (True, False)}
    # en: 5 negatives repeated 4 times, 20 of 30 positives; de: 4 positives and 2 of them again; es: one class, left out
    assert count == {("en", True): 20, ("en", False): 20, ("de", True): 6, ("de", False): 6, ("es", True): 0, ("es", False): 0}
    assert len({d.text for d in bal if d.lang == "en" and d.hq}) == 20 and bal == balance(docs, 0)
    assert sum(d.lang == "es" for d in balance(docs, 0, one_class=True)) == 9


def test_match_case_equalises_lowercase_share():
    docs = [Doc(f"Word {i} Here", True, "p", "fr") for i in range(10)] + [Doc(f"word {i} here", False, "n", "fr") for i in range(6)]
    docs += [Doc("Mixed Case", False, "n", "fr")] * 4 + [Doc("Cased", True, "p", "de")]
    out = match_case(docs, 1)
    lower = [d for d in out if d.hq and d.lang == "fr" and d.text == d.text.lower()]
    assert len(lower) == 6  # 60% of the negatives are lowercase, so 6 of the 10 positives become so
    assert [d.text for d in out if d.lang == "de"] == ["Cased"] and out == match_case(docs, 1)


def test_training_lines_carry_language_tokens_when_asked():
    docs = [Doc("Ein Text.", True, "a", "de"), Doc("東京", False, "b", "ja"), Doc("x", True, "c", None)]
    assert training_lines(docs, 0, False) == ["__label__hq Ein Text.", "__label__cc 東 京", "__label__hq x"]
    lines = training_lines(docs * 40, 0, True)
    assert "__label__hq xlang_de Ein Text." in lines and "__label__cc xlang_ja 東 京" in lines
    assert "__label__hq Ein Text." in lines  # some lines go without, for documents without `lang`


def test_read_texts_formats(tmp_path):
    (tmp_path / "a.txt").write_text("one doc\n\ntwo doc\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps({"text": "three"}) + "\n")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["four", None]}), tmp_path / "c.parquet")
    assert list(read_texts(tmp_path)) == ["one doc", "two doc", "three", "four"]
    (tmp_path / "d.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match=r"d.jsonl:1"):
        list(read_texts(tmp_path / "d.jsonl"))
    with pytest.raises(ValueError, match="no such file"):
        list(read_texts(tmp_path / "missing.txt"))


@pytest.mark.slow
def test_cli_trains_a_model_and_reports_held_out_accuracy(tmp_path):
    rng = random.Random(0)
    good = ["the committee published a detailed report on the history of the region and its economy",
            "researchers describe the method the data and the results of the experiment in this paper"]
    bad = ["lol omg subscribe like share follow click here", "best deals click now free free win prize"]
    (tmp_path / "pos.txt").write_text("\n".join(rng.choice(good) for _ in range(200)) + "\n")
    (tmp_path / "neg.txt").write_text("\n".join(rng.choice(bad) for _ in range(200)) + "\n")
    out = tmp_path / "m.ftz"
    r = subprocess.run([sys.executable, "-m", "pipeline.cli", "train-quality", str(tmp_path / "pos.txt"),
                        str(tmp_path / "neg.txt"), "--out", str(out), "--seed", "3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "| all | 80 (40) | 1.000 |" in r.stdout and out.is_file()
    hq, lq = QualityClassifier(QualityClassifierConfig(model_path=str(out))).scores([good[0], bad[0]])
    assert hq > 0.5 > lq


@pytest.mark.slow
def test_cli_bad_arguments_exit_2(tmp_path):
    for args in ([], [str(tmp_path / "missing"), str(tmp_path / "missing2")], ["--default", "x"],
                 [str(tmp_path), str(tmp_path), "--page-score-only"],
                 ["--default", "--page-score-only", "--out", str(tmp_path / "missing.ftz")]):
        r = subprocess.run([sys.executable, "-m", "pipeline.cli", "train-quality", *args], capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)


def test_shipped_model_is_small_and_ranks():
    path = shipped_model_path()
    assert path.is_file() and path.stat().st_size <= 5 * 1024 * 1024
    spam = "lol omg u coming tonight?? text me back\nFREE entry in 2 a wkly comp to win cup final tkts txt now\nya ya whatever bro"
    hq, lq = QualityClassifier(QualityClassifierConfig()).scores([GOOD, spam])
    assert hq > 0.8 and lq < 0.2


def test_stage_combines_rule_and_classifier_scores():
    q = Quality()  # the shipped classifier is on by default, every language
    t = table([GOOD, GOOD])
    t = t.append_column("lang", pa.array(["en", "de"]))
    out = q.annotate(t)
    cls = out.column("quality_classifier_score").to_pylist()
    assert None not in cls
    rule = out.column("quality_rule_score").to_pylist()
    page = out.column("quality_page_score").to_pylist()
    assert rule[0] == 1.0 and None not in page
    assert out.column("quality_score").to_pylist() == pytest.approx([(1 + page[0]) / 2, (rule[1] + page[1]) / 2])
    only_en = Quality(classifier={"languages": ["en"]}).annotate(t)  # a recipe may still limit it
    assert only_en.column("quality_classifier_score").to_pylist() == [cls[0], None]
    assert only_en.column("quality_page_score").to_pylist() == [page[0], None]
    assert only_en.column("quality_score").to_pylist() == pytest.approx([(1 + page[0]) / 2, (rule[1] + 0.5) / 2])
    assert combined_score(0.5, None) == 0.5 and combined_score(None, 0.3) == 0.3
    assert "quality_rule_score" not in [f.name for f in Quality(classifier=None).signal_fields()]


# Hand-written here (never trained on): the same encyclopaedic paragraph and a chat in each language.
PROSE = {
    "de": "Die Stadt wurde im zwölften Jahrhundert gegründet, als Mönche auf dem Hügel ein kleines Kloster errichteten. "
          "In den folgenden Jahrhunderten wuchs die Siedlung zu einem Marktort mit einem Hafen und einer Mühle. "
          "Heute ist sie für ihre alte Brücke bekannt, die nach einem Hochwasser wieder aufgebaut wurde und noch immer genutzt wird.",
    "fr": "La ville a été fondée au douzième siècle, lorsque des moines ont construit une petite abbaye sur la colline. "
          "Au cours des siècles suivants, le village est devenu un bourg avec un port et un moulin. "
          "Aujourd'hui, elle est connue pour son vieux pont, reconstruit après une inondation et toujours utilisé par les habitants.",
    "es": "La ciudad fue fundada en el siglo XII, cuando unos monjes construyeron una pequeña abadía en la colina. "
          "Durante los siglos siguientes, el pueblo se convirtió en un mercado con un puerto y un molino. "
          "Hoy es conocida por su antiguo puente, que fue reconstruido después de una inundación y que todavía se utiliza.",
    "pt": "A cidade foi fundada no século XII, quando monges construíram uma pequena abadia na colina. "
          "Nos séculos seguintes, a povoação tornou-se uma vila com um porto e um moinho. "
          "Hoje é conhecida pela sua velha ponte, que foi reconstruída depois de uma cheia e que ainda é usada pelos habitantes.",
    "ru": "Город был основан в двенадцатом веке, когда монахи построили на холме небольшой монастырь. "
          "В последующие века поселение превратилось в торговый город с гаванью и мельницей. "
          "Сегодня он известен своим старым мостом, который был восстановлен после наводнения и до сих пор используется жителями.",
    "zh": "这座城市建于十二世纪，当时修道士在山上修建了一座小修道院。在随后的几个世纪里，这个定居点发展成为一个拥有港口和磨坊的集镇。"
          "今天，它以古老的桥梁而闻名，这座桥在洪水后重建，至今仍被居民使用。",
    "ja": "この町は十二世紀に修道士たちが丘の上に小さな修道院を建てたことに始まる。その後の数世紀の間に、集落は港と水車小屋を持つ市場町へと発展した。"
          "現在では、洪水の後に再建され、今も住民に使われている古い橋で知られている。",
}
CHAT = {
    "de": "haha ja genau wer kommt heute abend noch mit??\nboah ich hab echt keinen bock mehr auf den scheiß\nalter was geht ab bei euch lol",
    "fr": "mdr t'es sérieux là ?? jsuis mort\nvas-y on se capte ce soir ou quoi\nptdr nan mais allo quoi il a dit ça",
    "es": "jajaja q dices tio nos vemos luego o q\nno me jodas q ya se acabo todo\nxd vaya tela con este tio de verdad",
    "pt": "kkkkk mano vc é doido demais\naff q preguiça hj de fazer qlq coisa\nbora sair hj ou n?? responde ai",
    "ru": "ахахах ну ты даешь)))\nблин че за фигня опять с этим инетом\nкороче пиши если че, я тут",
    "zh": "哈哈哈哈笑死我了\n你说啥呢兄弟\n真的假的啊卧槽太离谱了吧",
    "ja": "まじかよｗｗｗ\nそれなｗ草\nはよ寝ろｗｗｗ明日また遊ぼうぜ",
}


def test_non_english_documents_get_a_continuous_score_that_ranks():
    """Every language gets a real classifier score (not the 0.5 midpoint of an unscored language),
    the scores spread, and the encyclopaedic paragraph outranks the chat in each language the model
    was trained on, and in Spanish, which it was not. Russian (no licence-allowed negatives here) is
    scored zero-shot and ranks this chat above the paragraph: docs/quality.md, "What is not met"."""
    langs = sorted(PROSE)
    q = Quality(drop_on_rules=False)
    out = q.annotate(table([PROSE[x] for x in langs] + [CHAT[x] for x in langs], langs + langs))
    cls = out.column("quality_classifier_score").to_pylist()
    assert None not in cls and len(set(cls)) == len(cls)
    prose, chat = dict(zip(langs, cls[:len(langs)])), dict(zip(langs, cls[len(langs):]))
    assert {x for x in langs if prose[x] <= chat[x]} <= {"ru"}
    assert max(cls) - min(cls) > 0.5
    assert statistics.median(prose.values()) > 0.5 > statistics.median(chat.values())
    page = out.column("quality_page_score").to_pylist()  # the ranking score: the paragraph first in every language
    assert all(p > c for p, c in zip(page[:len(langs)], page[len(langs):])), page


# Measured on the shipped model (docs/quality.md, "held out, per language"), set a little below: ja
# is left out (one held-out negative document: japanese-toxic has 437 short posts in all).
LANGUAGE_AUC = {"en": 0.98, "de": 0.98, "fr": 0.98, "es": 0.97, "pt": 0.97, "ru": 0.96, "zh": 0.98, "ar": 0.98,
                "tr": 0.98, "ko": 0.98, "da": 0.9, "hi": 0.72}
CLEAN_MIN_REQUIRED = 0.5  # the lowest median among en de fr es pt ru zh ja was 0.571 (de)
CLEAN_SHARE_ABOVE_HALF = 0.5  # 40 of the 75 languages' medians were above 0.5


@pytest.mark.slow
def test_shipped_model_separates_held_out_corpora(corpora):
    """Held-out parts of the training sets, and sets never trained on, per language."""
    from pipeline.train.quality import XQUAD_LANGUAGES, default_sets, evaluate

    pool, extra = default_sets(corpora, 13)
    _, test = split(pool, 13, 0.2)
    rows = dict(evaluate(test, shipped_model_path()))
    assert rows["all"]["roc_auc"] > 0.96  # pooled over languages: 0.971 (vi and th prose, never trained on, score low)
    rows = dict(evaluate(extra, shipped_model_path()))
    assert rows["wikitext2-test"]["accuracy"] > 0.95
    both = test + [d for d in extra if d.source != "lingua-heldout" or d.lang in XQUAD_LANGUAGES]
    per_lang = dict(evaluate(both, shipped_model_path(), by="lang"))
    for lang, auc in LANGUAGE_AUC.items():
        assert per_lang[lang]["roc_auc"] > auc, (lang, per_lang[lang])


@pytest.mark.slow
def test_clean_text_scores_alike_in_every_language(corpora):
    """Clean news sentences never trained on (lingua 500-999): if the model had learned which
    languages are "high quality", their medians would sit far apart."""
    from pipeline.train.quality import _quantile, default_sets, scores_of

    _, extra = default_sets(corpora, 13)
    clean = [d for d in extra if d.source == "lingua-heldout"]
    by: dict[str, list[float]] = {}
    for d, s in zip(clean, scores_of(clean, shipped_model_path())):
        by.setdefault(d.lang, []).append(s)
    medians = {lang: _quantile(xs, 0.5) for lang, xs in by.items()}
    required = [medians[x] for x in ("en", "de", "fr", "es", "pt", "ru", "zh", "ja")]
    assert min(required) > CLEAN_MIN_REQUIRED, medians
    assert sum(m > 0.5 for m in medians.values()) >= CLEAN_SHARE_ABOVE_HALF * len(medians), medians


SAMPLE_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja")  # the sample corpus's


@pytest.mark.slow
def test_clean_text_ranks_alike_in_the_sample_languages(corpora):
    """The stage's quality_score (rules and page score) on clean news sentences never fitted on
    (lingua 500-999): each sample-corpus language's median within 0.15 of English's."""
    from pipeline.train.quality import _quantile, default_sets, stage_scores

    _, extra = default_sets(corpora, 13)
    clean = [(d.text, d.lang, True, "lingua") for d in extra if d.source == "lingua-heldout" and d.lang in SAMPLE_LANGUAGES]
    by: dict[str, list[float]] = {}
    for r, s in zip(clean, stage_scores(clean)["quality_score"]):
        by.setdefault(r[1], []).append(s)
    medians = {lang: _quantile(xs, 0.5) for lang, xs in by.items()}
    assert all(abs(m - medians["en"]) <= 0.15 for m in medians.values()), medians
