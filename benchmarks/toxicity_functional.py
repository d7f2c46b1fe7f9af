"""A functional test suite for the toxicity stage in en, de, fr, es, pl, pt (written for this project, CC0).

Cases in the manner of HateCheck (Röttger et al. 2021): hateful statements of several kinds about
groups of people (and slurs aimed at a person), next to non-hateful contrasts that share their
words. Each category has 4 sentence frames per language, filled with 7 groups; frames with an even
index are the dev part (what a change to the stage may be chosen by), frames with an odd index the
test part (reported, never looked at while choosing). Nothing here is trained on
(tests/test_toxicity_functional.py checks that no case is a training line), but the English composed
training lines (pipeline/train/toxicity.py COMPOSED_EN) share the forms of some English frames
("I despise <group>", "<group> are vermin"), so the English figures lean the model's way.

    PYTHONPATH=. python benchmarks/toxicity_functional.py [--part dev|test|all] [--max-score 0.95]

prints per language the ROC-AUC of the stage's document score and, per category, the share of
cases the stage rejects at its default rule (hateful: caught; non-hateful: wrongly rejected).
"""
from __future__ import annotations

import argparse
from typing import Iterator

# hateful (True) and non-hateful (False) categories
HATEFUL = ("direct_hate", "threat", "dehumanisation", "slur", "negated_positive", "implicit_hate", "spelling_variant")
CONTRASTS = ("counter_speech", "quote", "negated_hate", "neutral_identity", "positive_identity", "reclaimed_slur",
             "profanity_not_hate")
LANGUAGES = ("en", "de", "fr", "es", "pl", "pt")

GROUPS = {
    "en": ["women", "Muslims", "Jews", "gay people", "immigrants", "Black people", "trans people"],
    "de": ["Frauen", "Muslime", "Juden", "Schwule", "Einwanderer", "Schwarze", "trans Menschen"],
    "fr": ["les femmes", "les musulmans", "les juifs", "les homosexuels", "les immigrés", "les Noirs", "les personnes trans"],
    "es": ["las mujeres", "los musulmanes", "los judíos", "los gays", "los inmigrantes", "los negros", "las personas trans"],
    "pl": ["kobiety", "muzułmanie", "Żydzi", "geje", "imigranci", "czarni", "osoby trans"],
    "pt": ["as mulheres", "os muçulmanos", "os judeus", "os gays", "os imigrantes", "os negros", "as pessoas trans"],
}
# Polish frames need the accusative/instrumental of some groups: one form per frame kind.
PL_ACC = ["kobiet", "muzułmanów", "Żydów", "gejów", "imigrantów", "czarnych", "osób trans"]  # genitive (nienawidzę X)
PL_INS = ["kobietami", "muzułmanami", "Żydami", "gejami", "imigrantami", "czarnymi", "osobami trans"]

