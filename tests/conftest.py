"""Shared fixtures. Real-data tests read ../shared/corpora in place and skip when it is absent."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora() -> Path:
    """Path to ../shared/corpora; skips the test on a fresh clone where it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"real-data test: {CORPORA} is absent (fresh clone without ../shared)")
    return CORPORA


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def ray_local():
    """One embedded local Ray for the session's tests (2 CPUs)."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
