"""Test-only stages and builders. These stages exist to exercise the runner's contract; they are
registered under test_* names and are never used by a recipe outside the tests."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from stages.base import Executor, GlobalStage, Stage, StageConfig


class MinWordsConfig(StageConfig):
    min_words: int = 3


class MinWords(Stage):
    name = "test_min_words"
    Config = MinWordsConfig
    reasons = ("too_few_words",)
    default_skip_kinds = ("code",)

    def signal_fields(self):
        return [pa.field("test_words", pa.int32())]

    def annotate(self, batch):
        words = [len((t or "").split()) for t in batch.column("text").to_pylist()]
        return batch.append_column("test_words", pa.array(words, pa.int32()))

    def decide(self, batch):
        return ["too_few_words" if w < self.config.min_words else None
                for w in batch.column("test_words").to_pylist()]


def _decide_partition(args):
    files, part, parts = args
    seen: dict[str, str] = {}
    rows = []
    for f in files:
        fs, p = fsspec.core.url_to_fs(f)  # spill files may be object-store URLs
        t = pq.read_table(p, columns=["id", "test_hash"], filesystem=fs)
        for i, h in zip(t.column("id").to_pylist(), t.column("test_hash").to_pylist()):
            if int(h[:8], 16) % parts != part:
                continue
            rows.append((h, i))
    rows.sort()
    out = []
    for h, i in rows:
        survivor = seen.setdefault(h, i)
        out.append({"id": i, "drop_reason": None if survivor == i else "test_duplicate",
                    "drop_detail": None if survivor == i else survivor})
    return out


class ExactHash(GlobalStage):
    """Global test stage: drops exact duplicate texts, keeping the lowest id."""

    name = "test_exact"
    reasons = ("test_duplicate",)

    def signal_fields(self):
        return [pa.field("test_hash", pa.string())]

    def annotate(self, batch):
        hashes = [xxhash.xxh3_128_hexdigest((t or "").encode()) for t in batch.column("text").to_pylist()]
        return batch.append_column("test_hash", pa.array(hashes, pa.string()))

    def resolve(self, spill_files, executor):
        parts = 3
        results = executor.map(_decide_partition, [(spill_files, p, parts) for p in range(parts)])
        rows = [r for part in results for r in part]
        return pa.Table.from_pylist(rows, schema=pa.schema(
            [("id", pa.string()), ("drop_reason", pa.string()), ("drop_detail", pa.string())]))


def write_jsonl(path: Path, docs: list[dict], broken_lines: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
        for _ in range(broken_lines):
            fh.write("{not json\n")
    return path


def write_recipe(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


def kept_ids(out: str | Path) -> list[str]:
    """Sorted distinct ids of a run's kept documents: the committed files (its _SUCCESS manifest)
    for a URL, every kept/*.parquet for a local directory."""
    if "://" in str(out):
        from pipeline import storage

        tables = [storage.read_parquet(f) for f in storage.committed_files(str(out), "kept")]
    else:
        tables = [pq.read_table(f) for f in sorted(Path(out, "kept").glob("*.parquet"))]
    if not tables:
        return []
    return sorted(pc.unique(pa.concat_tables(tables).column("id")).to_pylist())


class SleepConfig(StageConfig):
    ms: int = 50
    hold: str | None = None


class Sleep(Stage):
    """Slows every batch down, so a test can kill a run in the middle. While the file `hold` exists,
    a batch waits for it to go (so a run cannot finish before the test's signal, however slow the
    test process is)."""

    name = "test_sleep"
    Config = SleepConfig

    def annotate(self, batch):
        import os
        import time

        time.sleep(self.config.ms / 1000)
        while self.config.hold and os.path.exists(self.config.hold):
            time.sleep(0.05)
        return batch


class CrashOnceConfig(StageConfig):
    marker: str


class CrashOnce(Stage):
    """Kills its own worker process the first time it runs (the marker file remembers)."""

    name = "test_crash_once"
    Config = CrashOnceConfig

    def annotate(self, batch):
        import os

        if not os.path.exists(self.config.marker):
            with open(self.config.marker, "w") as fh:
                fh.write(str(os.getpid()))
            os._exit(1)
        return batch


class StallOnConfig(StageConfig):
    word: str
    seconds: int = 60


class StallOn(Stage):
    """Stalls in C code on documents that hold `word`: libc's sleep(), which no Python signal
    interrupts (as a slow fastText or spaCy call would not be), then counts words."""

    name = "test_stall_on"
    Config = StallOnConfig

    def signal_fields(self):
        return [pa.field("test_stall_words", pa.int32())]

    def annotate(self, batch):
        import ctypes

        texts = batch.column("text").to_pylist()
        for t in texts:
            if self.config.word in (t or ""):
                ctypes.CDLL(None).sleep(self.config.seconds)
        return batch.append_column("test_stall_words", pa.array([len((t or "").split()) for t in texts], pa.int32()))


def read_source(kind: str, *paths, name: str | None = None, **cfg) -> list[dict]:
    """Every row a source of `kind` yields for `paths`, through its `files()` and `read()`."""
    from pipeline.sources.base import source_kinds

    cls = source_kinds()[kind]
    src = cls(name or kind, cls.Config(kind=kind, paths=[str(p) for p in paths], **cfg))
    return [row for url, id_path in src.files() for t in src.read(url, id_path) for row in t.to_pylist()]


class PoolExecutor(Executor):
    """A multiprocessing executor, standing in for Ray's in determinism tests."""

    def __init__(self, workers: int = 2):
        self.workers = workers

    def map(self, fn, items):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(self.workers) as pool:
            return list(pool.map(fn, items))

    @property
    def parallelism(self) -> int:
        return self.workers


class FailOnConfig(StageConfig):
    word: str
    path: str = "/out/part.parquet"


class FailOn(Stage):
    """Raises a full disk's OSError on a document that holds `word` (with stage_time_limit: 0 it
    runs in the worker itself, so the error is the worker's own)."""

    name = "test_fail_on"
    Config = FailOnConfig

    def annotate(self, batch):
        import errno

        if any(self.config.word in (t or "") for t in batch.column("text").to_pylist()):
            raise OSError(errno.ENOSPC, "No space left on device", self.config.path)
        return batch


def _processes():
    """(pid, state, parent pid, process group, argv) of every process, from /proc."""
    import os

    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:  # it ended meanwhile
            continue
        yield int(d), fields[0], int(fields[1]), int(fields[2]), argv


def group_processes(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    return [pid for pid, state, _, group, _ in _processes() if group == pgid and state != "Z"]


def worker_processes(parent: int) -> list[int]:
    """The `--processes` worker processes of a driver (their command line ends in refinery-worker)."""
    return [pid for pid, _, ppid, _, argv in _processes() if ppid == parent and b"refinery-worker" in argv]
