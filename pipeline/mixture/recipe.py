"""The mixture recipe: which cleaned sources, at what token proportions, how many tokens, how made.

Two places a mixture can live:
  * the `mixture:` section at the end of a pipeline recipe (mixtures/sample.yaml). Its sources
    are that recipe's source names; their kept documents come from the run's OUT/kept.
  * a standalone mixture file whose top level is the mixture itself; every source names a
    cleaned run output directory (`run:`) and optionally the `source` column value there.

    sources:
      commoncrawl: {weight: 0.7, run: out/cc, source: cc}
      arxiv:       {weight: 0.3, run: out/arxiv, max_epochs: 4}
    budget: 2B            # int, "500M" / "2B" / "1.5T" / "1e9", or "all"
    max_epochs: 4         # default cap for every source (upsampling limit)
    seed: 0
    tokenizer: cl100k_base   # or a path to a Hugging Face tokenizer.json
    format: megatron

Relative `run:` paths resolve against the current directory. Errors are one line naming the file
and key path (ConfigError; the CLI exits 2).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.errors import ConfigError, name_problem
from pipeline.yamlfile import read_yaml

WEIGHT_TOLERANCE = 1e-6
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_budget(value: Any) -> int | None:
    """Token budget: an int, "2B"-style strings, "1e9", or "all" (returned as None)."""
    if isinstance(value, bool):
        raise ValueError("budget must be a token count or 'all'")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("budget must be positive")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or value <= 0 or value != int(value):
            raise ValueError("budget must be a positive whole number of tokens")
        return int(value)
    if isinstance(value, str):
        s = value.strip().lower().replace("_", "").replace(",", "")
        if s == "all":
            return None
        m = re.fullmatch(r"(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbgt]?)", s)
        if m:
            n = float(m.group(1)) * _SUFFIX[m.group(2)]
            if n >= 1:
                return int(round(n))
    raise ValueError(f"budget {value!r}: expected a token count like 2000000, '500M', '2B' or 'all'")


class MixtureSource(BaseModel):
    """One source of the mixture."""

    model_config = ConfigDict(extra="forbid")

    weight: float = Field(ge=0)  # target proportion of tokens
    run: str | None = None  # cleaned run output directory (standalone recipes)
    source: str | None = None  # value of the `source` column in that run; default: the key
    max_epochs: float | None = Field(default=None, gt=0)  # default: the mixture's max_epochs
    # a filtered view of the source: e.g. "quality_score >= 0.8" (pipeline/mixture/where.py)
    where: str | None = None

    @field_validator("where")
    @classmethod
    def _where(cls, v: str | None) -> str | None:
        if v is not None:
            from pipeline.mixture.where import parse_where

            parse_where(v)
        return v


class MixtureConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: dict[str, MixtureSource] = Field(min_length=1)
    budget: int | str = "all"
    # Upsampling cap: a source may be repeated up to this many epochs (Muennighoff et al. 2023
    # find up to ~4 epochs of repetition about as good as fresh data).
    max_epochs: float = Field(default=4.0, gt=0)
    seed: int = 0
    tokenizer: str = "cl100k_base"
    eod: int | str | None = None  # default: the tokenizer's end-of-text token
    format: Literal["megatron"] = "megatron"
    rescale: bool = False  # shrink the budget when a source is short, instead of failing
    tolerance: float = Field(default=0.005, gt=0, lt=1)  # max |achieved - target| proportion
    per_source: bool = True  # also write one dataset per source
    workers: int | None = Field(default=None, gt=0)  # Ray CPUs for tokenization (None: all)
    keep_tokens: bool = False  # keep the tokenized shard cache (OUT/tokens) after building

    @field_validator("budget")
    @classmethod
    def _budget(cls, v: Any) -> Any:
        parse_budget(v)
        return v

    @property
    def budget_tokens(self) -> int | None:
        return parse_budget(self.budget)

    def epochs_cap(self, name: str) -> float:
        cap = self.sources[name].max_epochs
        return cap if cap is not None else self.max_epochs

    @property
    def weights(self) -> dict[str, float]:
        return {n: s.weight for n, s in self.sources.items()}


@dataclass
class ResolvedSource:
    """A mixture source with the kept Parquet files it reads and its `source` column value."""

    name: str
    source_value: str
    run: str
    files: list[str]
    where: str | None = None


@dataclass
class LoadedMixture:
    config: MixtureConfig
    path: str
    prefix: str  # key path of the mixture in its file ("mixture." or "")
    embedded: bool  # True when it is the `mixture:` section of a pipeline recipe
    recipe_sources: list[str] | None  # the pipeline recipe's source names (embedded only)
    recipe_output: str | None  # the pipeline recipe's output directory, when it names one


def _where(path: str, prefix: str, loc: tuple) -> str:
    keys = ".".join(str(p) for p in loc)
    return f"{path}: {prefix}{keys}" if keys else f"{path}: {prefix.rstrip('.') or '(top level)'}"


def _recipe_source_names(raw: Any) -> list[str] | None:
    """Source names of a pipeline recipe: a mapping's keys, or the `name` of each list item."""
    if isinstance(raw, dict):
        return [str(k) for k in raw]
    if isinstance(raw, list):
        return [str(x["name"]) for x in raw if isinstance(x, dict) and "name" in x]
    return None


