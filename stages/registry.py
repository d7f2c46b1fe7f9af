"""Stage lookup by the name used in recipes.

Every module below stages/ is imported on first use; a stage is any `Stage` subclass that sets
its own `name`, so adding a stage needs no registration call (and base does not import this).
"""
from __future__ import annotations

import importlib
import pkgutil

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
