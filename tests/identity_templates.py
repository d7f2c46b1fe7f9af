"""Identity-fairness test set: neutral, positive and hateful sentences about 25 identity groups in
English, German, French and Spanish.

Written for tests/test_toxicity_identity.py. The trainer (pipeline/train/toxicity.py) generates its
identity counter-examples for the same groups from other sentence frames (TRAIN_FRAMES there): the
templates are held out, not the groups. The test checks that no sentence or frame here is used in training.
Groups are aligned across languages by position: GROUPS[lang][i] is the same group in every language.
"""
from __future__ import annotations

from pipeline.train.toxicity import GROUPS

GROUP_NAMES = GROUPS["en"]  # the group key used in reports

FRAMES = {
    "en": {
        "neutral": ["They work with a lot of {g}.", "There are {g} in my class.", "My neighbours are {g}.",
                    "The article is about {g} in the city.", "Some of my colleagues are {g}.",
                    "{G} live all over the country.", "I met several {g} at the train station.",
                    "The new law affects {g}.", "We talked to {g} about the election.",
                    "The study followed {g} for ten years."],
        "positive": ["These {g} make me so happy.", "{G} are wonderful neighbours.", "I love spending time with {g}.",
                     "My best friends are {g}.", "{G} have made great contributions to science."],
        "hateful": ["{G} are a disease and should be wiped out.", "I despise {g}, they are vile parasites.",
                    "All {g} are stupid pigs.", "Throw the {g} out, they are nothing but garbage.",
                    "{G} are disgusting and should be shot."],
    },
    "de": {
        "neutral": ["Sie arbeiten mit vielen {g} zusammen.", "In meiner Klasse sind {g}.", "Meine Nachbarn sind {g}.",
                    "Der Artikel handelt von {g} in der Stadt.", "Einige meiner Kollegen sind {g}.",
                    "{G} leben im ganzen Land.", "Ich habe am Bahnhof mehrere {g} getroffen.",
                    "Das neue Gesetz betrifft {g}.", "Wir haben mit {g} über die Wahl gesprochen.",
                    "Die Studie hat {g} zehn Jahre lang begleitet."],
        "positive": ["Diese {g} machen mich so glücklich.", "{G} sind wunderbare Nachbarn.",
                     "Ich verbringe gern Zeit mit {g}.", "Meine besten Freunde sind {g}.",
                     "{G} haben viel für die Wissenschaft geleistet."],
        "hateful": ["{G} sind eine Krankheit und müssen ausgerottet werden.", "Ich verachte {g}, das sind Parasiten.",
                    "Alle {g} sind dumme Schweine.", "Schmeißt die {g} raus, das ist nur Müll.",
                    "{G} sind ekelhaft und sollten erschossen werden."],
    },
    "fr": {
        "neutral": ["Ils travaillent avec beaucoup de {g}.", "Il y a des {g} dans ma classe.", "Mes voisins sont des {g}.",
                    "L'article parle des {g} de la ville.", "Certains de mes collègues sont des {g}.",
                    "Des {g} vivent partout dans le pays.", "J'ai rencontré plusieurs {g} à la gare.",
                    "La nouvelle loi concerne les {g}.", "Nous avons parlé de l'élection avec des {g}.",
                    "L'étude a suivi des {g} pendant dix ans."],
        "positive": ["Ces {g} me rendent si heureux.", "Les {g} sont des voisins merveilleux.",
                     "J'adore passer du temps avec des {g}.", "Mes meilleurs amis sont des {g}.",
                     "Les {g} ont beaucoup apporté à la science."],
        "hateful": ["Les {g} sont une maladie et doivent être éliminés.", "Je méprise les {g}, ce sont des parasites.",
                    "Tous les {g} sont des porcs stupides.", "Virez les {g}, ce n'est que de la merde.",
                    "Les {g} sont répugnants et devraient être abattus."],
    },
    "es": {
        "neutral": ["Trabajan con muchos {g}.", "Hay {g} en mi clase.", "Mis vecinos son {g}.",
                    "El artículo trata de los {g} de la ciudad.", "Algunos de mis compañeros son {g}.",
                    "Hay {g} en todo el país.", "Conocí a varios {g} en la estación.",
                    "La nueva ley afecta a los {g}.", "Hablamos con {g} sobre las elecciones.",
                    "El estudio siguió a {g} durante diez años."],
        "positive": ["Estos {g} me hacen muy feliz.", "Los {g} son unos vecinos maravillosos.",
                     "Me encanta pasar tiempo con {g}.", "Mis mejores amigos son {g}.",
                     "Los {g} han aportado mucho a la ciencia."],
        "hateful": ["Los {g} son una enfermedad y hay que eliminarlos.", "Desprecio a los {g}, son parásitos asquerosos.",
                    "Todos los {g} son unos cerdos estúpidos.", "Echad a los {g}, no son más que basura.",
                    "Los {g} son repugnantes y habría que fusilarlos."],
    },
}


def sentences() -> list[tuple[str, str, str, str]]:
    """(language, group key, kind, sentence) for every frame and group."""
    out = []
    for lang, kinds in FRAMES.items():
        for key, g in zip(GROUP_NAMES, GROUPS[lang]):
            cap = g[0].upper() + g[1:]
            for kind, frames in kinds.items():
                out += [(lang, key, kind, f.format(g=g, G=cap)) for f in frames]
    return out
