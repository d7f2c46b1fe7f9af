"""Stop words for Gopher's "at least 2 stop words" rule, per language, and the unspaced languages.

English is Gopher's own list (datatrove's STOP_WORDS). The others are the most frequent function
words of each language, in the same spirit (about ten short words any running text contains);
a recipe can replace or add lists. Matching is exact and case-sensitive, as in datatrove.
Languages without a list skip the stop-word rule instead of being judged by English words.
"""
from __future__ import annotations

# datatrove 0.10's STOP_WORDS (gopher_quality_filter.py), copied: importing that module imports all
# of datatrove.pipeline.filters (0.4 CPU-s of start-up). tests/test_stop_words.py checks it is equal.
GOPHER_EN = ("the", "be", "to", "of", "and", "that", "have", "with")

STOP_WORDS: dict[str, tuple[str, ...]] = {
    "en": tuple(GOPHER_EN),
    "de": ("der", "die", "und", "in", "den", "von", "zu", "das", "mit", "sich", "des", "ist"),
    "fr": ("de", "la", "le", "et", "les", "des", "en", "un", "du", "une", "que", "est"),
    "es": ("de", "la", "que", "el", "en", "y", "los", "del", "se", "las", "por", "un"),
    "it": ("di", "e", "il", "la", "che", "in", "per", "un", "del", "è", "non", "le"),
    "pt": ("de", "a", "o", "que", "e", "do", "da", "em", "um", "para", "com", "não"),
    "nl": ("de", "van", "het", "een", "en", "in", "is", "dat", "op", "te", "zijn", "voor"),
    "pl": ("w", "i", "na", "z", "się", "nie", "do", "to", "że", "jest", "o"),
    "ru": ("и", "в", "не", "на", "что", "с", "по", "я", "он", "как", "это"),
    "uk": ("і", "в", "на", "що", "не", "з", "та", "до", "у", "й"),
    "tr": ("ve", "bir", "bu", "da", "de", "için", "ile", "çok", "olarak", "daha"),
    "sv": ("och", "i", "att", "det", "som", "en", "på", "är", "av", "för"),
    "da": ("og", "i", "at", "det", "en", "den", "til", "er", "som", "på"),
    "no": ("og", "i", "er", "det", "som", "på", "en", "til", "av", "for", "å"),
    "cs": ("a", "v", "se", "na", "je", "že", "to", "s", "z", "o"),
    "ro": ("de", "și", "în", "a", "la", "cu", "care", "din", "nu", "o"),
    "hu": ("a", "az", "és", "hogy", "nem", "is", "egy", "meg"),
    "fi": ("ja", "on", "ei", "että", "se", "oli", "hän", "mutta", "kuin"),
    "ca": ("de", "la", "i", "el", "que", "a", "en", "les", "del", "per"),
    "vi": ("và", "của", "là", "có", "các", "được", "trong", "cho", "không", "những"),
    "id": ("yang", "dan", "di", "ini", "itu", "dengan", "untuk", "dari", "dalam", "tidak"),
}

# The same lists as sets, built once per process: every quality stage starts from them (the report's
# yield section builds about 140 stages), and a recipe's own lists are added per stage.
STOP_WORD_SETS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in STOP_WORDS.items()}

# Written without spaces between words: word counts, n-grams and words per line mean nothing there.
UNSPACED_LANGUAGES: tuple[str, ...] = ("zh", "ja", "th", "lo", "km", "my", "bo")

# ISO 639-3 (and OpenLID / GlotLID "xxx_Script") codes of the languages above, to their 639-1 code.
ISO3_TO_ISO1 = {
    "eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl",
    "pol": "pl", "rus": "ru", "ukr": "uk", "tur": "tr", "swe": "sv", "dan": "da", "nob": "no",
    "nno": "no", "nor": "no", "ces": "cs", "ron": "ro", "hun": "hu", "fin": "fi", "cat": "ca",
    "vie": "vi", "ind": "id", "zho": "zh", "cmn": "zh", "yue": "zh", "wuu": "zh", "jpn": "ja",
    "tha": "th", "lao": "lo", "khm": "km", "mya": "my", "bod": "bo",
}


def normalize_lang(code: str | None) -> str | None:
    """'en', 'eng', 'eng_Latn', '__label__en', 'nb' -> 'en' / 'no'; None stays None."""
    if not code:
        return None
    code = code.removeprefix("__label__").split("_")[0].split("-")[0].lower()
    if code == "nb":
        return "no"
    return ISO3_TO_ISO1.get(code, code)
