"""Mixture recipe validation: one clear line naming the file and key path for each mistake."""
from __future__ import annotations

import pytest
import yaml

from pipeline.errors import ConfigError
from pipeline.mixture.recipe import load_mixture, parse_budget, parse_mixture, resolve_inputs


def write(tmp_path, data, name="mix.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return str(p)


def err(tmp_path, data) -> str:
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as e:
        m = load_mixture(path)
        resolve_inputs(m)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(path + ": ")
    return msg[len(path) + 2 :]


@pytest.mark.parametrize(
    "value,expected",
    [(1000, 1000), ("2B", 2_000_000_000), ("500M", 500_000_000), ("1.5T", 1_500_000_000_000),
     ("10k", 10_000), ("1e9", 1_000_000_000), ("2_000", 2000), (3e6, 3_000_000), ("all", None), ("ALL", None)],
)
def test_parse_budget(value, expected):
    assert parse_budget(value) == expected


@pytest.mark.parametrize("value", [0, -5, "lots", "2X", True, 1.5, "0.1"])
def test_parse_budget_rejects(value):
    with pytest.raises(ValueError):
        parse_budget(value)


def test_standalone_ok(tmp_path):
    (tmp_path / "a").mkdir()
    path = write(tmp_path, {"sources": {"cc": {"weight": 0.7, "run": str(tmp_path / "a"), "source": "c"},
                                        "ax": {"weight": 0.3, "run": str(tmp_path / "a"), "max_epochs": 2}},
                            "budget": "2M", "seed": 7})
    m = load_mixture(path)
    assert not m.embedded and m.config.budget_tokens == 2_000_000 and m.config.seed == 7
    assert m.config.epochs_cap("ax") == 2 and m.config.epochs_cap("cc") == 4.0
    assert m.config.tokenizer == "cl100k_base" and m.config.format == "megatron"


def test_weights_must_sum_to_one(tmp_path):
    msg = err(tmp_path, {"sources": {"a": {"weight": 0.5, "run": "x"}, "b": {"weight": 0.4, "run": "y"}}})
    assert msg.startswith("sources: weights sum to 0.9")


def test_weights_within_tolerance_accepted(tmp_path):
    m = parse_mixture({"sources": {"a": {"weight": 0.3333333, "run": "x"}, "b": {"weight": 0.6666667, "run": "y"}}})
    assert set(m.config.sources) == {"a", "b"}


def test_negative_weight(tmp_path):
    msg = err(tmp_path, {"sources": {"a": {"weight": -0.5, "run": "x"}, "b": {"weight": 1.5, "run": "y"}}})
    assert msg.startswith("sources.a.weight: negative weight -0.5")


def test_unknown_key(tmp_path):
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": "x", "wieght": 1}}}) == "sources.a.wieght: unknown key"
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": "x"}}, "budjet": 5}) == "budjet: unknown key"


def test_a_bucket_name_that_is_no_file_name_is_refused(tmp_path):
    """per_source writes sources/NAME.bin: `../../x` wrote the mixture outside its folder."""
    msg = err(tmp_path, {"sources": {"../../x": {"weight": 1, "run": "x"}}})
    assert msg == "sources: name '../../x' cannot be a file name (no '/', '\\', NUL, '.' or '..')"


def test_bad_format_and_budget(tmp_path):
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": "x"}}, "format": "jsonl"}).startswith("format:")
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": "x"}}, "budget": "lots"}).startswith("budget: budget 'lots'")


def test_embedded_unknown_source(tmp_path):
    recipe = {"sources": {"cc": {"kind": "commoncrawl"}, "code": {"kind": "code"}},
              "mixture": {"sources": {"cc": {"weight": 0.5}, "wiki": {"weight": 0.5}}}}
    assert err(tmp_path, recipe) == "mixture.sources.wiki: unknown source 'wiki' (the recipe's sources: cc, code)"


def test_embedded_list_sources_and_output(tmp_path):
    run = tmp_path / "out"
    (run / "kept").mkdir(parents=True)
    (run / "kept" / "part-00000.parquet").write_bytes(b"")
    recipe = {"sources": [{"name": "cc", "kind": "commoncrawl"}], "output": str(run),
              "mixture": {"sources": {"cc": {"weight": 1.0}}, "budget": "all"}}
    m = load_mixture(write(tmp_path, recipe))
    assert m.embedded and m.recipe_sources == ["cc"] and m.recipe_output == str(run)
    [r] = resolve_inputs(m)
    assert r.files == [str(run / "kept" / "part-00000.parquet")] and r.source_value == "cc"


def test_missing_inputs(tmp_path):
    assert err(tmp_path, {"sources": {"a": {"weight": 1}}}).startswith("sources.a.run: missing")
    missing = tmp_path / "nope"
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": str(missing)}}}) == (
        f"sources.a.run: run output directory {missing} does not exist"
    )
    (tmp_path / "empty").mkdir()
    assert err(tmp_path, {"sources": {"a": {"weight": 1, "run": str(tmp_path / "empty")}}}).startswith(
        "sources.a.run: no kept Parquet files in"
    )


def test_duplicate_input(tmp_path):
    msg = err(tmp_path, {"sources": {"a": {"weight": 0.5, "run": "x", "source": "cc"},
                                     "b": {"weight": 0.5, "run": "x", "source": "cc"}}})
    assert msg.startswith("sources.b: same input as sources.a")


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="recipe file not found"):
        load_mixture(tmp_path / "absent.yaml")
    assert err(tmp_path, "sources: [unclosed").startswith("invalid YAML at line 1")
    assert err(tmp_path, "- a\n- b\n") == "expected a mapping at the top level"
