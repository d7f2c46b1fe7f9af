"""pipeline/train/identity_examples.py: the identity dev set is separate from training and from the test."""
from __future__ import annotations

from pipeline.train.identity_examples import DEV_FRAMES, DEV_HATEFUL_FRAMES, dev_hateful_sentences, dev_sentences
from pipeline.train.toxicity import GROUPS, TRAIN_FRAMES, generated
from tests.identity_templates import FRAMES, sentences


def test_dev_set_covers_every_group_and_language_of_the_test():
    rows = dev_sentences(GROUPS)
    assert set(DEV_FRAMES) == set(FRAMES)
    for lang in DEV_FRAMES:
        assert len([r for r in rows if r[0] == lang]) == len(GROUPS[lang]) * len(DEV_FRAMES[lang])
    assert all("{" not in s and s[0].isupper() for *_, s in rows)


def test_training_dev_and_test_sentences_are_disjoint():
    test = {s for *_, s in sentences()}
    dev = {s for *_, s in dev_sentences(GROUPS)}
    trained = {e.text for e in generated(13)}
    assert not test & dev and not dev & trained
    dev_frames = {f for fs in DEV_FRAMES.values() for f in fs}
    assert not dev_frames & {f for fs in FRAMES.values() for k in fs.values() for f in k}
    assert not dev_frames & {f for fs in TRAIN_FRAMES.values() for k in fs.values() for f in k}


def test_hateful_dev_sentences_are_their_own_too():
    rows = dev_hateful_sentences(GROUPS)
    assert set(DEV_HATEFUL_FRAMES) == set(FRAMES)
    assert all("{" not in s and s[0].isupper() for *_, s in rows)
    hateful = {s for *_, s in rows}
    assert not hateful & {s for *_, s in sentences()}
    assert not hateful & {e.text for e in generated(13)}
    frames = {f for fs in DEV_HATEFUL_FRAMES.values() for f in fs}
    assert not frames & {f for fs in FRAMES.values() for k in fs.values() for f in k}
    assert not frames & {f for fs in TRAIN_FRAMES.values() for k in fs.values() for f in k}


def test_functional_dev_cases_are_never_trained_on():
    """The English functional dev cases judge the written and composed English lines: none of them is a
    training line, an identity test sentence or an identity dev sentence, and both labels occur."""
    from pipeline.train.identity_examples import dev_functional_cases
    from pipeline.train.toxicity import composed, load_written

    cases = dev_functional_cases()
    texts = {s for *_, s in cases}
    assert {h for _, h, _ in cases} == {True, False} and all("{" not in s for s in texts)
    trained = {e.text for e in generated(13)} | {e.text for e in load_written()} | {e.text for e in composed(13)}
    assert not texts & trained
    assert not texts & {s for *_, s in sentences()}
    assert not texts & {s for *_, s in dev_sentences(GROUPS)} and not texts & {s for *_, s in dev_hateful_sentences(GROUPS)}


def test_composed_lines_leave_out_the_functional_dev_cases_rarer_words():
    """docs/toxicity.md: the composed lists leave out these words of the functional dev cases, so the
    dev cases measure how far the model carries over to words it was not given."""
    from pipeline.train import toxicity as t
    from pipeline.train.identity_examples import dev_functional_cases

    composed_text = " ".join([p for hateful, clean in t.COMPOSED_EN.values() for p in hateful + clean]
                             + t.COMPOSED_EN_REJECTING + t.COMPOSED_PERSONS + t.COMPOSED_PLAIN_SUBJECTS).lower()
    dev_text = " ".join(s for *_, s in dev_functional_cases()).lower()
    rare = ["locust", "pestilence", "loathe", "execut", "lined up", "waste of space", "repulsive", "pigs", "thieves",
            "dumb"]
    assert all(w in dev_text for w in rare)
    assert not [w for w in rare if w in composed_text]
