"""English lines written for this project (CC0) that separate hate from the words it is often said with.

The English labelled sets call profanity offensive (Davidson 2017's class 1, the Wikipedia talk
comments that swear), so a model trained on them scores "Damn, the bus is late" like an insult and
a person naming themselves with a reclaimed word like a slur. These lines teach the other side:

* `profane_clean`: an expletive or a swear-word intensifier inside an ordinary sentence about no one
  (weather, food, games, work, travel): clean.
* `self_named`: a person or a community naming itself with a reclaimed word: clean.
* `exclusion`: hate said without a hateful word (who does not belong, who should leave, whose rights
  should go) about the identity groups and plain references, next to clean sentences of the same shape.

They are composed from parts (seeded), written without looking at the test part (odd frames) of
benchmarks/toxicity_functional.py beyond its category names; no composed line is a suite case
(tests/test_toxicity_functional.py). Chosen on the suite's dev part and the labelled dev parts.
"""
from __future__ import annotations

import random

EXPLETIVES = ["Shit", "Oh shit", "Damn", "Damn it", "Fuck", "Oh fuck", "Fuck me", "Holy crap", "Hell yes",
              "Hell no", "Goddamn", "Bloody hell", "Crap", "What the hell", "What the fuck", "Fucking finally",
              "Shit yes", "Jesus fucking Christ", "Aw hell", "Son of a gun"]
CLAUSES = ["the train is late again", "I left my umbrella on the bus", "we won the cup final",
           "it is snowing in April", "the printer jammed again", "my flight got cancelled", "the soup is cold",
           "I passed the driving test", "the server is down", "I spilled coffee on my notes",
           "the match went to penalties", "we finished the marathon", "the rent went up again",
           "my sister had twins", "the wifi dropped during the call", "I burned the toast",
           "the band played for three hours", "the garden flooded overnight", "I finally fixed the bike",
           "the meeting ran two hours over", "the bakery is closed today", "that thunderstorm was loud",
           "my code compiled on the first try", "the ferry left without us", "the exam was easy",
           "this hike is steep", "the new album is out", "the kids slept through the night"]
INTENSIFIED = ["That was a {x} great goal.", "The view from the top is {x} beautiful.", "This coffee is {x} strong.",
               "The traffic today was {x} awful.", "Her solo was {x} brilliant.", "It is {x} cold outside.",
               "The new bridge is {x} impressive.", "That exam was {x} hard.", "The beach was {x} crowded.",
               "My feet are {x} sore after the hike.", "The show last night was {x} funny.",
               "This bread is {x} delicious.", "The queue at the post office was {x} long.",
               "The storm knocked out the {x} power again.", "I lost my {x} wallet again.",
               "Where are my {x} glasses?", "The {x} bus never comes on time.", "Our team played {x} well."]
INTENSIFIERS = ["fucking", "damn", "bloody", "goddamn", "freaking", "so fucking", "damn well", "shit-hot"]

SELF_NAMED = ["I came out as a dyke when I was nineteen.", "Our dyke march starts at noon by the river.",
              "The queer book club meets on Thursdays.", "I'm a queer artist and my work is about home.",
              "She calls herself a proud dyke and runs the bar.", "The queer choir sang at the wedding.",
              "We are queer, we are here, and we are having a picnic.", "As a queer teacher I run the after-school club.",
              "My dyke friends taught me to fix motorbikes.", "The festival has a queer film night.",
              "He wrote a memoir about growing up queer on a farm.", "We dykes organised the bake sale this year.",
              "Queer joy is the theme of this year's exhibition.", "The archive collects queer history of the city.",
              "I love being queer and I love my friends.", "Old dykes and young queers danced together all night."]

# Hate said without a hateful word: who does not belong, who should leave, whose rights should go.
EXCLUSION_HATEFUL = ["{g} do not belong in this country", "{g} have no place among decent people",
                     "{g} should pack their bags and leave", "{g} must be thrown out of our towns",
                     "{g} should lose their citizenship", "{g} must never hold public office",
                     "{g} should be banned from our schools", "{g} should be kept out of our streets",
                     "we need to get rid of {g} for good", "{g} are ruining everything here",
                     "this town would be better off without {g}", "{g} should have no rights at all",
                     "{g} should not be allowed to work here", "{g} will never be real citizens",
                     "{g} should stay in their ghettos", "deport every last one of {g}",
                     "{g} should be kept away from decent families", "{g} should be fired from every job"]
EXCLUSION_CLEAN = ["{g} belong in this country", "{g} have a place among us", "{g} should feel at home here",
                   "{g} must be protected in our towns", "{g} keep their citizenship like anyone else",
                   "{g} can hold public office", "{g} teach in our schools", "{g} walk our streets safely",
                   "we need to listen to {g} more", "{g} are building a life here",
                   "this town is better off with {g}", "{g} have the same rights as everyone",
                   "{g} are allowed to work here", "{g} are citizens like everyone else",
                   "{g} live in every part of the city", "welcome every one of {g}",
                   "{g} are part of many families", "{g} are hired for their skills"]


def lines(groups: list[str], plain_subjects: list[str], seed: int, subjects_per_frame: int = 3) -> list[tuple[str, bool]]:
    """(text, toxic) lines: profane clean sentences, self-naming lines, exclusion lines."""
    rng = random.Random(f"{seed}-english-contrasts")
    out: list[tuple[str, bool]] = []
    for e in EXPLETIVES:
        for c in rng.sample(CLAUSES, 6):
            out.append((f"{e}, {c}{rng.choice(['.', '!', '...'])}", False))
    for frame in INTENSIFIED:
        for x in rng.sample(INTENSIFIERS, 3):
            out.append((frame.format(x=x), False))
    out += [(t, False) for t in SELF_NAMED]
    subjects = groups + plain_subjects
    for frames, toxic in ((EXCLUSION_HATEFUL, True), (EXCLUSION_CLEAN, False)):
        for f in frames:
            for g in rng.sample(subjects, subjects_per_frame):
                t = f.format(g=g) + "."
                out.append((t[0].upper() + t[1:], toxic))
    return out
