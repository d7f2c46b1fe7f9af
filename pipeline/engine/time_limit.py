"""Per-document stages under a time limit per document (the recipe's `stage_time_limit`).

Why a child process: a stage's slow path is often C code (fastText, spaCy, a regex engine, a
library's parser), which a signal cannot interrupt (Python runs a handler only when the C call
returns, and only on the main thread). So the worker sends each batch to one child process
(pipeline/sources/sandbox.py, started once per worker, models loaded there once and never timed)
that annotates and decides it. If the batch takes longer than the limit, the child is killed and
restarted, and the batch is redone one document at a time: a document that alone takes longer than
the limit is rejected with `time_limit_exceeded` (no signals), and every other one gets exactly
the decision it would have had (stages decide each document on its own). A document on which the
child dies (a crash in C code) stops the part with an error that names it, as a crash of the worker
did before, rather than being silently booked as a reject.

Cost: the batch crosses a pipe twice (only the columns a stage adds or changes come back), and a
timed-out batch costs one limit's wait plus its documents one by one; docs/filters.md ("Time limit
per document") gives the measured overhead.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import pyarrow as pa

from pipeline.sources.sandbox import Sandbox, SandboxCrash, SandboxSetupError, SandboxTimeout
from stages.base import TIME_LIMIT, Stage, StageConfig


def _serve(stages: list[tuple[type[Stage], StageConfig]]) -> Callable[[Any], Any]:
    """Built in the child: every per-document stage of the recipe, set up before the first document
    (model loading never counts against a document's limit)."""
    built = [cls(cfg) for cls, cfg in stages]
    for st in built:
        st.ensure_setup()

    def call(arg: tuple[int, pa.Table]) -> tuple[pa.Schema, pa.Table, list[str | None]]:
        i, table = arg
        ann = built[i].annotate(table)
        return (*_changes(ann, table), list(built[i].decide(ann)))

    return call


def _changes(ann: pa.Table, table: pa.Table) -> tuple[pa.Schema, pa.Table]:
    """The annotated batch's schema and only its new or rewritten columns: the text a stage leaves
    unchanged does not cross the pipe back."""
    changed = [n for n in ann.column_names
               if n not in table.column_names or not ann.column(n).equals(table.column(n))]
    return ann.schema, ann.select(changed)


def _rebuild(schema: pa.Schema, changed: pa.Table, table: pa.Table) -> pa.Table:
    cols = [changed.column(f.name) if f.name in changed.column_names else table.column(f.name) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


class TimedStages:
    """`apply(i, stage, table)` -> (annotated table, reasons, details, child CPU seconds) for the
    recipe's per-document stage at position `i`, computed in the child under `limit` seconds."""

    def __init__(self, stages: list[Stage], limit: float):
        self.limit = limit
        self._index = {id(st): k for k, st in enumerate(stages)}
        factory = functools.partial(_serve, [(type(st), st.config) for st in stages])
        self._box = Sandbox(factory, limit, name="refinery-stages")

    def close(self) -> None:
        self._box.close()

    def apply(self, stage: Stage, label: str, table: pa.Table) -> tuple[pa.Table, list[str | None], list[str | None], float]:
        """... and the CPU seconds the child process used for it, as the process's own counters
        give them: its start-up (imports, models) on the first batch, and the time of a batch
        that ran past the limit before it was killed, included."""
        before = self._box.cpu_seconds()
        k = self._index[id(stage)]
        try:
            ann, reasons = self._call(k, table)
            details: list[str | None] = [None] * len(reasons)
        except SandboxTimeout:
            ann, reasons, details = self._one_by_one(k, stage, label, table)
        except SandboxSetupError:
            raise  # no document is to blame (a missing model): its own message, once
        except SandboxCrash:
            if table.num_rows == 1:
                raise self._crashed(label, table) from None
            ann, reasons, details = self._one_by_one(k, stage, label, table)
        return ann, reasons, details, max(self._box.cpu_seconds() - before, 0.0)

    def _call(self, k: int, table: pa.Table) -> tuple[pa.Table, list[str | None]]:
        schema, changed, reasons = self._box((k, table))
        return _rebuild(schema, changed, table), reasons

    def _one_by_one(self, k: int, stage: Stage, label: str, table: pa.Table):
        pieces, reasons, details = [], [], []
        for r in range(table.num_rows):
            row = table.slice(r, 1)
            try:
                ann, why = self._call(k, row)
            except SandboxTimeout:
                ann, why = _without_signals(stage, row), [TIME_LIMIT]
                details.append(f"more than {self.limit:g} s in stage {label}")
            except SandboxSetupError:
                raise
            except SandboxCrash:
                raise self._crashed(label, row) from None
            else:
                details.append(None)
            pieces.append(ann)
            reasons.extend(why)
        out = pa.concat_tables(pieces, promote_options="permissive") if pieces else table
        return out, reasons, details

    def _crashed(self, label: str, row: pa.Table) -> RuntimeError:
        doc = row.select([c for c in ("id", "file", "offset") if c in row.column_names]).to_pylist()[0]
        return RuntimeError(f"stage {label}: its process died on document {doc.get('id')} "
                            f"({doc.get('file')}, offset {doc.get('offset')})")


def _without_signals(stage: Stage, row: pa.Table) -> pa.Table:
    """A document the stage never finished: its signal columns are null."""
    for f in stage.signal_fields():
        if f.name not in row.column_names:
            row = row.append_column(f.with_nullable(True), pa.nulls(row.num_rows, f.type))
    return row
