"""Hateful and clean statements about groups of people in de, fr, es, pl, pt, composed for training
the toxicity model (written for this project from common knowledge of each language, CC0).

Why: the labelled sets of these languages are insults and profanity in tweets (GermEval, MLMA fr,
ToLD-Br, BAN-PL) or nothing at all (Spanish); none has hate said in plain words ("<group> are
vermin", "someone should shoot <group>", "<group> are not human") next to clean sentences of the same
shape (negated hate, counter-speech, reports of what someone said, praise). English has such lines
(pipeline/train/toxicity.py COMPOSED_EN); these are the same idea for five more languages.

Each language has
  * `are`: predicates for "<subject> <copula> ...": hateful (dehumanising nouns, contempt, "not human")
    and clean (jobs, virtues, belonging);
  * `hateful` / `clean`: whole sentence templates with {g} (the subject): hate, threats, exclusion,
    spelled-out wishes of harm; clean statements of liking, help, welcome;
  * `rejecting`: clean templates that name a hateful predicate {p} in order to reject, negate, report
    or condemn it (counter-speech, negated hate, quotes); `negated`: the same for hate and threats
    said with verbs ("I have never hated <group>", "threats against <group> are condemned");
  * `subjects`: plain references to a group ("these people") used beside the identity groups.
Group names are dropped before training (stages/toxicity.drop_identity_terms), so these lines teach
the predicate, not the group.

Written without copying the functional suite (benchmarks/toxicity_functional.py; the author had read
it, so shared key words such as "hate" or "vermin" are expected): no suite case is a training line
(tests/test_toxicity_functional.py).
"""
from __future__ import annotations

import random
from typing import Callable

