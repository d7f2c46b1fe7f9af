"""Reading a YAML config file (recipe or mixture) into a mapping, with one clear error line.

Its own module so the recipe and the mixture both use it without importing each other.
"""
from __future__ import annotations

from typing import Any

import yaml

from pipeline import storage
from pipeline.errors import ConfigError


def read_yaml(path: str) -> dict[str, Any]:
    """The mapping in a YAML file: a local path or an object-store URL (a retune's or a job's
    `recipe.yaml` written next to its run)."""
    try:
        found = storage.isfile(path)
    except Exception as exc:  # an object store's own errors (no endpoint, no credentials, ...)
        raise ConfigError(f"{path}: cannot read the recipe file: {exc}") from None
    if not found:
        raise ConfigError(f"{path}: recipe file not found")
    try:
        data = yaml.safe_load(storage.read_text(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data