# {g}: the group as in GROUPS; {G}: capitalised; {a}: Polish genitive; {i}: Polish instrumental.
FRAMES: dict[str, dict[str, list[str]]] = {
    "en": {
        "direct_hate": ["I truly hate {g}.", "I really can't stand {g}, they disgust me.", "{G} are the worst people on earth.",
                        "I despise {g} more than anything."],
        "threat": ["I am going to kill {g}.", "Someone should shoot all {g}.", "We will hunt down {g} one by one.",
                   "{G} deserve to be beaten to death."],
        "dehumanisation": ["{G} are vermin.", "{G} are nothing but animals.", "{G} are a disease that must be cured.",
                           "{G} are parasites feeding on us."],
        "slur": ["You are a stupid faggot.", "Shut up, you filthy kike.", "Go back to the jungle, you nigger.",
                 "That tranny should be locked up."],
        "negated_positive": ["{G} are not human.", "{G} will never be equal to us.", "{G} are not welcome anywhere.",
                             "I will never respect {g}."],
        "implicit_hate": ["{G} should go back to where they came from.", "This country was better before {g} arrived.",
                          "Keep {g} away from our children.", "No {g} should be allowed to vote."],
        "spelling_variant": ["I h4te {g}.", "{G} are v3rmin.", "K1ll every one of the {g}.", "{G} are sc*m."],
        "counter_speech": ["Saying that {g} are vermin is disgusting.", "Nobody should ever say they hate {g}.",
                           "Calling {g} animals is pure hatred and I reject it.", "If you threaten {g}, you will answer to all of us."],
        "quote": ["He shouted \"I hate {g}\" and was arrested.", "The article quotes a troll who wrote that {g} are vermin.",
                  "She reported the post saying \"kill all {g}\" to the police.", "The sign read \"{g} are animals\", and everyone condemned it."],
        "negated_hate": ["I don't hate {g}.", "{G} are not vermin.", "I would never hurt {g}.", "{G} are not a threat to anyone."],
        "neutral_identity": ["I met some {g} at the station today.", "The report counts {g} living in the city.",
                             "Many {g} work in this hospital.", "We talked about {g} in history class."],
        "positive_identity": ["I really love {g}.", "{G} are wonderful people.", "{G} make our town a better place.",
                              "I am proud to stand with {g}."],
        "reclaimed_slur": ["As a queer woman, I use the word queer with pride.", "We dykes on bikes lead the parade every year.",
                           "My friends and I call ourselves queer and we love it.", "Queer and proud, that's who I am."],
        "profanity_not_hate": ["Fuck yeah, what a game!", "Holy shit, that concert was amazing.",
                               "Damn, I forgot my keys again.", "This pizza is so fucking good."],
    },
    "de": {
        "direct_hate": ["Ich hasse {g}.", "Ich kann {g} nicht ausstehen, sie ekeln mich an.", "{G} sind die schlimmsten Menschen der Welt.",
                        "Ich verachte {g} zutiefst."],
        "threat": ["Ich werde {g} umbringen.", "Man sollte alle {g} erschießen.", "Wir jagen {g} einen nach dem anderen.",
                   "{G} gehören totgeschlagen."],
        "dehumanisation": ["{G} sind Ungeziefer.", "{G} sind nichts als Tiere.", "{G} sind eine Krankheit, die ausgerottet werden muss.",
                           "{G} sind Parasiten, die von uns leben."],
        "slur": ["Du dreckige Schwuchtel.", "Halt die Fresse, du Kanake.", "Verpiss dich, du Neger.", "Die Transe sollte man wegsperren."],
        "negated_positive": ["{G} sind keine Menschen.", "{G} werden nie gleichwertig sein.", "{G} sind nirgendwo willkommen.",
                             "Ich werde {g} niemals respektieren."],
        "implicit_hate": ["{G} sollen dahin zurück, wo sie herkommen.", "Dieses Land war besser, bevor {g} kamen.",
                          "Haltet {g} von unseren Kindern fern.", "{G} sollten nicht wählen dürfen."],
        "spelling_variant": ["Ich h4sse {g}.", "{G} sind Ungez1efer.", "T0tet alle {g}.", "{G} sind Absch@um."],
        "counter_speech": ["Zu sagen, dass {g} Ungeziefer sind, ist widerlich.", "Niemand sollte sagen, dass er {g} hasst.",
                           "{G} als Tiere zu bezeichnen ist purer Hass, und ich lehne das ab.", "Wer {g} bedroht, bekommt es mit uns allen zu tun."],
        "quote": ["Er rief „Ich hasse {g}“ und wurde festgenommen.", "Der Artikel zitiert einen Troll, der schrieb, {g} seien Ungeziefer.",
                  "Sie hat den Beitrag „Tötet alle {g}“ bei der Polizei angezeigt.", "Auf dem Schild stand „{g} sind Tiere“, und alle verurteilten es."],
        "negated_hate": ["Ich hasse {g} nicht.", "{G} sind kein Ungeziefer.", "Ich würde {g} niemals etwas antun.", "{G} sind für niemanden eine Gefahr."],
        "neutral_identity": ["Ich habe heute am Bahnhof ein paar {g} getroffen.", "Der Bericht zählt die {g}, die in der Stadt leben.",
                             "Viele {g} arbeiten in diesem Krankenhaus.", "Wir haben im Geschichtsunterricht über {g} gesprochen."],
        "positive_identity": ["Ich mag {g}.", "{G} sind wunderbare Menschen.", "{G} machen unsere Stadt zu einem besseren Ort.",
                              "Ich stehe stolz an der Seite von {g}."],
        "reclaimed_slur": ["Als schwuler Mann nenne ich mich stolz eine Tunte.", "Wir Lesben und Schwulen feiern heute den CSD.",
                           "Meine Freunde und ich nennen uns queer, und wir lieben es.", "Queer und stolz, so bin ich."],
        "profanity_not_hate": ["Scheiße, was für ein geiles Spiel!", "Verdammt, ich habe schon wieder meine Schlüssel vergessen.",
                               "Das Konzert war verdammt gut.", "Die Pizza ist echt scheißlecker."],
    },
    "fr": {
        "direct_hate": ["Je déteste {g}.", "Je ne supporte pas {g}, ils me dégoûtent.", "{G} sont les pires gens du monde.",
                        "Je méprise {g} plus que tout."],
        "threat": ["Je vais tuer {g}.", "Il faudrait abattre {g}.", "Nous allons traquer {g} un par un.", "{G} méritent d'être battus à mort."],
        "dehumanisation": ["{G} sont de la vermine.", "{G} ne sont que des animaux.", "{G} sont une maladie qu'il faut éradiquer.",
                           "{G} sont des parasites qui vivent sur notre dos."],
        "slur": ["Ta gueule, sale pédé.", "Casse-toi, sale bougnoule.", "Retourne dans ta brousse, sale nègre.", "Ce travelo devrait être enfermé."],
        "negated_positive": ["{G} ne sont pas des êtres humains.", "{G} ne seront jamais nos égaux.", "{G} ne sont les bienvenus nulle part.",
                             "Je ne respecterai jamais {g}."],
        "implicit_hate": ["{G} devraient rentrer chez eux.", "Ce pays allait mieux avant l'arrivée de {g}.",
                          "Gardez {g} loin de nos enfants.", "{G} ne devraient pas avoir le droit de voter."],
        "spelling_variant": ["Je d3teste {g}.", "{G} sont de la verm1ne.", "Tu3z {g}.", "{G} sont des ord*res."],
        "counter_speech": ["Dire que {g} sont de la vermine est répugnant.", "Personne ne devrait dire qu'il déteste {g}.",
                           "Traiter {g} d'animaux, c'est de la haine pure et je la rejette.", "Qui menace {g} aura affaire à nous tous."],
        "quote": ["Il a crié « je déteste {g} » et a été arrêté.", "L'article cite un troll qui a écrit que {g} sont de la vermine.",
                  "Elle a signalé à la police le message « tuez {g} ».", "La pancarte disait « {g} sont des animaux » et tout le monde l'a condamnée."],
        "negated_hate": ["Je ne déteste pas {g}.", "{G} ne sont pas de la vermine.", "Je ne ferais jamais de mal à {g}.",
                         "{G} ne sont une menace pour personne."],
        "neutral_identity": ["J'ai croisé {g} à la gare aujourd'hui.", "Le rapport recense {g} qui vivent dans la ville.",
                             "Beaucoup parmi {g} travaillent dans cet hôpital.", "Nous avons parlé de l'histoire de {g} en classe."],
        "positive_identity": ["J'aime {g}.", "{G} sont des gens merveilleux.", "{G} rendent notre ville meilleure.",
                              "Je suis fier de soutenir {g}."],
        "reclaimed_slur": ["En tant que gouine, je revendique ce mot avec fierté.", "Nous, les pédés et les gouines, défilons fièrement.",
                           "Mes amis et moi, on se dit queer et on adore ça.", "Queer et fier, c'est ce que je suis."],
        "profanity_not_hate": ["Putain, quel match incroyable !", "Merde, j'ai encore oublié mes clés.",
                               "Ce concert était vachement bien, bordel.", "Cette pizza est putain de bonne."],
    },
    "es": {
        "direct_hate": ["Odio a {g}.", "No soporto a {g}, me dan asco.", "{G} son la peor gente del mundo.", "Desprecio a {g} más que a nada."],
        "threat": ["Voy a matar a {g}.", "Habría que fusilar a {g}.", "Vamos a cazar a {g} uno por uno.", "{G} merecen morir a golpes."],
        "dehumanisation": ["{G} son una plaga.", "{G} no son más que animales.", "{G} son una enfermedad que hay que erradicar.",
                           "{G} son parásitos que viven de nosotros."],
        "slur": ["Cállate, maricón de mierda.", "Vete a tu país, sudaca.", "Lárgate, negrata asqueroso.", "Ese travelo debería estar encerrado."],
        "negated_positive": ["{G} no son seres humanos.", "{G} nunca serán iguales a nosotros.", "{G} no son bienvenidos en ninguna parte.",
                             "Nunca respetaré a {g}."],
        "implicit_hate": ["{G} deberían volver a su país.", "Este país estaba mejor antes de que llegaran {g}.",
                          "Mantened a {g} lejos de nuestros hijos.", "{G} no deberían poder votar."],
        "spelling_variant": ["0dio a {g}.", "{G} son una pl@ga.", "M4tad a {g}.", "{G} son esc*ria."],
        "counter_speech": ["Decir que {g} son una plaga es repugnante.", "Nadie debería decir que odia a {g}.",
                           "Llamar animales a {g} es puro odio y lo rechazo.", "Quien amenace a {g} tendrá que vérselas con todos nosotros."],
        "quote": ["Gritó «odio a {g}» y fue detenido.", "El artículo cita a un troll que escribió que {g} son una plaga.",
                  "Denunció a la policía el mensaje «matad a {g}».", "El cartel decía «{g} son animales» y todos lo condenaron."],
        "negated_hate": ["No odio a {g}.", "{G} no son una plaga.", "Nunca le haría daño a {g}.", "{G} no son una amenaza para nadie."],
        "neutral_identity": ["Hoy me crucé con {g} en la estación.", "El informe cuenta a {g} que viven en la ciudad.",
                             "Muchos de {g} trabajan en este hospital.", "Hablamos de la historia de {g} en clase."],
        "positive_identity": ["Quiero mucho a {g}.", "{G} son gente maravillosa.", "{G} hacen de nuestra ciudad un lugar mejor.",
                              "Estoy orgulloso de apoyar a {g}."],
        "reclaimed_slur": ["Como bollera, uso esa palabra con orgullo.", "Nosotras, las bolleras, abrimos el desfile cada año.",
                           "Mis amigos y yo nos llamamos queer y nos encanta.", "Marica y orgulloso, así soy yo."],
        "profanity_not_hate": ["¡Joder, qué partidazo!", "Mierda, otra vez me he dejado las llaves.",
                               "Ese concierto fue de puta madre.", "Esta pizza está buenísima, coño."],
    },
    "pl": {
        "direct_hate": ["Nienawidzę {a}.", "Nie znoszę {a}, brzydzą mnie.", "{G} to najgorsi ludzie na świecie.", "Gardzę {i} bardziej niż czymkolwiek."],
        "threat": ["Zabiję {a}.", "Trzeba wystrzelać {a}.", "Wyłapiemy {a} jednego po drugim.", "{G} zasługują, żeby ich zatłuc na śmierć."],
        "dehumanisation": ["{G} to robactwo.", "{G} to tylko zwierzęta.", "{G} to choroba, którą trzeba wytępić.",
                           "{G} to pasożyty, które żyją na nasz koszt."],
        "slur": ["Zamknij się, pedale.", "Wypierdalaj, ciapaku.", "Spadaj do Afryki, czarnuchu.", "Tego parcha trzeba zamknąć."],
        "negated_positive": ["{G} to nie są ludzie.", "{G} nigdy nie będą nam równi.", "{G} nie są nigdzie mile widziani.",
                             "Nigdy nie będę szanować {a}."],
        "implicit_hate": ["{G} powinni wracać tam, skąd przyszli.", "Ten kraj był lepszy, zanim przyjechali {g}.",
                          "Trzymajcie {a} z dala od naszych dzieci.", "{G} nie powinni mieć prawa głosu."],
        "spelling_variant": ["Ni3nawidzę {a}.", "{G} to r0bactwo.", "Z@bić {a}.", "{G} to śc*erwo."],
        "counter_speech": ["Mówienie, że {g} to robactwo, jest obrzydliwe.", "Nikt nie powinien mówić, że nienawidzi {a}.",
                           "Nazywanie {a} zwierzętami to czysta nienawiść i ją odrzucam.", "Kto grozi {i}, będzie miał do czynienia z nami wszystkimi."],
        "quote": ["Krzyczał „nienawidzę {a}” i został zatrzymany.", "Artykuł cytuje trolla, który napisał, że {g} to robactwo.",
                  "Zgłosiła policji wpis „zabić {a}”.", "Na transparencie było „{g} to zwierzęta” i wszyscy to potępili."],
        "negated_hate": ["Nie nienawidzę {a}.", "{G} to nie robactwo.", "Nigdy nie skrzywdziłbym {a}.", "{G} nie są dla nikogo zagrożeniem."],
        "neutral_identity": ["Spotkałem dziś na dworcu {a}.", "Raport liczy {a} mieszkających w mieście.",
                             "Wielu spośród {a} pracuje w tym szpitalu.", "Na lekcji historii rozmawialiśmy o historii {a}."],
        "positive_identity": ["Lubię {a}.", "{G} to wspaniali ludzie.", "{G} sprawiają, że nasze miasto jest lepsze.",
                              "Z dumą wspieram {a}."],
        "reclaimed_slur": ["Jako ciota mówię o sobie to słowo z dumą.", "My, pedały i lesby, idziemy dziś w paradzie.",
                           "Ja i moi znajomi mówimy o sobie queer i bardzo to lubimy.", "Queer i dumny, taki właśnie jestem."],
        "profanity_not_hate": ["Kurwa, co za mecz!", "Cholera, znowu zapomniałem kluczy.",
                               "Ten koncert był zajebisty.", "Ta pizza jest kurewsko dobra."],
    },
    "pt": {
        "direct_hate": ["Odeio {g}.", "Não suporto {g}, eles me dão nojo.", "{G} são as piores pessoas do mundo.", "Desprezo {g} mais do que tudo."],
        "threat": ["Vou matar {g}.", "Deviam fuzilar {g}.", "Vamos caçar {g} um por um.", "{G} merecem morrer de pancada."],
        "dehumanisation": ["{G} são uma praga.", "{G} não passam de animais.", "{G} são uma doença que precisa ser erradicada.",
                           "{G} são parasitas que vivem às nossas custas."],
        "slur": ["Cala a boca, seu viado.", "Volta pra tua terra, seu macaco.", "Sai daqui, sua sapatão nojenta.", "Esse traveco devia estar preso."],
        "negated_positive": ["{G} não são seres humanos.", "{G} nunca serão iguais a nós.", "{G} não são bem-vindos em lugar nenhum.",
                             "Nunca vou respeitar {g}."],
        "implicit_hate": ["{G} deviam voltar para o lugar de onde vieram.", "Este país era melhor antes de chegarem {g}.",
                          "Mantenham {g} longe dos nossos filhos.", "{G} não deviam poder votar."],
        "spelling_variant": ["0deio {g}.", "{G} são uma pr@ga.", "M4tem {g}.", "{G} são esc*ria."],
        "counter_speech": ["Dizer que {g} são uma praga é nojento.", "Ninguém devia dizer que odeia {g}.",
                           "Chamar {g} de animais é puro ódio e eu rejeito isso.", "Quem ameaçar {g} vai ter que se ver com todos nós."],
        "quote": ["Ele gritou \"odeio {g}\" e foi preso.", "O artigo cita um troll que escreveu que {g} são uma praga.",
                  "Ela denunciou à polícia a mensagem \"matem {g}\".", "O cartaz dizia \"{g} são animais\" e todos condenaram."],
        "negated_hate": ["Não odeio {g}.", "{G} não são uma praga.", "Eu nunca faria mal a {g}.", "{G} não são uma ameaça para ninguém."],
        "neutral_identity": ["Encontrei {g} na estação hoje.", "O relatório conta {g} que vivem na cidade.",
                             "Muitos entre {g} trabalham neste hospital.", "Falamos da história de {g} na aula."],
        "positive_identity": ["Adoro {g}.", "{G} são pessoas maravilhosas.", "{G} tornam a nossa cidade melhor.",
                              "Tenho orgulho de apoiar {g}."],
        "reclaimed_slur": ["Como sapatão, uso essa palavra com orgulho.", "Nós, as bichas e as sapatões, abrimos a parada.",
                           "Eu e meus amigos nos chamamos de queer e adoramos.", "Bicha e com orgulho, é isso que eu sou."],
        "profanity_not_hate": ["Porra, que jogo incrível!", "Merda, esqueci as chaves outra vez.",
                               "Esse show foi bom pra caralho.", "Essa pizza está boa demais, caramba."],
    },
}