COMPOSED: dict[str, dict] = {
    "de": {
        "copula": "{g} sind {p}.",
        "are": (
            ["Ratten", "Kakerlaken", "Affen", "Hunde", "Schweine", "Bestien", "Viecher", "Insekten", "Schädlinge",
             "Blutsauger", "Schmarotzer", "Zecken", "eine Seuche", "eine Pest", "ein Geschwür", "Dreck", "Müll",
             "Abfall", "Gesindel", "Pack", "Wilde", "Untermenschen", "keine richtigen Menschen", "weniger wert als Tiere",
             "wertlos", "nutzlos", "erbärmlich", "ekelhaft", "widerwärtig", "minderwertig", "dumm wie Stroh",
             "faul und dreckig", "Verbrecher", "Vergewaltiger", "Terroristen", "eine Gefahr für unsere Kinder",
             "schuld an allem", "der Untergang dieses Landes", "ein Schandfleck", "nicht mal das Atmen wert"],
            ["Nachbarn", "Freunde", "Kollegen", "Menschen wie du und ich", "Bürger", "Wähler", "Eltern", "Studenten",
             "Lehrer", "Pflegekräfte", "Ärztinnen und Ärzte", "Handwerker", "Künstler", "Sportler", "hier willkommen",
             "ein Teil dieses Landes", "freundlich", "großzügig", "klug", "fleißig", "witzig", "mutig", "ehrlich",
             "talentiert", "hilfsbereit", "geduldig", "gleichberechtigt", "genauso fähig wie alle anderen",
             "ein Gewinn für die Gemeinde", "oft benachteiligt", "im Parlament unterrepräsentiert",
             "stolz auf ihre Herkunft", "ein wichtiger Teil des Teams", "gute Gastgeber"]),
        "hateful": ["Ich hasse {g} wie die Pest.", "Ich verabscheue {g}.", "{G} kotzen mich an.", "Ich ertrage {g} nicht.",
                    "Mir wird schlecht, wenn ich {g} sehe.", "Ich will keine {g} in meiner Nähe.",
                    "Bringt alle {g} um!", "Vergast die {g}.", "Hängt die {g} auf!", "Erschlagt die {g}.",
                    "Man muss die {g} ausrotten.", "{G} sollte man verbrennen.", "{G} gehören an die Wand gestellt.",
                    "{G} sollte man einsperren und den Schlüssel wegwerfen.", "Ich wünsche allen {g} den Tod.",
                    "Ich würde jeden von den {g} abknallen.", "Raus mit den {g}!", "{G} haben hier nichts verloren.",
                    "Schickt die {g} zurück in ihre Länder.", "{G} dürfen keine Kinder bekommen.",
                    "{G} sollten keine Rechte haben.", "Kein Mensch braucht {g}.", "{G} verdienen keinen Respekt.",
                    "{G} sind nicht gleichwertig.", "{G} werden nie dazugehören.", "{G} sind keine echten Deutschen.",
                    "Früher gab es hier keine {g}, da war alles besser.", "{G} vergiften unser Volk.",
                    "Ich hasse alle {g}.", "Ich bringe {g} um.", "Jemand sollte {g} abstechen.", "{G} müssen sterben.",
                    "{G} verdienen Prügel.", "Ich ekle mich vor {g}.", "Ich würde {g} alle erschlagen."],
        "clean": ["Ich mag {g}.", "Ich schätze {g} sehr.", "Ich respektiere {g}.", "Wir heißen {g} willkommen.",
                  "Wir helfen {g} bei der Wohnungssuche.", "Ich arbeite gern mit {g} zusammen.",
                  "{G} sollten die gleichen Rechte haben.", "{G} gehören dazu.", "{G} verdienen Respekt.",
                  "Wir laden {g} zum Sommerfest ein.", "Ich danke allen {g}, die mitgeholfen haben.",
                  "{G} haben dieses Land mit aufgebaut.", "Ich unterstütze {g}.", "Wir stehen an der Seite der {g}.",
                  "Ich habe mit {g} Fußball gespielt.", "{G} sollten besser geschützt werden.",
                  "Ich habe nie etwas gegen {g} gehabt.", "Ich liebe meine Freunde, die {g} sind."],
        "rejecting": ["Ich finde nicht, dass {g} {p} sind.", "Es ist falsch zu sagen, {g} seien {p}.",
                      "{G} sind nicht {p}.", "Niemand darf {g} als {p} bezeichnen.",
                      "Die Behauptung, {g} seien {p}, ist Hetze.", "Er wurde verurteilt, weil er schrieb, {g} seien {p}.",
                      "Wer sagt, {g} seien {p}, verbreitet Hass.", "Der Post „{g} sind {p}“ wurde gelöscht.",
                      "Ich widerspreche jedem, der {g} {p} nennt."],
        "negated": ["Ich habe {g} nie gehasst.", "Ich hasse niemanden, auch {g} nicht.", "Niemand will {g} etwas antun.",
                    "Wer droht, {g} umzubringen, gehört vor Gericht.", "Der Satz „Tötet die {g}“ ist widerlich.",
                    "Hass auf {g} hat hier keinen Platz.", "Ich verachte niemanden, schon gar nicht {g}.",
                    "Sie zeigte den Mann an, der {g} den Tod wünschte.", "Drohungen gegen {g} verurteilen wir."],
        "subjects": ["diese Leute", "solche Leute", "die alle", "Leute wie die", "die da"],
    },
    "fr": {
        "copula": "{g} sont {p}.",
        "are": (
            ["des rats", "des cafards", "des singes", "des chiens", "des porcs", "des bêtes", "des insectes",
             "des nuisibles", "des sangsues", "des profiteurs", "des poux", "une peste", "un fléau", "un cancer",
             "de la saleté", "des déchets", "de la racaille", "des sauvages", "des sous-hommes",
             "pas vraiment humains", "moins que des animaux", "inutiles", "bons à rien", "pathétiques", "répugnants",
             "dégoûtants", "inférieurs", "bêtes à manger du foin", "sales et paresseux", "des criminels",
             "des violeurs", "des terroristes", "un danger pour nos enfants", "responsables de tous nos malheurs",
             "la ruine de ce pays", "une honte pour l'humanité"],
            ["des voisins", "des amis", "des collègues", "des gens comme les autres", "des citoyens", "des électeurs",
             "des parents", "des étudiants", "des enseignants", "des infirmiers", "des médecins", "des artisans",
             "des artistes", "des sportifs", "les bienvenus ici", "une partie de ce pays", "gentils", "généreux",
             "intelligents", "travailleurs", "drôles", "courageux", "honnêtes", "talentueux", "serviables",
             "patients", "nos égaux", "aussi capables que tout le monde", "une richesse pour la ville",
             "souvent discriminés", "sous-représentés au parlement", "fiers de leurs origines",
             "une part importante de l'équipe", "très accueillants"]),
        "hateful": ["Je hais {g} de tout mon cœur.", "J'ai horreur de {g}.", "{G} me donnent envie de vomir.",
                    "Je ne peux pas voir {g} en peinture.", "Je ne veux aucun de ces {g} près de chez moi.",
                    "Il faut exterminer {g}.", "Qu'on pende {g}.", "Brûlez {g} !", "Il faut gazer {g}.",
                    "On devrait fusiller {g}.", "{G} doivent crever.", "Je souhaite la mort de {g}.",
                    "J'aimerais tous les buter, {g}.", "Enfermez {g} et jetez la clé.", "Dehors {g} !",
                    "{G} n'ont rien à faire ici.", "Renvoyez {g} chez eux.", "{G} ne devraient avoir aucun droit.",
                    "{G} ne méritent aucun respect.", "{G} ne seront jamais des nôtres.", "Personne n'a besoin de {g}.",
                    "{G} ne sont pas de vrais Français.", "Avant {g}, tout allait mieux ici.", "{G} empoisonnent notre pays.",
                    "Interdisez aux {g} d'avoir des enfants.", "Je hais vraiment {g}.", "Je vais buter {g}.",
                    "Quelqu'un devrait tuer {g}.", "{G} doivent mourir.", "Je tuerais {g} sans hésiter.",
                    "{G} méritent des coups.", "{G} me dégoûtent."],
        "clean": ["J'apprécie beaucoup {g}.", "Je respecte {g}.", "Nous accueillons {g} avec plaisir.",
                  "Nous aidons {g} à trouver un logement.", "J'aime travailler avec {g}.",
                  "{G} doivent avoir les mêmes droits.", "{G} font partie de notre pays.", "{G} méritent le respect.",
                  "Nous invitons {g} à la fête du quartier.", "Merci à {g} qui ont aidé.",
                  "{G} ont contribué à construire ce pays.", "Je soutiens {g}.", "Nous sommes aux côtés de {g}.",
                  "J'ai joué au football avec {g}.", "{G} devraient être mieux protégés.",
                  "Je n'ai jamais rien eu contre {g}.", "J'adore passer du temps avec {g}."],
        "rejecting": ["Je ne pense pas que {g} soient {p}.", "C'est faux de dire que {g} sont {p}.",
                      "{G} ne sont pas {p}.", "Personne ne devrait dire que {g} sont {p}.",
                      "Prétendre que {g} sont {p}, c'est de la haine.", "Il a été condamné pour avoir écrit que {g} sont {p}.",
                      "Celui qui dit que {g} sont {p} répand la haine.", "Le message « {g} sont {p} » a été supprimé.",
                      "Je m'oppose à quiconque traite {g} de {p}."],
        "negated": ["Je n'ai jamais haï {g}.", "Je ne hais personne, pas même {g}.", "Personne ne veut faire de mal à {g}.",
                    "Menacer de tuer {g} doit être puni.", "La phrase « mort aux {g} » est ignoble.",
                    "La haine contre {g} n'a pas sa place ici.", "Je ne méprise personne, surtout pas {g}.",
                    "Elle a porté plainte contre l'homme qui souhaitait la mort de {g}.", "Nous condamnons les menaces contre {g}."],
        "subjects": ["ces gens", "ces gens-là", "tous ceux-là", "des gens comme eux", "ces types"],
    },
    "es": {
        "copula": "{g} son {p}.",
        "are": (
            ["ratas", "cucarachas", "monos", "perros", "cerdos", "bestias", "alimañas", "insectos", "sanguijuelas",
             "parásitos", "piojos", "una peste", "un cáncer", "escoria", "basura", "desechos", "chusma", "salvajes",
             "infrahumanos", "menos que animales", "no son humanos de verdad", "inútiles", "patéticos", "repugnantes",
             "asquerosos", "inferiores", "más tontos que una piedra", "sucios y vagos", "delincuentes", "violadores",
             "terroristas", "un peligro para nuestros hijos", "culpables de todo", "la ruina de este país",
             "una vergüenza para la humanidad"],
            ["vecinos", "amigos", "compañeros", "gente como cualquiera", "ciudadanos", "votantes", "padres",
             "estudiantes", "profesores", "enfermeros", "médicos", "artesanos", "artistas", "deportistas",
             "bienvenidos aquí", "parte de este país", "amables", "generosos", "listos", "trabajadores", "graciosos",
             "valientes", "honrados", "talentosos", "serviciales", "pacientes", "iguales a todos",
             "tan capaces como cualquiera", "una riqueza para la ciudad", "discriminados a menudo",
             "poco representados en el parlamento", "orgullosos de su origen", "una parte importante del equipo",
             "muy hospitalarios"]),
        "hateful": ["Odio con toda mi alma a {g}.", "Me dan asco {g}.", "Detesto a {g}.", "No aguanto a {g}.",
                    "No quiero a ningún {g} cerca de mi casa.", "Hay que exterminar a {g}.", "Que ahorquen a {g}.",
                    "Quemad a {g}.", "Habría que gasear a {g}.", "Hay que pegarles un tiro a {g}.",
                    "Ojalá se mueran {g}.", "Les deseo la muerte a {g}.", "Me los cargaría a todos, a {g}.",
                    "Encerrad a {g} y tirad la llave.", "¡Fuera {g}!", "{G} no pintan nada aquí.",
                    "Que se vuelvan {g} a su tierra.", "{G} no deberían tener derechos.", "{G} no merecen respeto.",
                    "{G} nunca serán de los nuestros.", "Nadie necesita a {g}.", "{G} no son españoles de verdad.",
                    "Antes de {g} aquí se vivía mejor.", "{G} envenenan nuestra sociedad.",
                    "Prohibid a {g} tener hijos.", "Yo odio a {g}.", "Odio profundamente a {g}.",
                    "Voy a acabar con {g}.", "Alguien debería matar a {g}.", "{G} tienen que morir.",
                    "Mataría a {g} sin dudarlo.", "{G} merecen una paliza."],
        "clean": ["Aprecio mucho a {g}.", "Respeto a {g}.", "Recibimos a {g} con alegría.",
                  "Ayudamos a {g} a encontrar vivienda.", "Me gusta trabajar con {g}.",
                  "{G} deben tener los mismos derechos.", "{G} forman parte de nuestro país.", "{G} merecen respeto.",
                  "Invitamos a {g} a la fiesta del barrio.", "Gracias a {g} que ayudaron.",
                  "{G} ayudaron a construir este país.", "Apoyo a {g}.", "Estamos al lado de {g}.",
                  "Jugué al fútbol con {g}.", "{G} deberían estar mejor protegidos.",
                  "Nunca he tenido nada contra {g}.", "Me encanta pasar tiempo con {g}."],
        "rejecting": ["No creo que {g} sean {p}.", "Es falso decir que {g} son {p}.", "{G} no son {p}.",
                      "Nadie debería decir que {g} son {p}.", "Afirmar que {g} son {p} es odio.",
                      "Lo condenaron por escribir que {g} son {p}.", "Quien dice que {g} son {p} siembra odio.",
                      "Borraron el mensaje «{g} son {p}».", "Me opongo a quien llame {p} a {g}."],
        "negated": ["Nunca he odiado a {g}.", "No odio a nadie, tampoco a {g}.", "Nadie quiere hacer daño a {g}.",
                    "Amenazar con matar a {g} debe castigarse.", "La frase «muerte a {g}» es repugnante.",
                    "El odio contra {g} no tiene cabida aquí.", "No desprecio a nadie, y menos a {g}.",
                    "Denunció al hombre que deseaba la muerte de {g}.", "Condenamos las amenazas contra {g}."],
        "subjects": ["esa gente", "esos", "todos ellos", "gente como esa", "esos tipos"],
    },
    "pt": {
        "copula": "{g} são {p}.",
        "are": (
            ["ratos", "baratas", "macacos", "cães", "porcos", "bestas", "bichos", "insetos", "sanguessugas",
             "parasitas", "piolhos", "uma peste", "um câncer", "escória", "lixo", "imundície", "gentalha", "selvagens",
             "sub-humanos", "menos que animais", "não são gente de verdade", "inúteis", "patéticos", "repugnantes",
             "nojentos", "inferiores", "burros como uma porta", "sujos e preguiçosos", "bandidos", "estupradores",
             "terroristas", "um perigo para nossos filhos", "culpados de tudo", "a ruína deste país",
             "uma vergonha para a humanidade"],
            ["vizinhos", "amigos", "colegas", "gente como qualquer um", "cidadãos", "eleitores", "pais", "estudantes",
             "professores", "enfermeiros", "médicos", "artesãos", "artistas", "atletas", "bem-vindos aqui",
             "parte deste país", "gentis", "generosos", "inteligentes", "trabalhadores", "engraçados", "corajosos",
             "honestos", "talentosos", "prestativos", "pacientes", "iguais a todos", "tão capazes quanto qualquer um",
             "uma riqueza para a cidade", "muitas vezes discriminados", "pouco representados no congresso",
             "orgulhosos da sua origem", "uma parte importante da equipe", "muito acolhedores"]),
        "hateful": ["Odeio {g} com todas as forças.", "Tenho nojo de {g}.", "Detesto {g}.", "Não suporto {g}.",
                    "Não quero nenhum desses {g} perto da minha casa.", "Tem que exterminar {g}.", "Enforquem {g}.",
                    "Queimem {g}.", "Deviam fuzilar {g}.", "Tem que dar um tiro em {g}.", "Tomara que {g} morram.",
                    "Desejo a morte de {g}.", "Eu acabaria com todos esses {g}.", "Prendam {g} e joguem a chave fora.",
                    "Fora {g}!", "{G} não têm nada que fazer aqui.", "Mandem {g} de volta para a terra deles.",
                    "{G} não deviam ter direitos.", "{G} não merecem respeito.", "{G} nunca vão ser dos nossos.",
                    "Ninguém precisa de {g}.", "{G} não são brasileiros de verdade.", "Antes de {g} aqui era melhor.",
                    "{G} envenenam a nossa sociedade.", "Proíbam {g} de ter filhos.", "Eu odeio {g}.",
                    "Odeio demais {g}.", "Que nojo de {g}.", "Vou acabar com {g}.", "Alguém devia matar {g}.",
                    "{G} têm que morrer.", "Eu mataria {g} sem pensar.", "{G} merecem apanhar."],
        "clean": ["Gosto muito de {g}.", "Respeito {g}.", "Recebemos {g} com alegria.",
                  "Ajudamos {g} a encontrar moradia.", "Gosto de trabalhar com {g}.",
                  "{G} devem ter os mesmos direitos.", "{G} fazem parte do nosso país.", "{G} merecem respeito.",
                  "Convidamos {g} para a festa do bairro.", "Obrigado a {g} que ajudaram.",
                  "{G} ajudaram a construir este país.", "Apoio {g}.", "Estamos ao lado de {g}.",
                  "Joguei futebol com {g}.", "{G} deviam ser mais protegidos.",
                  "Nunca tive nada contra {g}.", "Adoro passar tempo com {g}."],
        "rejecting": ["Não acho que {g} sejam {p}.", "É falso dizer que {g} são {p}.", "{G} não são {p}.",
                      "Ninguém devia dizer que {g} são {p}.", "Afirmar que {g} são {p} é ódio.",
                      "Ele foi condenado por escrever que {g} são {p}.", "Quem diz que {g} são {p} espalha ódio.",
                      "Apagaram a mensagem \"{g} são {p}\".", "Sou contra quem chama {g} de {p}."],
        "negated": ["Nunca odiei {g}.", "Não odeio ninguém, nem {g}.", "Ninguém quer fazer mal a {g}.",
                    "Ameaçar matar {g} tem que ser punido.", "A frase \"morte aos {g}\" é nojenta.",
                    "O ódio contra {g} não tem lugar aqui.", "Não desprezo ninguém, muito menos {g}.",
                    "Ela denunciou o homem que desejava a morte de {g}.", "Condenamos as ameaças contra {g}."],
        "subjects": ["essa gente", "esses aí", "todos eles", "gente assim", "esses caras"],
    },
    "pl": {
        "copula": "{g} to {p}.",
        "are": (
            ["szczury", "karaluchy", "małpy", "psy", "świnie", "bydło", "bestie", "robale", "insekty", "pijawki",
             "pasożyty", "wszy", "zaraza", "rak", "śmiecie", "ścierwo", "hołota", "motłoch", "dzikusy", "podludzie",
             "nie ludzie", "gorsi od zwierząt", "nieroby", "darmozjady", "obrzydliwe kreatury", "gorszy sort",
             "tępaki", "brudasy", "przestępcy", "gwałciciele", "terroryści", "zagrożenie dla naszych dzieci",
             "winni wszystkiemu", "zguba tego kraju", "hańba ludzkości"],
            ["sąsiedzi", "przyjaciele", "koledzy", "zwykli ludzie", "obywatele", "wyborcy", "rodzice", "studenci",
             "nauczyciele", "pielęgniarki", "lekarze", "rzemieślnicy", "artyści", "sportowcy", "mile widziani goście",
             "część tego kraju", "mili ludzie", "hojni ludzie", "mądrzy ludzie", "pracowici ludzie", "zabawni ludzie",
             "odważni ludzie", "uczciwi ludzie", "utalentowani ludzie", "pomocni ludzie", "cierpliwi ludzie",
             "równi wszystkim", "wartościowi członkowie społeczności", "bogactwo naszego miasta",
             "często dyskryminowani", "niedoreprezentowani w sejmie", "dumni ze swojego pochodzenia",
             "ważna część zespołu", "bardzo gościnni ludzie"]),
        "hateful": ["Nienawidzę ich z całego serca, {g}.", "Brzydzą mnie {g}.", "Gardzę nimi, {g}.", "Nie znoszę, jak {g} tu łażą.",
                    "Nie chcę, żeby {g} mieszkali obok mnie.", "Trzeba wytępić {g}.", "Powiesić {g}!",
                    "Spalić {g}.", "Do gazu z nimi, {g}.", "{G} powinni zostać rozstrzelani.", "Oby {g} zdechli.",
                    "Życzę śmierci, {g} na to zasłużyli.", "Wystrzelałbym ich wszystkich, {g}.",
                    "Zamknąć {g} i wyrzucić klucz.", "Wypad stąd, {g}!", "{G} nie mają tu czego szukać.",
                    "{G} niech wracają tam, skąd przyszli.", "{G} nie powinni mieć żadnych praw.",
                    "{G} nie zasługują na szacunek.", "{G} nigdy nie będą nasi.", "Nikt nie potrzebuje, żeby {g} tu byli.",
                    "{G} to nie są prawdziwi Polacy.", "Zanim przyszli {g}, było tu lepiej.", "{G} zatruwają nasz naród.",
                    "{G} nie powinni mieć dzieci.", "{G} muszą zginąć.", "{G} zasługują na lanie.",
                    "Ktoś powinien ich zabić, {g} na to zasłużyli.", "{G} mnie obrzydzają."],
        "clean": ["Lubię, kiedy {g} przychodzą w odwiedziny.", "Szanuję, że {g} tu są.", "Cieszymy się, że {g} przyjechali.",
                  "Pomagamy, gdy {g} szukają mieszkania.", "{G} dobrze się ze mną pracuje.",
                  "{G} powinni mieć takie same prawa.", "{G} są częścią naszego kraju.", "{G} zasługują na szacunek.",
                  "Zaprosiliśmy, i {g} przyszli na festyn.", "Dziękujemy, {g} bardzo pomogli.",
                  "{G} pomogli zbudować ten kraj.", "Wspieram, gdy {g} walczą o prawa.", "Stoimy razem, my i {g}.",
                  "Graliśmy w piłkę, ja i {g}.", "{G} powinni być lepiej chronieni."],
        "rejecting": ["Nie sądzę, że {g} to {p}.", "To nieprawda, że {g} to {p}.", "{G} to nie {p}.",
                      "Nikt nie powinien mówić, że {g} to {p}.", "Twierdzenie, że {g} to {p}, to mowa nienawiści.",
                      "Skazano go za wpis, że {g} to {p}.", "Kto mówi, że {g} to {p}, sieje nienawiść.",
                      "Usunięto wpis „{g} to {p}”.", "Sprzeciwiam się każdemu, kto mówi, że {g} to {p}."],
        "negated": ["Nigdy nie czułem nienawiści, {g} to moi sąsiedzi.", "Nikogo nie nienawidzę, {g} też nie.",
                    "Nikt nie chce krzywdzić, {g} są tu bezpieczni.", "Grożenie śmiercią, że {g} mają zginąć, to przestępstwo.",
                    "Hasło „{g} won” jest obrzydliwe.", "Nienawiść, jaką {g} spotykają, nie ma tu miejsca.",
                    "Zgłosiła wpis, że {g} powinni zdechnąć.", "Potępiamy groźby, które dostają {g}."],
        "subjects": ["ci ludzie", "tacy ludzie", "oni wszyscy", "tacy jak oni", "ci tutaj"],
    },
}

