"""The ledger: for every stage and source, documents and bytes in, kept, and rejected by reason.

It is built per shard by the workers and merged by the runner. `check()` enforces conservation:
documents in = kept + rejected for every stage and source, and every stage receives exactly what
the stage before it kept. A run whose ledger does not balance fails.

It also books the time each stage took, per source (`cpu_seconds`: process CPU time on the worker;
`wall_seconds`), and per global step (`global_steps`), so a normal run says where its time goes, as
datatrove's stats.json does. Times are measured, not conserved: they are not checked.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pipeline import storage


@dataclass
class Counts:
    docs_in: int = 0
    bytes_in: int = 0
    kept: int = 0
    kept_bytes: int = 0
    skipped: int = 0  # documents the stage passed through unexamined (not applicable to their kind)
    rejected: dict[str, list[int]] = field(default_factory=dict)  # reason -> [docs, bytes]
    cpu_s: float = 0.0  # CPU seconds the stage took on the workers (all threads of the process)
    wall_s: float = 0.0

    @property
    def rejected_docs(self) -> int:
        return sum(d for d, _ in self.rejected.values())

    @property
    def rejected_bytes(self) -> int:
        return sum(b for _, b in self.rejected.values())

    def add(self, other: "Counts") -> None:
        for name in ("docs_in", "bytes_in", "kept", "kept_bytes", "skipped", "cpu_s", "wall_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for reason, (d, b) in other.rejected.items():
            cur = self.rejected.setdefault(reason, [0, 0])
            cur[0] += d
            cur[1] += b

    def to_dict(self, times: bool = True) -> dict[str, Any]:
        d = {
            "docs_in": self.docs_in,
            "bytes_in": self.bytes_in,
            "kept": self.kept,
            "kept_bytes": self.kept_bytes,
            "rejected": self.rejected_docs,
            "rejected_bytes": self.rejected_bytes,
            "skipped": self.skipped,
            "reasons": {r: {"docs": d, "bytes": b} for r, (d, b) in sorted(self.rejected.items())},
        }
        if times:
            examined = self.docs_in - self.skipped
            cpu = round(self.cpu_s, 4)
            d["cpu_seconds"] = cpu
            d["wall_seconds"] = round(self.wall_s, 4)
            d["docs_per_cpu_second"] = round(examined / cpu, 1) if cpu > 0 and examined else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Counts":
        return cls(
            docs_in=d["docs_in"], bytes_in=d["bytes_in"], kept=d["kept"], kept_bytes=d["kept_bytes"],
            skipped=d.get("skipped", 0), cpu_s=d.get("cpu_seconds", 0.0), wall_s=d.get("wall_seconds", 0.0),
            rejected={r: [v["docs"], v["bytes"]] for r, v in d.get("reasons", {}).items()},
        )


class Ledger:
    """stage label -> source -> Counts, in pipeline order; plus per-source input files."""

    def __init__(self, stage_order: list[str] | None = None):
        self.stage_order: list[str] = list(stage_order or [])
        self.stages: dict[str, dict[str, Counts]] = {s: {} for s in self.stage_order}
        self.inputs: dict[str, dict[str, int]] = {}  # source -> {"files": n, "bytes": on-disk bytes}
        self.unreadable_files: list[str] = []
        # split files (planning.split_shards) some span of which read a document: not unreadable
        self.readable_files: list[str] = []
        self.params: dict[str, dict[str, Any]] = {}  # stage label -> parameters it ran with (e.g. LSH bands)
        self.global_steps: dict[str, dict[str, float]] = {}  # label -> {"cpu_seconds", "wall_seconds"}
        self.shard_work = {"cpu_seconds": 0.0, "wall_seconds": 0.0}  # whole shard runs, stages or not
        # CPU seconds of the run outside shard work and global steps: "driver", "worker start-up / idle", "ray daemons"
        self.overhead: dict[str, float] = {}

    def counts(self, stage: str, source: str) -> Counts:
        if stage not in self.stages:
            self.stages[stage] = {}
            self.stage_order.append(stage)
        return self.stages[stage].setdefault(source, Counts())

    def record(self, stage: str, source: str, *, docs_in: int, bytes_in: int, kept: int,
               kept_bytes: int, rejected: dict[str, list[int]] | None = None, skipped: int = 0) -> None:
        self.counts(stage, source).add(Counts(docs_in, bytes_in, kept, kept_bytes, skipped, rejected or {}))

    def add_time(self, stage: str, source: str, cpu_s: float, wall_s: float) -> None:
        self.counts(stage, source).add(Counts(cpu_s=cpu_s, wall_s=wall_s))

    def add_shard_work(self, cpu_s: float, wall_s: float) -> None:
        self.shard_work["cpu_seconds"] += cpu_s
        self.shard_work["wall_seconds"] += wall_s

    def add_global_step(self, stage: str, cpu_s: float, wall_s: float, driver_cpu_s: float = 0.0) -> None:
        """`driver_cpu_s`: the part of `cpu_s` spent in the driver process (the rest on workers)."""
        cur = self.global_steps.setdefault(stage, {"cpu_seconds": 0.0, "wall_seconds": 0.0})
        cur["cpu_seconds"] += cpu_s
        cur["wall_seconds"] += wall_s
        if driver_cpu_s:
            cur["driver_cpu_seconds"] = cur.get("driver_cpu_seconds", 0.0) + driver_cpu_s

    def add_overhead(self, what: str, cpu_s: float) -> None:
        self.overhead[what] = self.overhead.get(what, 0.0) + cpu_s

    def cpu_seconds(self) -> float:
        """The run's CPU as booked: shard work, global steps, the driver and Ray's daemons."""
        return (self.shard_work["cpu_seconds"] + sum(t["cpu_seconds"] for t in self.global_steps.values())
                + sum(self.overhead.values()))

    def add_input(self, source: str, files: int, nbytes: int) -> None:
        cur = self.inputs.setdefault(source, {"files": 0, "bytes": 0})
        cur["files"] += files
        cur["bytes"] += nbytes

    def merge(self, other: "Ledger") -> None:
        for stage in other.stage_order:
            for source, c in other.stages[stage].items():
                self.counts(stage, source).add(c)
        for source, v in other.inputs.items():
            self.add_input(source, v["files"], v["bytes"])
        self.unreadable_files.extend(other.unreadable_files)
        self.readable_files.extend(other.readable_files)
        self.params.update(other.params)
        for stage, t in other.global_steps.items():
            self.add_global_step(stage, t["cpu_seconds"], t["wall_seconds"], t.get("driver_cpu_seconds", 0.0))
        self.add_shard_work(other.shard_work["cpu_seconds"], other.shard_work["wall_seconds"])
        for what, cpu in other.overhead.items():
            self.add_overhead(what, cpu)

    def total(self, stage: str) -> Counts:
        out = Counts()
        for c in self.stages.get(stage, {}).values():
            out.add(c)
        return out

    def check(self) -> list[str]:
        """Every imbalance, as readable lines; empty when the ledger balances."""
        problems = []
        prev: str | None = None
        for stage in self.stage_order:
            for source, c in sorted(self.stages[stage].items()):
                if c.docs_in != c.kept + c.rejected_docs:
                    problems.append(
                        f"stage {stage}, source {source}: {c.docs_in} documents in but "
                        f"{c.kept} kept + {c.rejected_docs} rejected"
                    )
            if prev is not None:
                for source in sorted(set(self.stages[prev]) | set(self.stages[stage])):
                    before = self.stages[prev].get(source, Counts()).kept
                    now = self.stages[stage].get(source, Counts()).docs_in
                    if before != now:
                        problems.append(
                            f"source {source}: stage {prev} kept {before} documents "
                            f"but stage {stage} received {now}"
                        )
            prev = stage
        return problems

    def to_dict(self, times: bool = True) -> dict[str, Any]:
        """`times=False`: the counts alone, which are the same for every run of the same recipe and
        inputs (times never are)."""
        d: dict[str, Any] = {
            "inputs": self.inputs,
            "unreadable_files": sorted(set(self.unreadable_files) - set(self.readable_files)),
            "stages": [
                {
                    "stage": s,
                    "total": self.total(s).to_dict(times),
                    "sources": {src: c.to_dict(times) for src, c in sorted(self.stages[s].items())},
                    **({"params": self.params[s]} if s in self.params else {}),
                }
                for s in self.stage_order
            ],
        }
        if times:
            d["global_steps"] = {s: {k: round(v, 4) for k, v in t.items()} for s, t in self.global_steps.items()}
            d["shard_work"] = {k: round(v, 4) for k, v in self.shard_work.items()}
            if self.readable_files:
                d["readable_files"] = sorted(set(self.readable_files))
            if self.overhead:
                d["overhead"] = {k: round(v, 4) for k, v in self.overhead.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ledger":
        led = cls([s["stage"] for s in d["stages"]])
        for s in d["stages"]:
            for src, c in s["sources"].items():
                led.stages[s["stage"]][src] = Counts.from_dict(c)
            if "params" in s:
                led.params[s["stage"]] = s["params"]
        led.inputs = {k: dict(v) for k, v in d.get("inputs", {}).items()}
        led.unreadable_files = list(d.get("unreadable_files", []))
        led.readable_files = list(d.get("readable_files", []))
        for stage, t in d.get("global_steps", {}).items():
            led.add_global_step(stage, t.get("cpu_seconds", 0.0), t.get("wall_seconds", 0.0),
                                t.get("driver_cpu_seconds", 0.0))
        work = d.get("shard_work", {})
        led.add_shard_work(work.get("cpu_seconds", 0.0), work.get("wall_seconds", 0.0))
        for what, cpu in d.get("overhead", {}).items():
            led.add_overhead(what, cpu)
        return led

    def write(self, path: str) -> None:
        storage.write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def read(cls, path: str) -> "Ledger":
        return cls.from_dict(json.loads(storage.read_bytes(path)))
