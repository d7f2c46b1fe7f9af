"""Recipe loading and validation: YAML in, typed objects out, or one clear ConfigError line.

Every problem is reported as `FILE: KEY.PATH: what is wrong (expected ...)`, before anything
is written. Source configs are validated by their kind's model, stage configs by their stage's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import ConfigError, name_problem
from pipeline.yamlfile import read_yaml
from pipeline.sources.base import Source, expand, source_kinds
from stages import registry
from stages.base import Stage, StageConfig


class RaySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Ray cluster address ("auto", "ray://host:10001"); None starts an embedded local Ray,
    # unless RAY_ADDRESS is set in the environment.
    address: str | None = None
    # Shard workers (Ray actors, one CPU each); None means one per CPU of the cluster.
    num_workers: int | None = Field(default=None, gt=0)
    # CPUs for the embedded local Ray; None means all of this machine's.
    num_cpus: int | None = Field(default=None, gt=0)


class RecipeModel(BaseModel):
    """The top level of a recipe. Sources and stages are validated separately, by kind and name."""

    model_config = ConfigDict(extra="forbid")

    name: str = "refinery"
    output: str
    sources: dict[str, dict[str, Any]] = Field(min_length=1)
    stages: list[dict[str, Any]] = Field(default_factory=list)
    ray: RaySettings = Field(default_factory=RaySettings)
    keep_work: bool = False  # keep barrier spill files under OUT/_work after a successful run
    # Seconds one document may take in one per-document stage (docs/recipe.md); past it the document is
    # rejected (`time_limit_exceeded`). The stages run in a supervised child process so that even C
    # code can be stopped. 0: no limit, the stages run in the worker process itself.
    stage_time_limit: float = Field(default=60.0, ge=0, allow_inf_nan=False)
    mixture: dict[str, Any] | None = None  # validated by pipeline.mixture.recipe (see docs/mixture.md)


@dataclass
class StageSpec:
    name: str  # the registered stage name
    label: str  # unique within the recipe: used for rejects/LABEL and the ledger
    config: StageConfig

    def build(self) -> Stage:
        return registry.get(self.name)(self.config)


@dataclass
class Recipe:
    path: str
    name: str
    output: str
    sources: dict[str, Source]
    stages: list[StageSpec]
    ray: RaySettings
    keep_work: bool
    raw: dict[str, Any]
    stage_time_limit: float  # seconds per document per per-document stage; 0: none


def _loc(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


def _describe(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    msg = err.get("msg", "invalid value")
    if "input" in err and not (kind == "value_error" and isinstance(err["input"], dict)):
        got = err["input"]  # (a whole section's check names its own values: "(got dict)" says nothing)
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{msg} (got {shown})"
    return msg


def _first_error(path: str, prefix: tuple[Any, ...], exc: ValidationError) -> ConfigError:
    err = exc.errors()[0]
    return ConfigError(f"{path}: {_loc(prefix + tuple(err['loc']))}: {_describe(err)}")


def _known(what: str, names: Any) -> str:
    return f"{what}; expected one of: {', '.join(sorted(names))}"


def load_recipe(path: str, *, output: str | None = None, check_inputs: bool = True) -> Recipe:
    """Validate a recipe file completely (including that every input path matches a file)."""
    return parse_recipe(read_yaml(path), path, output=output, check_inputs=check_inputs)


def parse_recipe(raw: dict[str, Any], path: str, *, output: str | None = None, check_inputs: bool = True) -> Recipe:
    """`load_recipe` of a recipe already read; `path` names it in messages."""
    top = dict(raw)
    if output is not None:
        top["output"] = output
    try:
        model = RecipeModel.model_validate(top)
    except ValidationError as exc:
        raise _first_error(path, (), exc) from None
    if model.mixture is not None:
        from pipeline.mixture.recipe import parse_mixture

        parse_mixture(raw, path)

    kinds = source_kinds()
    sources: dict[str, Source] = {}
    for name, cfg in model.sources.items():
        if problem := name_problem(name):
            raise ConfigError(f"{path}: sources: name {problem}")
        kind = cfg.get("kind")
        if kind not in kinds:
            raise ConfigError(f"{path}: sources.{name}.kind: " + _known(f"unknown source kind {kind!r}", kinds))
        cls = kinds[kind]
        try:
            conf = cls.Config.model_validate(cfg)
        except ValidationError as exc:
            raise _first_error(path, ("sources", name), exc) from None
        sources[name] = cls(name, conf)

    available = registry.available()
    specs: list[StageSpec] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(model.stages):
        item = dict(item)
        name = item.pop("stage", None)
        if name is None:
            raise ConfigError(f"{path}: stages[{i}].stage: required key is missing (the stage name)")
        if name not in available:
            raise ConfigError(f"{path}: stages[{i}].stage: " + _known(f"unknown stage {name!r}", available))
        label = item.pop("label", None) or name
        if problem := name_problem(label):
            raise ConfigError(f"{path}: stages[{i}].label: {problem}")
        if label in seen:
            raise ConfigError(
                f"{path}: stages[{i}].label: stage {label!r} appears twice; give one a distinct label"
            )
        seen[label] = i
        try:
            conf = available[name].Config.model_validate(item)
        except ValidationError as exc:
            raise _first_error(path, ("stages", i), exc) from None
        for src in conf.sources or []:
            if src not in sources:
                raise ConfigError(
                    f"{path}: stages[{i}].sources: " + _known(f"unknown source {src!r}", sources)
                )
        specs.append(StageSpec(name=name, label=label, config=conf))

    out = model.output
    if "://" not in out and os.path.isfile(out):
        raise ConfigError(f"{path}: output: {out!r} is a file; expected a directory")
    if check_inputs:
        for name, src in sources.items():
            for j, pattern in enumerate(src.config.paths):
                try:
                    found = expand(pattern)
                except Exception as exc:  # fsspec: unknown protocol, missing credentials, ...
                    raise ConfigError(f"{path}: sources.{name}.paths[{j}]: cannot list {pattern!r}: {exc}") from None
                if not found:
                    raise ConfigError(f"{path}: sources.{name}.paths[{j}]: no file matches {pattern!r}")
    return Recipe(
        path=path, name=model.name, output=out, sources=sources, stages=specs,
        ray=model.ray, keep_work=model.keep_work, raw=raw,
        stage_time_limit=model.stage_time_limit,
    )
