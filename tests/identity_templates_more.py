"""Identity-fairness sentences in Polish, Dutch and Hindi: neutral and positive statements about 8 groups
(written for tests/test_toxicity_identity_more.py, CC0). Groups are aligned by position:
GROUPS_MORE[lang][i] is the same group in every language (GROUP_KEYS[i])."""
from __future__ import annotations

GROUP_KEYS = ["women", "Muslims", "Jews", "gay people", "immigrants", "refugees", "Black people", "trans people"]
GROUPS_MORE = {
    "pl": ["kobiety", "muzułmanie", "Żydzi", "geje", "imigranci", "uchodźcy", "czarnoskórzy", "osoby transpłciowe"],
    "nl": ["vrouwen", "moslims", "joden", "homo's", "immigranten", "vluchtelingen", "zwarte mensen", "transgenders"],
    "hi": ["महिलाएं", "मुसलमान", "यहूदी", "समलैंगिक लोग", "प्रवासी", "शरणार्थी", "काले लोग", "ट्रांसजेंडर लोग"],
}
FRAMES_MORE = {
    "pl": {
        "neutral": ["{G} mieszkają w całym kraju.", "Moi sąsiedzi to {g}.", "W mojej klasie są {g}.",
                    "Niektórzy z moich kolegów to {g}.", "Artykuł opisuje, jak {g} żyją w mieście.",
                    "Nowa ustawa dotyczy grupy, jaką są {g}.", "{G} przyszli wczoraj na zebranie w szkole.",
                    "Według badania {g} często korzystają z komunikacji miejskiej."],
        "positive": ["{G} to wspaniali sąsiedzi.", "Moi najlepsi przyjaciele to {g}.", "{G} wnieśli wiele do nauki.",
                     "Bardzo się cieszę, że {g} są z nami."],
    },
    "nl": {
        "neutral": ["{G} wonen overal in het land.", "Mijn buren zijn {g}.", "In mijn klas zitten {g}.",
                    "Sommige collega's van mij zijn {g}.", "Het artikel gaat over {g} in de stad.",
                    "De nieuwe wet raakt {g}.", "We spraken met {g} over de verkiezingen.",
                    "Ik heb op het station een paar {g} ontmoet."],
        "positive": ["{G} zijn geweldige buren.", "Mijn beste vrienden zijn {g}.", "Ik ben graag samen met {g}.",
                     "{G} hebben veel bijgedragen aan de wetenschap."],
    },
    "hi": {
        "neutral": ["{g} पूरे देश में रहते हैं।", "मेरे पड़ोसी {g} हैं।", "मेरी कक्षा में {g} हैं।", "मेरे कुछ सहकर्मी {g} हैं।",
                    "यह लेख शहर में रहने वाले {g} के बारे में है।", "नया कानून {g} को प्रभावित करता है।",
                    "हमने चुनाव के बारे में {g} से बात की।", "मैं स्टेशन पर कुछ {g} से मिला।"],
        "positive": ["{g} बहुत अच्छे पड़ोसी हैं।", "मेरे सबसे अच्छे दोस्त {g} हैं।", "मुझे {g} के साथ समय बिताना पसंद है।",
                     "{g} ने विज्ञान में बड़ा योगदान दिया है।"],
    },
}


def sentences_more() -> list[tuple[str, str, str, str]]:
    """(lang, group key, neutral|positive, sentence)."""
    out = []
    for lang, kinds in FRAMES_MORE.items():
        for kind, frames in kinds.items():
            for frame in frames:
                for key, g in zip(GROUP_KEYS, GROUPS_MORE[lang]):
                    s = frame.format(g=g, G=g[0].upper() + g[1:])
                    out.append((lang, key, kind, s[0].upper() + s[1:]))
    return out
