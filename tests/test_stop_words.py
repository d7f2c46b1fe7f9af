from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS as DT

from stages.quality.stop_words import STOP_WORDS, UNSPACED_LANGUAGES, normalize_lang


def test_english_is_gophers_list():
    assert set(STOP_WORDS["en"]) == set(DT)


def test_normalize_lang():
    assert normalize_lang("en") == "en"
    assert normalize_lang("eng_Latn") == "en"
    assert normalize_lang("__label__zh") == "zh"
    assert normalize_lang("cmn_Hani") == "zh"
    assert normalize_lang("nb") == "no" and normalize_lang("nob_Latn") == "no"
    assert normalize_lang("pt-BR") == "pt"
    assert normalize_lang("xx") == "xx"
    assert normalize_lang(None) is None and normalize_lang("") is None


def test_lists_are_lowercase_words():
    for lang, words in STOP_WORDS.items():
        assert lang not in UNSPACED_LANGUAGES
        assert len(words) == len(set(words)) >= 8
        assert all(w == w.lower() and " " not in w for w in words)