def _fill(lang: str, frame: str, k: int) -> str:
    g = GROUPS[lang][k]
    a = PL_ACC[k] if lang == "pl" else g
    i = PL_INS[k] if lang == "pl" else g
    text = frame.format(g=g, G=g[0].upper() + g[1:], a=a, i=i)
    return text[0].upper() + text[1:]


def cases(lang: str, part: str = "all") -> list[tuple[str, bool, str, str]]:
    """(category, hateful, group or "-", text); `part`: dev (even frames), test (odd frames) or all."""
    out = []
    for cat, frames in FRAMES[lang].items():
        for f, frame in enumerate(frames):
            if part != "all" and (f % 2 == 0) != (part == "dev"):
                continue
            if "{" in frame:
                for k, g in enumerate(GROUPS[lang]):
                    out.append((cat, cat in HATEFUL, g, _fill(lang, frame, k)))
            else:  # aimed at a person: one case, weighted like a group frame
                out += [(cat, cat in HATEFUL, "-", frame)] * len(GROUPS[lang])
    return out


def every_case(part: str = "all") -> Iterator[tuple[str, str, bool, str, str]]:
    for lang in LANGUAGES:
        for c in cases(lang, part):
            yield (lang, *c)


def measure(stage, part: str) -> dict[str, dict]:
    """Per language: ROC-AUC of the document score, and per category the share the stage rejects."""
    import pyarrow as pa
    from pipeline.schema import make_record, records_to_table
    from pipeline.train.toxicity import roc_auc

    out = {}
    for lang in LANGUAGES:
        cs = cases(lang, part)
        texts = list(dict.fromkeys(t for *_, t in cs))
        t = records_to_table(make_record(source="suite", kind="jsonl", file="f", offset=i, text=x) for i, x in enumerate(texts))
        t = t.append_column("lang", pa.array([lang] * len(texts), pa.string()))
        ann = stage.annotate(t)
        score = dict(zip(texts, ann.column("toxicity_score").to_pylist()))
        reject = dict(zip(texts, stage.decide(ann)))
        if any(score[x] is None for x in texts):
            out[lang] = {"auc": None, "categories": {}}
            continue
        by: dict[str, list[bool]] = {}
        for cat, _, _, x in cs:
            by.setdefault(cat, []).append(reject[x] is not None)
        out[lang] = {"auc": roc_auc([h for _, h, _, _ in cs], [score[x] for *_, x in cs]),
                     "n": len(cs), "categories": {c: sum(v) / len(v) for c, v in by.items()}}
    return out


def main(argv: list[str] | None = None) -> None:
    from stages.toxicity import Toxicity

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("dev", "test", "all"), default="test")
    ap.add_argument("--config", default="{}", help='stage settings as JSON, e.g. {"max_score": 0.9}')
    args = ap.parse_args(argv)
    import json

    cfg = {"languages": list(LANGUAGES), **json.loads(args.config)}  # every suite language scored, judged or not
    stage = Toxicity(**cfg)
    res = measure(stage, args.part)
    print(f"functional suite, {args.part} part, stage settings {json.dumps(cfg)}")
    print("| category | hateful | " + " | ".join(LANGUAGES) + " |")
    print("|---|---|" + "---:|" * len(LANGUAGES))
    print("| ROC-AUC | | " + " | ".join(f"{res[l]['auc']:.3f}" for l in LANGUAGES) + " |")
    for cat in HATEFUL + CONTRASTS:
        print(f"| {cat} | {'yes' if cat in HATEFUL else 'no'} | "
              + " | ".join(f"{res[l]['categories'][cat]:.0%}" for l in LANGUAGES) + " |")


if __name__ == "__main__":
    main()
