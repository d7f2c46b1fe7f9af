"""Stage lookup by the name used in recipes.

Every module below stages/ is imported on first use; a stage is any `Stage` subclass that sets
its own `name`, so adding a stage needs no registration call (and base does not import this).
"""
from __future__ import annotations

import importlib
import pkgutil
import re
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

import stages
from stages.base import Stage

_imported = False


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def _load_all() -> dict[str, type[Stage]]:
    global _imported
    if not _imported:
        for mod in pkgutil.walk_packages(stages.__path__, prefix="stages."):
            leaf = mod.name.rsplit(".", 1)[-1]
            if leaf not in ("base", "registry") and not leaf.startswith("_"):
                importlib.import_module(mod.name)
        _imported = True
    found: dict[str, type[Stage]] = {}
    for cls in _subclasses(Stage):
        name = cls.__dict__.get("name")
        if not name:
            continue
        other = found.get(name)
        if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
            raise ValueError(f"two stages are named {name!r}: {other} and {cls}")
        found[name] = cls
    return found


def available() -> dict[str, type[Stage]]:
    return dict(sorted(_load_all().items()))


def get(name: str) -> type[Stage]:
    found = _load_all()
    if name not in found:
        raise KeyError(name)
    return found[name]


@dataclass(frozen=True)
class ConfigKey:
    key: str  # dotted for nested sections (quality's `gopher_quality.min_doc_words`)
    default: Any  # PydanticUndefined: required
    description: str


@dataclass(frozen=True)
class StageInfo:
    """What a stage declares, for `refinery stages`: reasons, signals (name, type, description), config."""

    name: str
    kind: str
    reasons: tuple[str, ...]
    signals: list[tuple[str, str, str]]
    config: list[ConfigKey]


def _sections(annotation: Any) -> list[type[BaseModel]]:
    args = typing.get_args(annotation) or (annotation,)
    return [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]


def config_keys(model: type[BaseModel], prefix: str = "") -> list[ConfigKey]:
    """Every key of a config model with default and description, nested sections flattened."""
    out = []
    for key, f in model.model_fields.items():
        default = f.default_factory() if f.default_factory is not None else f.default
        subs = _sections(f.annotation)
        if isinstance(default, BaseModel):
            default = "{...}"
        out.append(ConfigKey(prefix + key, default, f.description or ""))
        for sub in subs:
            out += config_keys(sub, f"{prefix}{key}.")
    return out


def describe(cls: type[Stage]) -> StageInfo:
    """The stage's declarations under its default config (signals of the default rules)."""
    try:
        inst = cls()
    except ValidationError:  # a config that needs the recipe (e.g. its benchmark files): the defaults, unchecked
        try:
            inst = cls(cls.Config.model_construct())
            inst.signal_fields()
        except Exception:  # signals unknown until configured
            return StageInfo(cls.name, _kind(cls), tuple(cls.reasons), [], config_keys(cls.Config))
    desc = inst.signal_descriptions()
    patterns = [(re.compile(re.escape(k).replace(r"\{n\}", r"\d+") + "$"), v) for k, v in desc.items() if "{n}" in k]

    def what(name: str) -> str:
        return desc.get(name) or next((v for p, v in patterns if p.match(name)), "")

    signals = [(f.name, str(f.type), what(f.name)) for f in inst.signal_fields()]
    return StageInfo(cls.name, _kind(cls), tuple(cls.reasons), signals, config_keys(cls.Config))


def _kind(cls: type[Stage]) -> str:
    return "global" if cls.needs_all_documents else "per-document"
