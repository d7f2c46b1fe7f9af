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


# -- a rule is declared once ---------------------------------------------------------------------
import pyarrow as pa
import pytest
from pydantic import ValidationError

from stages.quality.gopher_quality import GopherQuality
from stages.quality.rules import LangRules, Option, Rule, RuleSet, Signal
from stages.quality.stage import Quality

EN = LangRules(word_rules=True, stop_words=frozenset())


class Shouting(RuleSet):
    """A family written as a new rule would be: one Signal, one Rule, one measure."""

    name = "shouting"
    config_name = "ShoutingConfig"
    signals_declared = (Signal("caps_ratio", pa.float64(), "share of upper-case letters"),)
    rules = (Rule("shouting_too_many_caps", "caps_ratio", "at_most", "max_caps_ratio", 0.5, float | None,
                  "the share of upper-case letters is above this", "caps"),)
    options = (Option("min_letters", int, 1, "documents with fewer letters are not measured"),)

    def measure(self, st, lang):
        letters = [c for c in st if c.isalpha()]
        return {"caps_ratio": sum(c.isupper() for c in letters) / len(letters) if len(letters) >= self.config.min_letters else None}


def test_one_declaration_gives_config_fields_reasons_and_checks():
    rs = Shouting()
    f = Shouting.Config.model_fields["max_caps_ratio"]
    assert f.default == 0.5 and "shouting_too_many_caps" in f.description
    assert Shouting.Config.model_fields["min_letters"].description
    assert [x.name for x in rs.fields()] == ["caps_ratio"] and rs.reasons() == ["shouting_too_many_caps"]
    assert rs.datatrove_reasons() == {"shouting_too_many_caps": "caps"}
    sig = rs.signals("STOP THAT now", EN)
    assert [(c.reason, c.passed) for c in rs.checks(sig, EN)] == [("shouting_too_many_caps", False)]
    assert rs.checks(rs.signals("calm down", EN), EN)[0].passed
    assert Shouting(Shouting.Config(max_caps_ratio=None)).checks(sig, EN) == []  # null: rule off


def test_a_misspelt_config_key_fails_loudly():
    with pytest.raises(ValidationError):
        Shouting.Config(max_cap_ratio=0.3)
    with pytest.raises(ValidationError):
        Quality(gopher_quality={"min_doc_word": 30})


def test_a_rule_on_an_undeclared_signal_fails_at_import():
    with pytest.raises(TypeError, match="undeclared signal 'caps_ration'"):
        class Bad(RuleSet):
            config_name = "BadConfig"
            signals_declared = (Signal("caps_ratio", pa.float64(), ""),)
            rules = (Rule("bad_caps", "caps_ration", "at_most", "max_caps", 0.5, float, "", "caps"),)


def test_rules_sharing_a_key_must_agree_on_its_default():
    with pytest.raises(TypeError, match="different defaults"):
        class Bad(RuleSet):
            config_name = "BadConfig"
            signals_declared = (Signal("a", pa.float64(), ""), Signal("b", pa.float64(), ""))
            rules = (Rule("bad_a", "a", "at_most", "max_x", 0.5, float, "", "a"),
                     Rule("bad_b", "b", "at_most", "max_x", 0.6, float, "", "b"))


def test_a_signal_measured_under_a_wrong_name_fails_instead_of_a_null_column():
    class Typo(Shouting):
        config_name = "TypoConfig"

        def measure(self, st, lang):
            return {"caps_ration": 0.1}

    with pytest.raises(KeyError, match=r"missing \['caps_ratio'\], undeclared \['caps_ration'\]"):
        Typo().signals("x", EN)


def test_every_family_config_field_comes_from_a_rule_or_an_option_and_is_described():
    for cls in (GopherQuality, *[type(rs) for rs in Quality().rule_sets]):
        declared = {r.key for r in cls.rules if r.key} | {o.key for o in cls.options}
        assert set(cls.Config.model_fields) == declared
        assert all(f.description for f in cls.Config.model_fields.values())


def test_families_pickle_with_their_rules():
    import pickle

    rs = pickle.loads(pickle.dumps(GopherQuality(GopherQuality.Config(min_doc_words=3))))
    assert rs.config.min_doc_words == 3 and "gopher_quality_too_few_words" in rs.reasons()