# Groups used as subjects for pl and pt (de, fr, es: pipeline/train/toxicity.py GROUPS). Names only,
# dropped before training like every identity term (stages/data/identity_terms.txt).
GROUPS_EXTRA = {
    "pl": ["kobiety", "mężczyźni", "muzułmanie", "Żydzi", "chrześcijanie", "geje", "lesbijki", "imigranci",
           "uchodźcy", "czarnoskórzy", "Ukraińcy", "Romowie", "Arabowie", "cudzoziemcy", "migranci"],
    "pt": ["mulheres", "homens", "muçulmanos", "judeus", "cristãos", "gays", "lésbicas", "imigrantes", "refugiados",
           "negros", "brancos", "nordestinos", "índios", "árabes", "estrangeiros", "migrantes"],
}


# Subjects as a sentence names them: with the definite article in fr, es, pt ("les femmes", "los
# judíos"), which stays after the group's name is dropped.
ARTICLES = {
    "fr": lambda g: "les " + g,
    "es": lambda g: ("las " if g.endswith("as") or g in ("mujeres", "personas con discapacidad", "personas trans")
                     else "los ") + g,
    "pt": lambda g: ("as " if g in ("mulheres", "lésbicas") else "os ") + g,
}


def composed_lines(lang: str, groups: list[str], seed: int,
                   obfuscate: Callable[[str, random.Random], str], subjects_per_line: int = 3,
                   obfuscated_share: float = 0.5) -> list[tuple[str, bool]]:
    """(text, hateful) lines of one language: every hateful and clean `are` predicate and every
    template with `subjects_per_line` subjects drawn (seeded) from the groups and plain subjects; each
    hateful `are` predicate once more in a rejecting clean line; a share of hateful lines again with
    their longest word misspelled (`obfuscate`)."""
    spec = COMPOSED[lang]
    rng = random.Random(f"{seed}-composed-{lang}")
    article = ARTICLES.get(lang, lambda g: g)
    subjects = [article(g) for g in groups] + spec["subjects"]
    out: list[tuple[str, bool]] = []

    def cap(s: str) -> str:
        return s[0].upper() + s[1:]

    def add(text: str, hateful: bool):
        out.append((cap(text), hateful))
        if hateful and rng.random() < obfuscated_share:
            words = text.split()
            key = max(range(len(words)), key=lambda i: len(words[i].strip(".,!?„“«»\"")))
            words[key] = obfuscate(words[key], rng)
            out.append((cap(" ".join(words)), True))

    hateful_are, clean_are = spec["are"]
    for hateful, preds in ((True, hateful_are), (False, clean_are)):
        for p in preds:
            for g in rng.sample(subjects, subjects_per_line):
                add(spec["copula"].format(g=g, p=p), hateful)
            if hateful:
                g = rng.choice(subjects)
                out.append((cap(rng.choice(spec["rejecting"]).format(g=g, G=cap(g), p=p)), False))
    for hateful, templates in ((True, spec["hateful"]), (False, spec["clean"] + spec["negated"])):
        for t in templates:
            for g in rng.sample(subjects, subjects_per_line):
                add(t.format(g=g, G=cap(g)), hateful)
    return out
