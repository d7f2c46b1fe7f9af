from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.engine.recipe import load_recipe
from tests.helpers import write_jsonl, write_recipe  # noqa: F401  (registers test stages)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "hello world again"}])
    return tmp_path


def recipe(tmp_path: Path, body: str) -> str:
    return str(write_recipe(tmp_path / "r.yaml", body))


GOOD = """
output: {out}
sources:
  web: {{kind: jsonl, paths: ["{inp}/*.jsonl"]}}
stages:
  - stage: test_min_words
    min_words: 2
"""


def good(data: Path, **extra: str) -> str:
    return GOOD.format(out=data / "out", inp=data / "in")


def test_valid_recipe_loads(data):
    r = load_recipe(recipe(data, good(data)))
    assert list(r.sources) == ["web"]
    assert r.stages[0].name == "test_min_words" and r.stages[0].config.min_words == 2
    assert r.output == str(data / "out")


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: s + "colour: blue\n", "colour: unknown key"),
        (lambda s: s.replace("min_words: 2", "min_words: many"), "stages[0].min_words: Input should be a valid integer"),
        (lambda s: s.replace("min_words: 2", "min_wrds: 2"), "stages[0].min_wrds: unknown key"),
        (lambda s: s.replace("test_min_words", "nonexistent"), "stages[0].stage: unknown stage 'nonexistent'; expected one of:"),
        (lambda s: s.replace("kind: jsonl", "kind: rss"), "sources.web.kind: unknown source kind 'rss'"),
        (lambda s: s.replace("*.jsonl", "*.missing"), "sources.web.paths[0]: no file matches"),
        (lambda s: s.replace("paths:", "pathz:"), "sources.web.paths: required key is missing"),
        (lambda s: s.replace("output:", "outptu:"), "output: required key is missing"),
        (lambda s: s + "  - stage: test_min_words\n", "stages[1].label: stage 'test_min_words' appears twice"),
        (lambda s: s.replace("{kind: jsonl,", "{kind: jsonl, batch_size: -1,"), "sources.web.batch_size: Input should be greater than 0"),
        # names become folders in the output: `../x` wrote outside it; a list label was a traceback
        (lambda s: s + "    label: ../../evil\n", "stages[0].label: '../../evil' cannot be a file name"),
        (lambda s: s + "    label: [1]\n", "stages[0].label: expected a non-empty string, got [1]"),
        (lambda s: s.replace("  web:", "  ..:"), "sources: name '..' cannot be a file name"),
        (lambda s: s.replace("  web:", "  'a/b':"), "sources: name 'a/b' cannot be a file name"),
    ],
)
def test_bad_recipes_give_one_precise_line(data, mutate, expected):
    path = recipe(data, mutate(good(data)))
    with pytest.raises(ConfigError) as err:
        load_recipe(path)
    msg = str(err.value)
    assert msg.startswith(path + ": "), msg
    assert expected in msg, msg
    assert "\n" not in msg


def test_invalid_yaml_names_line(data):
    path = recipe(data, "output: x\nsources: [\n  - {a: 1\n")
    with pytest.raises(ConfigError, match=r"invalid YAML at line \d+"):
        load_recipe(path)


def test_output_that_is_a_file(data):
    (data / "afile").write_text("x")
    body = good(data).replace(str(data / "out"), str(data / "afile"))
    with pytest.raises(ConfigError, match="is a file; expected a directory"):
        load_recipe(recipe(data, body))


def test_stage_sources_must_exist(data):
    body = good(data) + "    sources: [nope]\n"
    with pytest.raises(ConfigError, match=r"stages\[0\].sources: unknown source 'nope'"):
        load_recipe(recipe(data, body))


@pytest.mark.parametrize("stage, expected", [
    ("quality\n    gopher_quality: {min_doc_words: -5}", "gopher_quality.min_doc_words: Input should be greater than or equal to 0 (got -5)"),
    ("quality\n    gopher_quality: {max_doc_words: -1}", "gopher_quality.max_doc_words: Input should be greater than or equal to 0"),
    ("quality\n    gopher_repetition: {dup_line_frac: -1}", "gopher_repetition.dup_line_frac: Input should be greater than or equal to 0"),
    ("quality\n    fineweb: {line_punct_thr: -0.5}", "fineweb.line_punct_thr: Input should be greater than or equal to 0 (got -0.5)"),
    ("minhash_dedup\n    threshold: 1.7", "need 0 < threshold <= 1, ngram >= 1 and num_perm >= 1 (got threshold 1.7,"),
    ("line_dedup\n    max_count: 0", "max_count: Input should be greater than or equal to 1"),
])
def test_values_that_would_reject_every_document_are_refused_naming_the_value(data, stage, expected):
    body = good(data).replace("test_min_words\n    min_words: 2", stage)
    with pytest.raises(ConfigError) as err:
        load_recipe(recipe(data, body))
    assert expected in str(err.value) and "(got dict)" not in str(err.value), str(err.value)


def test_no_stage_accepts_a_negative_size_or_count():
    """Every plain number of every stage's config refuses -1, unless it is a seed."""
    from pydantic import ValidationError

    from stages import registry

    for name, cls in registry.available().items():
        if name.startswith("test_"):
            continue
        try:
            base, needs_files = (cls.Config() if name != "quality" else cls.Config(classifier={})), False
        except ValidationError:  # a config that needs the recipe's files (decontamination's benchmarks)
            base, needs_files = cls.Config.model_construct(), True
        for key, value in base.model_dump().items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "seed":
                with pytest.raises(ValidationError) as err:
                    cls.Config(**{key: -1})
                if needs_files:  # refused for the value, not only for the missing files
                    assert any(e["loc"][:1] == (key,) for e in err.value.errors()), (name, key)
