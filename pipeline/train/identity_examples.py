"""Dev sentences for identity fairness: the set the toxicity trainer's identity knobs are judged on.

Why: the fairness test (tests/identity_templates.py) must stay held out, so any change meant to
lower false positives on sentences about identity groups is chosen by this third, separate set of
neutral sentences (same groups, other frames; disjoint from the test frames and from the training
frames, checked in tests/test_identity_examples.py). `refinery train-toxicity` prints its rate.

Measured lesson (docs/toxicity.md, "Identity fairness"): on these short template sentences the dev
rate and the test rate do not move together; a change that lowered the dev rate raised the test's.

Also the English functional dev cases (`DEV_FUNCTIONAL`: hate without profanity, negated hate,
counter-speech, strong words about things), which the written and composed English training lines
are judged by (docs/toxicity.md, "English functional cases"); never trained on either.
"""
from __future__ import annotations

from typing import Sequence

DEV_FRAMES = {
    "en": ["The bus was full of {g} going to work.", "Her brothers married {g}.", "The library has books by {g}.",
           "{G} gathered in the square for the festival.", "The school hired {g} as teachers."],
    "de": ["Der Bus war voller {g} auf dem Weg zur Arbeit.", "Ihre Brüder haben {g} geheiratet.",
           "Die Bibliothek hat Bücher von {g}.", "{G} haben sich zum Fest auf dem Platz versammelt.",
           "Die Schule hat {g} als Lehrkräfte eingestellt."],
    "fr": ["Le bus était plein de {g} qui allaient au travail.", "Ses frères ont épousé des {g}.",
           "La bibliothèque a des livres écrits par des {g}.", "Des {g} se sont réunis sur la place pour la fête.",
           "L'école a embauché des {g} comme enseignants."],
    "es": ["El autobús iba lleno de {g} que iban a trabajar.", "Sus hermanos se casaron con {g}.",
           "La biblioteca tiene libros escritos por {g}.", "{G} se reunieron en la plaza para la fiesta.",
           "La escuela contrató a {g} como profesores."],
}


def _filled(frames: dict[str, list[str]], groups: dict[str, Sequence[str]]) -> list[tuple[str, str, str]]:
    """(lang, group, sentence) for every frame and group of each language."""
    return [(lang, g, f.format(g=g, G=g[0].upper() + g[1:]))
            for lang, fs in frames.items() for g in groups[lang] for f in fs]


def dev_sentences(groups: dict[str, Sequence[str]]) -> list[tuple[str, str, str]]:
    """(lang, group, sentence) for every dev frame and group (all neutral)."""
    return _filled(DEV_FRAMES, groups)


# Hateful dev sentences, so that a change lowering false positives is also judged on what it stops
# catching (a change that only read the neutral ones removed nearly all hateful catches, docs/toxicity.md).
DEV_HATEFUL_FRAMES = {
    "en": ["{G} are rats and should be locked up.", "Nobody wants {g} here, they are trash.",
           "{G} are lazy, useless leeches.", "I wish all {g} would drop dead.", "{G} are savages who ruin everything."],
    "de": ["{G} sind Ratten und gehören eingesperrt.", "Niemand will {g} hier, das ist Gesindel.",
           "{G} sind faule, nutzlose Schmarotzer.", "Ich wünschte, alle {g} würden krepieren.",
           "{G} sind Wilde, die alles kaputt machen."],
    "fr": ["Les {g} sont des rats qu'il faut enfermer.", "Personne ne veut des {g} ici, ce sont des déchets.",
           "Les {g} sont des parasites paresseux et inutiles.", "J'espère que tous les {g} vont crever.",
           "Les {g} sont des sauvages qui détruisent tout."],
    "es": ["Los {g} son ratas y hay que encerrarlos.", "Nadie quiere a los {g} aquí, son basura.",
           "Los {g} son unos vagos inútiles y chupasangres.", "Ojalá todos los {g} se mueran.",
           "Los {g} son salvajes que lo destruyen todo."],
}


def dev_hateful_sentences(groups: dict[str, Sequence[str]]) -> list[tuple[str, str, str]]:
    """(lang, group, sentence) for every hateful dev frame and group."""
    return _filled(DEV_HATEFUL_FRAMES, groups)


# English functional dev cases (HateCheck-like categories, written for this project, never trained on;
# disjoint from written_en.tsv, tests/test_identity_examples.py): per category, whether it is hateful and
# frames ({g}/{G} filled with DEV_FUNCTIONAL_GROUPS; frames without a group are used once). What a change
# to the English training lines is judged by, beside the labelled dev parts: hate said without profanity
# must score high, negated hate, counter-speech and strong words about things must not.
DEV_FUNCTIONAL_GROUPS = ["women", "immigrants", "Muslims", "gay people", "Black people", "Jews", "trans people",
                         "disabled people"]
DEV_FUNCTIONAL = {
    "negative emotion": (True, ["I really loathe {g}.", "{G} fill me with disgust.", "Being near {g} makes me sick to my stomach."]),
    "negative attribute": (True, ["{G} are all thieves.", "{G} are so dumb it hurts.", "Typical {g}, always lying and cheating."]),
    "dehumanising": (True, ["{G} are nothing but pigs.", "{G} are like a swarm of locusts.", "{G} are a pestilence on this land."]),
    "threat": (True, ["I'm going to stab the next one of those {g} I see.", "I'll make sure {g} pay with their lives.",
                      "Executing {g} would be a public service.", "{G} should be lined up against a wall."]),
    "question or opinion": (True, ["Aren't {g} just a waste of space?", "I honestly believe {g} are worthless.",
                                   "Is there anything more repulsive than {g}?"]),
    "pronoun": (True, ["I saw a group of {g} today. They are repulsive as usual.", "Don't talk to me about {g}. I despise them."]),
    "spelling": (True, ["{G} are g@rbage.", "{G} are wrthless.", "{G} are d i s g u s t i n g."]),
    "negated": (False, ["I don't think {g} are worthless at all.", "{G} are not a threat to anyone.", "I could never hate {g}."]),
    "counter-speech": (False, ["He wrote that {g} are pigs, and he was rightly banned.", "Saying that {g} should be killed is never acceptable.",
                               "Your post calling {g} garbage is shameful.", "Please stop describing {g} as a pestilence."]),
    "about things": (False, ["I really loathe cold coffee.", "Pigeons are like a swarm of locusts in this square.",
                             "This printer is garbage.", "The heat this summer was a pestilence.", "I despise long meetings.",
                             "The old bridge should be torn down and replaced."]),
}


def dev_functional_cases() -> list[tuple[str, bool, str]]:
    """(category, hateful, sentence) for every English functional dev frame (and group)."""
    out = []
    for cat, (hateful, frames) in DEV_FUNCTIONAL.items():
        for f in frames:
            if "{g}" in f.lower():
                out += [(cat, hateful, f.format(g=g, G=g[0].upper() + g[1:])) for g in DEV_FUNCTIONAL_GROUPS]
            else:
                out.append((cat, hateful, f))
    return out
