"""Errors the CLI turns into one clear line and an exit code."""
from __future__ import annotations


class ConfigError(Exception):
    """A bad recipe or missing input: the CLI prints the message (file and key path) and exits 2."""
