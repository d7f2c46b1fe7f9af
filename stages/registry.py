"""Stage lookup by the name used in recipes. Every module in stages/ is imported on first use."""
from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stages.base import Stage

_STAGES: dict[str, type["Stage"]] = {}
_loaded = False


def register(cls: type["Stage"]) -> None:
    other = _STAGES.get(cls.name)
    if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
        raise ValueError(f"two stages are named {cls.name!r}: {other} and {cls}")
    _STAGES[cls.name] = cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    import stages

    for mod in pkgutil.iter_modules(stages.__path__):
        if mod.name not in ("base", "registry") and not mod.name.startswith("_"):
            importlib.import_module(f"stages.{mod.name}")
    _loaded = True


def available() -> dict[str, type["Stage"]]:
    _load_all()
    return dict(sorted(_STAGES.items()))


def get(name: str) -> type["Stage"]:
    stages = available()
    if name not in stages:
        raise KeyError(name)
    return stages[name]
