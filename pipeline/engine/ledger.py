"""The ledger: for every stage and source, documents and bytes in, kept, and rejected by reason.

It is built per shard by the workers and merged by the runner. `check()` enforces conservation:
documents in = kept + rejected for every stage and source, and every stage receives exactly what
the stage before it kept. A run whose ledger does not balance fails.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Counts:
    docs_in: int = 0
    bytes_in: int = 0
    kept: int = 0
    kept_bytes: int = 0
    skipped: int = 0  # documents the stage passed through unexamined (not applicable to their kind)
    rejected: dict[str, list[int]] = field(default_factory=dict)  # reason -> [docs, bytes]

    @property
    def rejected_docs(self) -> int:
        return sum(d for d, _ in self.rejected.values())

    @property
    def rejected_bytes(self) -> int:
        return sum(b for _, b in self.rejected.values())

    def add(self, other: "Counts") -> None:
        self.docs_in += other.docs_in
        self.bytes_in += other.bytes_in
        self.kept += other.kept
        self.kept_bytes += other.kept_bytes
        self.skipped += other.skipped
        for reason, (d, b) in other.rejected.items():
            cur = self.rejected.setdefault(reason, [0, 0])
            cur[0] += d
            cur[1] += b

    def to_dict(self) -> dict[str, Any]:
        return {
            "docs_in": self.docs_in,
            "bytes_in": self.bytes_in,
            "kept": self.kept,
            "kept_bytes": self.kept_bytes,
            "rejected": self.rejected_docs,
            "rejected_bytes": self.rejected_bytes,
            "skipped": self.skipped,
            "reasons": {r: {"docs": d, "bytes": b} for r, (d, b) in sorted(self.rejected.items())},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Counts":
        return cls(
            docs_in=d["docs_in"], bytes_in=d["bytes_in"], kept=d["kept"], kept_bytes=d["kept_bytes"],
            skipped=d.get("skipped", 0),
            rejected={r: [v["docs"], v["bytes"]] for r, v in d.get("reasons", {}).items()},
        )


class Ledger:
    """stage label -> source -> Counts, in pipeline order; plus per-source input files."""

    def __init__(self, stage_order: list[str] | None = None):
        self.stage_order: list[str] = list(stage_order or [])
        self.stages: dict[str, dict[str, Counts]] = {s: {} for s in self.stage_order}
        self.inputs: dict[str, dict[str, int]] = {}  # source -> {"files": n, "bytes": on-disk bytes}
        self.unreadable_files: list[str] = []
        self.params: dict[str, dict[str, Any]] = {}  # stage label -> parameters it ran with (e.g. LSH bands)

    def counts(self, stage: str, source: str) -> Counts:
        if stage not in self.stages:
            self.stages[stage] = {}
            self.stage_order.append(stage)
        return self.stages[stage].setdefault(source, Counts())

    def record(self, stage: str, source: str, *, docs_in: int, bytes_in: int, kept: int,
               kept_bytes: int, rejected: dict[str, list[int]] | None = None, skipped: int = 0) -> None:
        self.counts(stage, source).add(
            Counts(docs_in, bytes_in, kept, kept_bytes, skipped, {k: list(v) for k, v in (rejected or {}).items()})
        )

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
        self.params.update(other.params)

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
                sources = set(self.stages[prev]) | set(self.stages[stage])
                for source in sorted(sources):
                    before = self.stages[prev].get(source, Counts()).kept
                    now = self.stages[stage].get(source, Counts()).docs_in
                    if before != now:
                        problems.append(
                            f"source {source}: stage {prev} kept {before} documents "
                            f"but stage {stage} received {now}"
                        )
            prev = stage
        return problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "unreadable_files": sorted(set(self.unreadable_files)),
            "stages": [
                {
                    "stage": s,
                    "total": self.total(s).to_dict(),
                    "sources": {src: c.to_dict() for src, c in sorted(self.stages[s].items())},
                    **({"params": self.params[s]} if s in self.params else {}),
                }
                for s in self.stage_order
            ],
        }

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
        return led

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2)
            fh.write("\n")

    @classmethod
    def read(cls, path: str) -> "Ledger":
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))
