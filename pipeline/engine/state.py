"""What a run has finished, in its output (a local directory or an object-store URL), so a killed
run resumes where it stopped, and the commit protocol that makes that safe without atomic rename.

OUT/_state/run.json        refinery's marker: the recipe's fingerprint and each input's stamp
OUT/_state/lock            the running driver's lease (one run per output at a time)
OUT/_state/pK/part-N.json  shard N finished phase K: its ledger and the files of the winning attempt
OUT/_state/LABEL.json      a global stage's decisions are complete: the decision file per shard
OUT/_SUCCESS               the run finished: every committed output file (the manifest readers use)

Commit protocol: every shard attempt writes its files under names that carry a unique attempt id
(`kept/part-00007-1a2b3c4d.parquet`), never over another attempt's; once all of them are closed
the worker writes the shard's record, one small object that names them (a single PUT, or a local
temporary renamed). A file no record names belongs to a killed or retried attempt and is never
counted: resume and the end of the run delete such files (only names of that exact pattern, in
refinery's own sub-directories), and readers use `_SUCCESS`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from typing import Any

from pipeline import storage
from pipeline.errors import ConfigError

STATE = "_state"
MARKER = "run.json"
LOCK = "lock"
# Files of one shard attempt: part-NNNNN-<8 hex>.parquet (bypass- prefixed for a barrier's bypass).
ATTEMPT_FILE = re.compile(r"^(bypass-)?part-\d{5,}-[0-9a-f]{8}\.parquet$")
# What refinery writes at the top of an output directory; --overwrite deletes only these.
OWN_NAMES = ("kept", "rejects", "keys", "_work", STATE, "ledger.json", "shards.jsonl", "recipe.json", "run.log",
             "report", "mixture", "README.md", storage.MANIFEST)
LEASE_SECONDS = 90.0  # a lock not refreshed for this long belongs to a dead driver
HEARTBEAT_SECONDS = 15.0


def new_attempt() -> str:
    return uuid.uuid4().hex[:8]


def shard_record(out: str, phase: int, part: str) -> str:
    return storage.join(out, STATE, f"p{phase}", part.replace(".parquet", ".json"))


def resolve_record(out: str, label: str) -> str:
    return storage.join(out, STATE, f"{label}.json")


def complete_marker(out: str) -> str:
    return storage.join(out, storage.MANIFEST)


# -- fingerprint ----------------------------------------------------------------------------------
def fingerprint_inputs(recipe_raw: dict[str, Any], inputs: dict[str, str]) -> dict[str, Any]:
    """What decides the output: sources, stages, and every input file with its stamp (size and
    mtime, or ETag on object stores); not the output path or Ray settings."""
    keyed = {k: recipe_raw.get(k) for k in ("sources", "stages")}
    blob = json.dumps([keyed, sorted(inputs.items())], sort_keys=True, default=str)
    return {"fingerprint": hashlib.sha256(blob.encode()).hexdigest(),
            "recipe": json.loads(json.dumps(keyed, default=str)), "inputs": inputs}


def what_changed(old: dict[str, Any], new: dict[str, Any], limit: int = 3) -> str:
    """One phrase naming what differs between two fingerprints' contents."""
    if old.get("recipe") is not None and old.get("recipe") != new.get("recipe"):
        return "the recipe's sources or stages changed"
    a, b = old.get("inputs") or {}, new.get("inputs") or {}
    if not a and "inputs" not in old:
        return "it was written by an older refinery"
    parts = []
    for what, keys, show in (("input changed", [k for k in sorted(b) if k in a and a[k] != b[k]], lambda k: f"{k} ({a[k]} -> {b[k]})"),
                             ("new input", [k for k in sorted(b) if k not in a], str),
                             ("input gone", [k for k in sorted(a) if k not in b], str)):
        if keys:
            parts.append(f"{what}: " + ", ".join(map(show, keys[:limit]))
                         + (f" and {len(keys) - limit} more" if len(keys) > limit else ""))
    return "; ".join(parts) or "the recipe or inputs changed"


# -- the lock -------------------------------------------------------------------------------------
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(lock: dict[str, Any]) -> bool:
    if lock.get("host") == socket.gethostname() and isinstance(lock.get("pid"), int):
        return not _pid_alive(lock["pid"])
    return time.time() - float(lock.get("heartbeat", 0)) > LEASE_SECONDS


