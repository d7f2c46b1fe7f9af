"""Dev sentences for identity fairness: the set the toxicity trainer's identity knobs are judged on.

Why: the fairness test (tests/identity_templates.py) must stay held out, so any change meant to
lower false positives on sentences about identity groups is chosen by this third, separate set of
neutral sentences (same groups, other frames; disjoint from the test frames and from the training
frames, checked in tests/test_identity_examples.py). `refinery train-toxicity` prints its rate.

Measured lesson (docs/filters.md, "Identity fairness"): on these short template sentences the dev
rate and the test rate do not move together; a change that lowered the dev rate raised the test's.
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
# catching (a change that only read the neutral ones removed nearly all hateful catches, docs/filters.md).
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
