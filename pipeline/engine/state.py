"""What a run has finished, on disk, so a killed run resumes where it stopped.

OUT/_state/run.json        the recipe's fingerprint and the shard list (a resume must match both)
OUT/_state/pK/part-N.json  shard N finished phase K: its ledger (written after its files are in place)
OUT/_state/LABEL.json      a global stage's decisions are complete: the decision file per shard
OUT/_state/complete        the whole run finished; ledger.json is final

Every record is written to a temporary name and renamed, so a record exists only for work whose
outputs were all committed. Anything without a record is redone; redoing a shard rewrites the
same files with the same content.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from pipeline.errors import ConfigError

STATE = "_state"


def atomic_write_json(path: str, obj: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=1, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> Any | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def fingerprint(recipe_raw: dict[str, Any], shards: list[tuple[str, str]]) -> str:
    """What decides the output: sources, stages and input files (not output path or Ray settings)."""
    keyed = {k: recipe_raw.get(k) for k in ("sources", "stages")}
    blob = json.dumps([keyed, shards], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def shard_record(out: str, phase: int, part: str) -> str:
    return os.path.join(out, STATE, f"p{phase}", part.replace(".parquet", ".json"))


def resolve_record(out: str, label: str) -> str:
    return os.path.join(out, STATE, f"{label}.json")


def complete_marker(out: str) -> str:
    return os.path.join(out, STATE, "complete")


def open_run(out: str, fp: str, recipe_path: str, overwrite: bool) -> bool:
    """Prepare the output directory; returns True when resuming an earlier run of the same recipe."""
    import shutil

    if os.path.isfile(out):
        raise ConfigError(f"{recipe_path}: output: {out!r} is a file; expected a directory")
    if os.path.isdir(out) and os.listdir(out):
        state = read_json(os.path.join(out, STATE, "run.json"))
        if overwrite:
            shutil.rmtree(out)
        elif state is None:
            raise ConfigError(
                f"{recipe_path}: output: {out!r} is not empty and holds no refinery run; "
                "choose another directory or pass --overwrite"
            )
        elif state.get("fingerprint") != fp:
            raise ConfigError(
                f"{recipe_path}: output: {out!r} holds a run of a different recipe or input; "
                "pass --overwrite to replace it"
            )
        else:
            return True
    try:
        os.makedirs(out, exist_ok=True)
        atomic_write_json(os.path.join(out, STATE, "run.json"), {"fingerprint": fp})
    except OSError as exc:
        raise ConfigError(f"{recipe_path}: output: cannot write to {out!r}: {exc.strerror or exc}") from None
    return False


def sweep_partial(out: str) -> int:
    """Remove temporaries left by a killed run (their shards have no record and are redone)."""
    n = 0
    for d, _, files in os.walk(out):
        for f in files:
            if ".tmp" in f:
                os.remove(os.path.join(d, f))
                n += 1
    return n