class RunLock:
    """One driver per output. Taken with an exclusive create (local O_EXCL; S3's conditional PUT),
    refreshed by a heartbeat; a lock whose driver is gone (same host: the pid is dead; another host:
    no heartbeat for LEASE_SECONDS) is taken over. On a store that ignores conditional writes the
    lock is looked for, written and read back (a run that finds another's lock is still refused;
    two started at the same instant are not), and the run says so on stderr."""

    def __init__(self, out: str, recipe_path: str):
        self.path = storage.join(out, STATE, LOCK)
        self.out = out
        self.recipe_path = recipe_path
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _body(self) -> bytes:
        return json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": self.token,
                           "started": self.started, "heartbeat": time.time()}).encode()

    def acquire(self) -> None:
        self.started = time.time()
        self.exclusive = storage.conditional_writes(self.path)
        if not self.exclusive:
            print(f"refinery: warning: {self.out}: the store ignores conditional writes (If-None-Match), so "
                  "refinery cannot stop two runs from writing this output at the same time: start one at a time",
                  file=sys.stderr)
        for _ in range(3):
            if storage.create_exclusive(self.path, self._body()):
                break
            held = storage.read_json(self.path)
            if held is None or _stale(held):
                storage.remove(self.path)
                continue
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(held.get("started", 0))))
            raise ConfigError(
                f"{self.recipe_path}: output: {self.out!r} is in use by another refinery run "
                f"(pid {held.get('pid')} on {held.get('host')}, since {since}); wait for it to finish "
                "or choose another output"
            )
        else:
            raise ConfigError(f"{self.recipe_path}: output: could not lock {self.out!r}; another run keeps taking it")
        self._thread = threading.Thread(target=self._beat, name="refinery-lock", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                held = storage.read_json(self.path)
                if held is not None and held.get("token") == self.token:
                    storage.write_bytes(self.path, self._body())
            except OSError:
                pass

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        held = storage.read_json(self.path)
        if held is not None and held.get("token") == self.token:
            storage.remove(self.path)


# -- opening an output ----------------------------------------------------------------------------
def is_refinery_run(out: str) -> bool:
    """refinery's own marker: a run (or a run that was starting) wrote `_state/run.json` or the lock."""
    return storage.exists(storage.join(out, STATE, MARKER)) or storage.exists(storage.join(out, STATE, LOCK))


def remove_own(out: str, names: tuple[str, ...] = OWN_NAMES) -> None:
    """--overwrite: delete what refinery wrote in `out` (`names`, and `_state` but its lock), and
    nothing else."""
    paths = [storage.join(out, name) for name in names if name != STATE]
    # the lock: ours now; released at the end of the run
    paths += [storage.join(out, STATE, name) for name in storage.listdir(storage.join(out, STATE)) if name != LOCK]
    for p in paths:
        if storage.isdir(p):
            storage.rmtree(p)
        elif storage.exists(p):
            storage.remove(p)


def open_run(out: str, fp: dict[str, Any], recipe_path: str, overwrite: bool,
             lock: RunLock | None = None) -> bool:
    """Prepare the output; returns True when resuming an earlier run of the same recipe and inputs.

    Refuses (ConfigError, nothing written) a file, a non-empty directory that holds no refinery
    run (with or without --overwrite), and a run of another recipe or input (without --overwrite).
    `lock`, when given, is acquired before anything is written or deleted."""
    try:
        is_file = storage.isfile(out)
        entries = [] if is_file else storage.listdir(out)
    except Exception as exc:  # OSError, or an object store's own (no endpoint, no credentials, ...)
        raise ConfigError(f"{recipe_path}: output: cannot list {out!r}: {exc}") from None
    if is_file:
        raise ConfigError(f"{recipe_path}: output: {out!r} is a file; expected a directory")
    if entries and not is_refinery_run(out):
        raise ConfigError(
            f"{recipe_path}: output: {out!r} is not empty and holds no refinery run; refinery writes only "
            "into a new or empty directory or its own earlier run: choose another output"
        )
    try:
        if lock is not None:
            lock.acquire()
        if entries:
            prev = storage.read_json(storage.join(out, STATE, MARKER)) or {}
            if overwrite:
                remove_own(out)
            elif prev.get("fingerprint") == fp["fingerprint"]:
                return True
            elif prev:
                raise ConfigError(
                    f"{recipe_path}: output: {out!r} holds a run of a different recipe or input "
                    f"({what_changed(prev, fp)}); pass --overwrite to replace that run, or choose another output"
                )
        storage.makedirs(out)
        storage.write_json(storage.join(out, STATE, MARKER), fp)
    except ConfigError:
        if lock is not None:
            lock.release()
        raise
    except OSError as exc:
        if lock is not None:
            lock.release()
        raise ConfigError(f"{recipe_path}: output: cannot write to {out!r}: {exc.strerror or exc}") from None
    return False


# -- sweeping what no record names ------------------------------------------------------------------
def attempt_files(out: str) -> list[str]:
    """Every shard-attempt file in refinery's own sub-directories (kept, rejects/*, keys/*, _work/*)."""
    dirs = [storage.join(out, "kept")]
    for sub in ("rejects", "keys", "_work"):
        dirs += [storage.join(out, sub, d) for d in storage.listdir(storage.join(out, sub))]
    found = []
    for d in dirs:
        found += [storage.join(d, n) for n in storage.listdir(d) if ATTEMPT_FILE.match(n)]
    return found


def sweep_uncommitted(out: str, committed: set[str]) -> int:
    """Delete attempt files that no record names (relative paths in `committed`); returns how many."""
    n = 0
    for f in attempt_files(out):
        if storage.relative(f, out) not in committed:
            storage.remove(f)
            n += 1
    if not storage.is_url(out):  # local temporaries of record writes cut short by a kill
        for d, _, files in os.walk(storage.join(out, STATE)):
            for f in files:
                if ".tmp" in f:
                    os.remove(os.path.join(d, f))
                    n += 1
    return n