def parse_mixture(data: Any, path: str = "<recipe>") -> LoadedMixture:
    """Validate a loaded YAML document (pipeline recipe with `mixture:`, or a standalone mixture)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    embedded = "mixture" in data
    prefix = "mixture." if embedded else ""
    raw = data["mixture"] if embedded else data
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {prefix.rstrip('.') or '(top level)'}: expected a mapping")
    try:
        cfg = MixtureConfig.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["loc"][-1:] == ("weight",) and err["type"] == "greater_than_equal":
            msg = f"negative weight {err['input']!r}; weights are proportions >= 0"
        msg = msg.removeprefix("Value error, ")
        raise ConfigError(f"{_where(path, prefix, err['loc'])}: {msg}") from None
    for name in cfg.sources:  # per_source writes sources/NAME.bin
        if problem := name_problem(name):
            raise ConfigError(f"{path}: {prefix}sources: name {problem}")
    total = sum(cfg.weights.values())
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ConfigError(
            f"{path}: {prefix}sources: weights sum to {total:.6g}, they must sum to 1 "
            f"(tolerance {WEIGHT_TOLERANCE:g})"
        )
    recipe_sources = _recipe_source_names(data.get("sources")) if embedded else None
    if embedded:
        for name, src in cfg.sources.items():
            if src.run is None and (recipe_sources is None or (src.source or name) not in recipe_sources):
                known = ", ".join(recipe_sources or []) or "none"
                raise ConfigError(
                    f"{path}: {prefix}sources.{name}: unknown source {src.source or name!r} "
                    f"(the recipe's sources: {known})"
                )
    else:
        for name, src in cfg.sources.items():
            if src.run is None:
                raise ConfigError(
                    f"{path}: sources.{name}.run: missing; a standalone mixture names each source's "
                    f"cleaned run output directory"
                )
    seen: dict[tuple[str | None, str, str | None], str] = {}
    for name, src in cfg.sources.items():
        key = (src.run, src.source or name, src.where)
        if key in seen:
            raise ConfigError(
                f"{path}: {prefix}sources.{name}: same input as sources.{seen[key]} "
                f"(run {src.run or 'of this recipe'}, source {key[1]!r}"
                + (f", where {src.where!r})" if src.where else "); give each a different `where:` to bucket it")
            )
        seen[key] = name
    output = None
    if embedded:
        for k in ("output", "out", "output_dir"):
            if isinstance(data.get(k), str):
                output = data[k]
                break
    return LoadedMixture(cfg, path, prefix, embedded, recipe_sources, output)


def load_mixture(path: str | os.PathLike) -> LoadedMixture:
    p = str(path)
    return parse_mixture(read_yaml(p), p)


def kept_files(run_dir: str) -> list[str]:
    """The run's committed kept files (its _SUCCESS manifest; see pipeline/storage.py)."""
    from pipeline import storage

    try:
        return storage.committed_files(run_dir, "kept")
    except OSError as exc:
        raise ConfigError(str(exc)) from None


def resolve_inputs(m: LoadedMixture, run_dir: str | None = None) -> list[ResolvedSource]:
    """Each source's kept Parquet files. `run_dir` is the pipeline run's OUT (embedded recipes)."""
    resolved = []
    for name, src in m.config.sources.items():
        key = f"{m.path}: {m.prefix}sources.{name}"
        if src.run is not None:
            run = src.run
            where = f"{key}.run"
        else:
            run = run_dir or m.recipe_output
            if not run:
                raise ConfigError(f"{key}: no run output directory: pass --out OUT (the run's output)")
            where = key
        from pipeline import storage

        run = storage.normalize(run)
        if not storage.isdir(run):
            raise ConfigError(f"{where}: run output directory {run} does not exist")
        files = kept_files(run)
        if not files and src.weight > 0:
            raise ConfigError(f"{where}: no kept Parquet files in {storage.join(run, 'kept')}")
        if src.where and files:
            from pipeline.mixture.where import columns, parse_where

            have = set(storage.open_parquet(files[0]).schema_arrow.names)
            for col in columns(parse_where(src.where)):
                if col not in have:
                    raise ConfigError(f"{key}.where: no column {col!r} in {storage.join(run, 'kept')} "
                                      f"(signals there: {', '.join(sorted(have))})")
        resolved.append(ResolvedSource(name, src.source or name, run if storage.is_url(run) else str(Path(run)), files,
                                       src.where))
    return resolved
