"""Every declared decision setting exists in its stage's config; the stages' own declarations are
what retune and the report's yields read."""
from __future__ import annotations

from pydantic import ValidationError

from stages import registry
from stages.decision_settings import allowed, dotted_keys, retunable, rewrite_reads


def test_declared_keys_exist():
    for name, cls in registry.available().items():
        if not cls.decision_keys:
            continue
        try:
            cfg = cls.Config() if name != "quality" else cls.Config(classifier={})
        except ValidationError:  # a config that needs the recipe's files (decontamination's benchmarks)
            cfg = cls.Config.model_construct()
        names = set(dotted_keys(cfg.model_dump()))
        for key in cls.decision_keys:
            if key.endswith(".*"):  # a mapping (maybe empty by default) or a nested config
                node = cfg.model_dump()
                for part in key[:-2].split("."):
                    node = node[part]
                assert isinstance(node, dict), (name, key)
            else:
                assert key in names, (name, key)


def test_allowed():
    assert allowed("langid", "min_score") and not allowed("langid", "model_path")
    assert allowed("quality", "gopher_quality.min_stop_words") and not allowed("quality", "c4.remove_lines")
    assert not allowed("quality", "gopher_quality.x.y")
    assert retunable("pii") and not allowed("pii", "email")


def test_dotted_keys_are_the_keys_allowed_reads():
    flat = dotted_keys({"min_score": 0.5, "thresholds": {"en": 0.6, "fr": 0.7}, "languages": ["en"]})
    assert flat == {"min_score": 0.5, "thresholds.en": 0.6, "thresholds.fr": 0.7, "languages": ["en"]}
    assert all(allowed("langid", k) for k in flat)


def test_rewrite_rows_hold_what_rewrote_reads():
    import pyarrow as pa

    from stages.decision_settings import rewrite_rows

    quality, pii = registry.get("quality")(classifier={}), registry.get("pii")()
    assert {"c4_removed_lines", "pii_email_count"} <= set(rewrite_reads())
    t = pa.table({"id": ["a", "b"], "text": ["x" * 10, "y"], "c4_removed_lines": [0, 2],
                  "pii_email_count": [1, None], "rps_doc_word_count": [5, 6]})
    rows = rewrite_rows(t, ("id",))
    assert rows == [{"c4_removed_lines": 0, "pii_email_count": 1, "id": "a"},
                    {"c4_removed_lines": 2, "pii_email_count": None, "id": "b"}]
    assert [quality.rewrote(r) for r in rows] == [False, True]
    assert [pii.rewrote(r) for r in rows] == [True, False]
    assert [s.rewrote(r) for s in (quality, pii) for r in rows] == [s.rewrote(r) for s in (quality, pii) for r in t.to_pylist()]
