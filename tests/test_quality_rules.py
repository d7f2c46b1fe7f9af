from stages.quality.rules import at_least, at_most, flag


def test_at_most():
    assert at_most("r", 0.3, 0.3).passed
    c = at_most("r", 0.45, 0.3)
    assert not c.passed and abs(c.score - 0.25) < 1e-9
    assert at_most("r", 10.0, 0.3).score == 0.0
    assert at_most("r", 1.0, None) is None and at_most("r", None, 0.3) is None


def test_at_least():
    assert at_least("r", 50, 50).passed
    c = at_least("r", 25, 50)
    assert not c.passed and c.score == 0.25
    assert at_least("r", 0, 50).score == 0.0
    assert at_least("r", 1, 0) is None  # 0 disables, as datatrove's `if self.x and ...`


def test_flag():
    assert flag("r", True).score == 0.0 and not flag("r", True).passed
    assert flag("r", False).passed and flag("r", None) is None
