"""Every declared decision setting exists in its stage's config."""
from __future__ import annotations

from stages import registry
from stages.decision_settings import DECISION_KEYS, REWROTE, allowed


def _leaves(d, prefix=""):
    if not isinstance(d, dict):
        return {prefix}
    out = set()
    for k, v in d.items():
        out |= _leaves(v, f"{prefix}.{k}" if prefix else k)
    return out


def test_declared_keys_exist():
    have = registry.available()
    for stage, keys in DECISION_KEYS.items():
        assert stage in have, stage
        cfg = have[stage].Config()  if stage != "quality" else have[stage].Config(classifier={})
        names = _leaves(cfg.model_dump())
        for key in keys:
            if key.endswith(".*"):  # a mapping (maybe empty by default) or a nested config
                node = cfg.model_dump()
                for part in key[:-2].split("."):
                    node = node[part]
                assert isinstance(node, dict), (stage, key)
            else:
                assert key in names, (stage, key)
    assert set(REWROTE) <= set(have)


def test_allowed():
    assert allowed("langid", "min_score") and not allowed("langid", "model_path")
    assert allowed("quality", "gopher_quality.min_stop_words") and not allowed("quality", "c4.remove_lines")
    assert not allowed("quality", "gopher_quality.x.y") and not allowed("nosuch", "x")
