"""One part through one phase: the per-part path. No Ray here.

A phase is a run of per-document stages, optionally ended by a barrier group (planning.py). For
each part `ShardWorker.run` reads its input (`_read_sources`: the source files in phase 0;
`_read_barrier`: the previous group's spill with its decisions applied, barrier.py), streams
batches through the stages (`_run_stages`), writes kept documents, rejects per stage and (before a
barrier) the spill, and commits the part's record: its ledger and files (`_finish`). Every
file carries the attempt's unique id (state.py's commit protocol): nothing is renamed, so the same
code is correct on object stores; the shard record written last names the files that count.
"""
from __future__ import annotations

import json
import os
import time
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import Recipe
from pipeline.schema import conform, text_bytes
from pipeline.sources import url_gate
from pipeline.sources.base import READ_BATCH_CHARS
from pipeline import storage
from pipeline.engine.state import new_attempt, shard_record
from pipeline.engine.time_limit import TimedStages
from pipeline.sources.extract import EXTRACTION_PROCESS
from pipeline.sources.sandbox import children_cpu
from pipeline.engine.barrier import (aligned_decisions, bypass_name, committed_path, decision_file,
                                     scatter_fields, spill_name, spilled_keys)
from pipeline.engine.planning import Part, Phase, Shard
from pipeline.engine.pool import TaskWorker
from stages._arrow import null_columns, set_column
from stages.base import Stage
from stages.dedup.io import OVERLAY_BASE, OVERLAY_TEXT, spill_options  # the overlay and spill layouts io reads

READ = "read"


def _clock() -> tuple[float, float]:
    """(process CPU seconds, wall seconds): process CPU so native thread pools a stage uses count,
    plus the CPU of this process's extraction children (readers extract pages there, so it is
    booked to read and to the shard's work; the stages' child is booked through `child_cpu`)."""
    return time.process_time() + children_cpu(EXTRACTION_PROCESS), time.perf_counter()


def _book(ledger: Ledger, stage: str, source: str, start: tuple[float, float], child_cpu: float = 0.0) -> None:
    cpu, wall = _clock()
    ledger.add_time(stage, source, cpu - start[0] + child_cpu, wall - start[1])


def resolve_input(url: str, driver_cwd: str | None) -> str:
    """A relative input path, as this worker can open it: relative to its own working directory
    when the file is there (a Ray job's working_dir, unpacked on every node), else to the driver's
    (nodes of one machine, or a shared mount)."""
    if storage.is_url(url) or os.path.isabs(url) or driver_cwd is None or os.path.exists(url):
        return url
    return os.path.join(driver_cwd, url)


class ShardOutputs:
    """Lazily opened Parquet writers for one shard attempt. `write(name, table)` appends to the
    output `name` (relative to OUT, e.g. `kept/part-00007.parquet`); the file written is
    `kept/part-00007-<attempt>.parquet`, so two attempts of a shard (a retry, a worker of a killed
    driver) never write the same object. `commit()` closes every file and returns {logical name:
    file written}, which the shard's record stores; `abort()` deletes the attempt's files."""

    def __init__(self, out: str, schema: pa.Schema, attempt: str | None = None):
        self.out = out
        self.schema = schema
        self.attempt = attempt or new_attempt()
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.names: dict[str, str] = {}

    def write(self, name: str, table: pa.Table, schema: pa.Schema | None = None, empty_too: bool = False,
              spill: bool = False) -> None:
        """`empty_too`: the file exists even with no rows (every shard's spill must); `spill`: io.spill_options."""
        if table.num_rows == 0 and not empty_too:
            return
        schema = schema or self.schema
        w = self.writers.get(name)
        if w is None:
            self.names[name] = name[: -len(".parquet")] + f"-{self.attempt}.parquet"
            w = storage.parquet_writer(storage.join(self.out, self.names[name]), schema,
                                       **(spill_options(schema) if spill else {}))
            self.writers[name] = w
        w.write_table(conform(table, w.schema))

    def commit(self) -> dict[str, str]:
        for w in self.writers.values():
            w.close()
        return dict(sorted(self.names.items()))

    def abort(self) -> None:
        for name, w in self.writers.items():
            try:
                w.close()
            except Exception:
                pass
            try:
                storage.remove(storage.join(self.out, self.names[name]))
            except OSError:
                pass


def _decide(table: pa.Table, label: str, reasons: pa.Array, details: pa.Array | None, ledger: Ledger, source: str,
            outputs: "ShardOutputs | _Discard", part_name: str, bytes_in: int, skipped: int = 0,
            unseen: list[str] | tuple[str, ...] = ()) -> pa.Table:
    """A stage's decisions on a batch: the rejected rows, with their decision and the signals
    `unseen` nulled (stages they no longer reach), go to rejects/LABEL/PART_NAME; the stage's ledger
    row is booked; returns the live rows."""
    mask = pc.is_valid(reasons)
    rejected, rej_reasons = table.filter(mask), reasons.filter(mask)
    live = table.filter(pc.invert(mask))
    n = rejected.num_rows
    rejected = set_column(rejected, "drop_stage", pa.array([label] * n, pa.string()))
    rejected = set_column(rejected, "drop_reason", rej_reasons)
    rejected = set_column(rejected, "drop_detail", details.filter(mask) if details is not None else pa.nulls(n, pa.string()))
    ledger.record(label, source, docs_in=table.num_rows, bytes_in=bytes_in, kept=live.num_rows,
                  kept_bytes=text_bytes(live), rejected=_by_reason(rejected, rej_reasons), skipped=skipped)
    outputs.write(f"rejects/{label}/{part_name}", null_columns(rejected, unseen))
    return live


def _by_reason(table: pa.Table, reasons: pa.Array) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    lengths = pc.fill_null(pc.binary_length(table.column("text")), 0).to_pylist()
    for reason, nbytes in zip(reasons.to_pylist(), lengths):
        cur = out.setdefault(reason, [0, 0])
        cur[0] += 1
        cur[1] += nbytes
    return out


class ShardWorker(TaskWorker):
    """Holds the built stages (models load once, on first use) and processes shards; as a
    `TaskWorker`, it also runs a global stage's functions (`call`, the pools' executors)."""

    def __init__(self, recipe: Recipe, schema: pa.Schema, driver_cwd: str | None = None):
        self.recipe = recipe
        self.driver_cwd = driver_cwd
        self.out = recipe.output
        self.schema = schema
        self.stages = [spec.build() for spec in recipe.stages]
        self.labels = [spec.label for spec in recipe.stages]
        url_gate.install(recipe.sources, self.stages)  # pages a leading URL stage rejects are not extracted
        # per-document stages run in a supervised child under the recipe's stage_time_limit
        local = [st for st in self.stages if not st.needs_all_documents and not st.runs_in_worker]
        limit = recipe.stage_time_limit
        self.timed = TimedStages(local, limit) if limit and local else None
        self._child_cpu = 0.0  # CPU seconds the child spent for the current part

    def close(self) -> None:
        """Stop the stages' child process (it also ends when this process does)."""
        if self.timed is not None:
            self.timed.close()

    def spill_schema(self, group: list[int]) -> pa.Schema:
        """Spill files also hold the group's private columns (MinHash band keys, line hashes)."""
        extra: dict[str, pa.Field] = {}
        for i in spilled_keys(self.stages, group):
            for f in self.stages[i].spill_fields():
                extra.setdefault(f.name, f.with_nullable(True))
        return pa.schema(list(self.schema) + list(extra.values()))

    # -- entry point -----------------------------------------------------------------------
    def run(self, phase: Phase, prev: Phase | None, part: Part, decisions: list[str | None] | None,
            prev_files: dict[str, str] | None = None) -> dict:
        """Process one part through `phase`; returns its record: {"ledger",
        "files", "shards"}. `decisions`: the part's decision file of each member of the previous
        barrier group; `prev_files` are the files the part's record of the previous phase names
        (its spill and bypass)."""
        ledger = Ledger()
        outputs = ShardOutputs(self.out, self.schema)
        start = _clock()
        self._child_cpu = 0.0
        try:
            if prev is None:
                batches = self._read_sources(part, ledger, outputs)
            else:
                batches = self._read_barrier(prev, part, decisions, ledger, outputs, prev_files or {})
            for live in batches:
                live = self._run_stages(phase.stages, part, live, ledger, outputs)
                self._finish(phase, part, live, ledger, outputs)
            if phase.group:
                spill = self.spill_schema(phase.group)
                outputs.write(spill_name(self.labels[phase.group[0]], part), spill.empty_table(), spill, empty_too=True, spill=True)
            files = outputs.commit()
        except BaseException:
            outputs.abort()
            raise
        cpu, wall = _clock()
        ledger.add_shard_work(cpu - start[0] + self._child_cpu, wall - start[1])
        result = {"ledger": ledger.to_dict(), "files": files, "shards": [s.index for s in part.shards]}
        storage.write_json(shard_record(self.out, phase.index, part.part), result)
        return result

    def run_many(self, phase: Phase, prev: Phase | None,
                 items: list[tuple[Part, list[str | None] | None, dict[str, str] | None]]) -> list[tuple[int, dict, float]]:
        """`run` for several parts in one call (see pool.chunks), each tagged with its index (results
        come in completion order) and the seconds it took here, for the run log; each part commits
        on its own, so a call cut short leaves its finished parts done."""
        out = []
        for part, decisions, prev_files in items:
            t0 = time.perf_counter()
            out.append((part.index, self.run(phase, prev, part, decisions, prev_files), time.perf_counter() - t0))
        return out

    # -- inputs ----------------------------------------------------------------------------
    def _read_sources(self, part: Part, ledger: Ledger, outputs: ShardOutputs) -> Iterator[pa.Table]:
        """The live documents of the part's shards, in shard order, in batches of about the
        source's batch size: small files are joined into full batches before anything else is
        done with them, so a stage's per-batch cost, the read stage's own bookkeeping and the
        writers' row groups do not multiply with the number of files."""
        step = self.recipe.sources[part.source].config.batch_size
        buf: list[pa.Table] = []
        rows = held = 0
        sent = False
        start = _clock()
        for shard in part.shards:
            for table in self._read_file(shard, ledger):
                if table.num_rows == 0 and (buf or sent):
                    continue
                buf.append(table)
                rows += table.num_rows
                held += table.column("text").nbytes  # a reader's batch is bounded by text too: keep it so
                if rows >= step or held >= READ_BATCH_CHARS:
                    yield self._admit(part, _concat(buf), ledger, outputs, start)
                    buf, rows, held, sent = [], 0, 0, True
                    start = _clock()
        if buf:
            yield self._admit(part, _concat(buf), ledger, outputs, start)
        elif not sent:
            _book(ledger, READ, part.source, start)

    def _read_file(self, shard: Shard, ledger: Ledger) -> Iterator[pa.Table]:
        """One input file's batches as the reader gives them (read rejects included); books the
        file's input size, and the file as unreadable when it gave nothing but unreadable rows."""
        source = self.recipe.sources[shard.source]
        url = resolve_input(shard.url, self.driver_cwd)
        try:  # one span of a file cut in several (planning.split_shards): its bytes, the file counted once
            size = shard.span[1] - shard.span[0] if shard.span else storage.size(url)
        except Exception:
            size = 0
        ledger.add_input(shard.source, int(not shard.span or shard.span[0] == 0), size)
        any_ok = False
        unreadable = 0
        for table in source.read(url, shard.id_path, shard.span):
            reasons = table.column("drop_reason")
            any_ok = any_ok or reasons.null_count > 0
            if reasons.null_count < table.num_rows:
                unreadable += pc.sum(pc.equal(reasons, "unreadable")).as_py() or 0
            yield table
        if not any_ok and unreadable:
            ledger.unreadable_files.append(shard.url)
        elif any_ok and shard.span is not None:  # another span of the file may have read nothing
            ledger.readable_files.append(shard.url)

    def _admit(self, part: Part, table: pa.Table, ledger: Ledger, outputs: ShardOutputs,
               start: tuple[float, float]) -> pa.Table:
        """A batch as read: its read rejects written and booked, its live documents returned."""
        live = _decide(table, READ, table.column("drop_reason").combine_chunks(),
                       table.column("drop_detail").combine_chunks(), ledger, part.source, outputs, part.part,
                       text_bytes(table))
        live = live.drop_columns(["drop_reason", "drop_detail"])
        _book(ledger, READ, part.source, start)
        return live

    def _read_barrier(self, prev: Phase, shard: Part, decisions: list | None, ledger: Ledger,
                      outputs: ShardOutputs, prev_files: dict[str, str]) -> Iterator[pa.Table]:
        """The previous barrier group's survivors of this shard, batch by batch: the spill is
        streamed and only the decisions (ids, reasons, signals) are held whole, so memory does not
        grow with the shard's size. The members' decisions apply in recipe order, each to the
        survivors of the ones before, and each member books its own ledger row and rejects. A
        per-document member's decisions (and the text it rewrote) come from its wave
        (`ShardWorker.wave`); on bypassed documents (the group's global stages skip this shard) it
        runs here, as in a phase of its own."""
        assert prev.group
        members = [(self.labels[i], self.stages[i]) for i in prev.group]
        first = members[0][0]
        step = self.recipe.sources[shard.source].config.batch_size
        if bypass_name(first, shard) in prev_files:
            bypass = committed_path(self.out, bypass_name(first, shard), prev_files)
            for batch in storage.open_parquet(bypass).iter_batches(batch_size=step):  # the global members skip it
                yield self._run_stages(prev.group, shard, pa.Table.from_batches([batch]), ledger, outputs)
        path = committed_path(self.out, spill_name(first, shard), prev_files)
        spill = storage.open_parquet(path)
        if spill.metadata.num_rows == 0:
            for label, st in members:
                if st.needs_all_documents:  # a per-document stage saw nothing, as in a phase of its own
                    ledger.record(label, shard.source, docs_in=0, bytes_in=0, kept=0, kept_bytes=0)
            return
        if (decisions is None or len(decisions) != len(members)
                or any(d is None for d, (_, st) in zip(decisions, members) if st.needs_all_documents)):
            raise RuntimeError(f"shard {shard.part}: missing decisions of the barrier {[m[0] for m in members]}")
        for table, _rows, _raw in self._apply_group(prev.group, decisions, path, step, shard.source, ledger, outputs,
                                                    shard.part):
            yield table
        for (label, _), d in zip(members, decisions):  # a per-document member's own work, in its wave
            if isinstance(d, dict) and "cpu" in d:
                ledger.add_time(label, shard.source, d["cpu"], d["wall"])

    def _apply_group(self, group: list[int], decisions: list, path: str, step: int, source: str,
                     ledger: Ledger, outputs: "ShardOutputs | _Discard", part_name: str
                     ) -> Iterator[tuple[pa.Table, pa.Array | None, pa.Table]]:
        """The spill at `path`, batch by batch, with the members' decisions applied in order (a
        None decision: a per-document member that does not apply to this shard, booked as
        skipped). Yields (live rows, their positions in the spill batch or None for all, the spill
        batch as read)."""
        members = [(self.labels[i], self.stages[i]) for i in group]
        first = members[0][0]
        spill = storage.open_parquet(path)
        ids = storage.read_parquet(path, columns=["id"]).column("id")
        id_list = ids.to_pylist()
        decs = [None if d is None else aligned_decisions(ids, _read_decision(d, id_list, st), st)
                for d, (_, st) in zip(decisions, members)]
        private = {f.name for _, st in members if st.needs_all_documents for f in st.spill_fields()}
        later_signals = [_later_signals(self.stages, group, j) for j in range(len(group))]
        off = 0
        batches = iter(spill.iter_batches(batch_size=step))
        while True:
            start = _clock()
            batch = next(batches, None)
            if batch is None:
                _book(ledger, first, source, start)
                break
            raw = pa.Table.from_batches([batch])
            n = raw.num_rows
            table = raw.drop_columns([c for c in raw.column_names if c in private])
            rows = None  # positions in this batch of the rows still live (None: all)
            for j, ((label, stage), dec) in enumerate(zip(members, decs)):
                if j:
                    start = _clock()
                if dec is None:
                    k, b = table.num_rows, text_bytes(table)
                    ledger.record(label, source, docs_in=k, bytes_in=b, kept=k, kept_bytes=b, skipped=k)
                    continue
                part = dec.slice(off, n)
                if rows is not None:
                    part = part.take(rows)
                if table.num_rows and not pc.all(pc.equal(part.column("id"), table.column("id"))).as_py():
                    raise RuntimeError(f"decisions of stage {stage.name} are out of step with {path}")
                b_in = text_bytes(table)  # before a decision may rewrite the text
                if not stage.needs_all_documents and "text" in part.column_names:  # only the rows it rewrote
                    part = part.set_column(part.column_names.index("text"), "text",
                                           pc.coalesce(part.column("text"), table.column("text")))
                drop = [c for c in table.column_names if c != "id" and c in part.column_names]
                table = table.drop_columns(drop)
                for name in part.column_names[1:]:
                    table = table.append_column(part.schema.field(name), part.column(name))
                reasons = table.column("drop_reason").combine_chunks()
                kept = pc.is_null(reasons)
                live = _decide(table, label, reasons, table.column("drop_detail").combine_chunks(), ledger, source,
                               outputs, part_name, b_in, stage.unexamined(table), later_signals[j])
                table = live.drop_columns([c for c in ("drop_stage", "drop_reason", "drop_detail")
                                           if c in live.column_names])
                rows = pc.indices_nonzero(kept) if rows is None else rows.filter(kept)
                _book(ledger, label, source, start)
            off += n
            yield table, rows, raw

    def wave(self, args) -> tuple[dict, float]:
        """One part's wave before a later global member of a barrier group whose keys are not in the
        spill (the group's text is spilled once per run, not once per member). Streams the group's
        spill with the decided members' decisions applied, runs the per-document members `mids`
        (those that apply to the part; maybe none) on the survivors exactly as a phase would, and writes:
        - per mid stage, its decision file: one row per spill row (null where an earlier member
          dropped it), `drop_reason`, its signals, and `text` only for the documents it rewrote;
        - for the next global member `nxt`, an overlay of the spill (same rows): its keys for the
          survivors and its quality column if it ranks by one. `stages.dedup.io.read_columns`
          reads the overlay through to the spill beneath it, and `text` through the decision
          files of the per-document members (the rewritten text is written once).
        Runs on the run's workers (their stages are set up once). Returns the files and times, and
        the CPU seconds the wave took here."""
        cpu_start, child_start = time.process_time(), self._child_cpu
        source, kind, spill, group, decisions, mids, nxt, dest, step = args
        run_mids = [i for i in mids if self.stages[i].applies_to(source, kind)]
        for i in run_mids:
            if self.timed is None:  # else they run in the stages' child, set up there
                self.stages[i].ensure_setup()
        nst = self.stages[nxt]
        nst.ensure_setup()
        n = storage.open_parquet(spill).metadata.num_rows
        mid_schema = {i: pa.schema([pa.field("id", pa.string()), pa.field("drop_reason", pa.string()),
                                    pa.field("drop_detail", pa.string()), pa.field("text", pa.string())]
                                   + [f.with_nullable(True) for f in self.stages[i].signal_fields()])
                      for i in run_mids}
        qcol = nst.ranks_by()
        key_fields = [f.with_nullable(True) for f in list(nst.signal_fields()) + list(nst.spill_fields())]
        ov_fields = [pa.field("id", pa.string())] + key_fields
        if qcol and qcol not in {f.name for f in ov_fields}:
            ov_fields.append(self.schema.field(qcol) if qcol in self.schema.names else pa.field(qcol, pa.float64()))
        # the text the stages rewrote: their decision files' `text`, the latest first
        layers = [dest["mids"][str(i)] for i in reversed(run_mids)] + [
            d["file"] for d in reversed(decisions) if isinstance(d, dict) and "cpu" in d]
        ov_schema = pa.schema(ov_fields, metadata={OVERLAY_BASE: storage.absolute(spill).encode(),
                                                   OVERLAY_TEXT: json.dumps(layers).encode()})
        writers = {i: storage.parquet_writer(dest["mids"][str(i)], mid_schema[i]) for i in run_mids}
        ov_writer = storage.parquet_writer(dest["overlay"], ov_schema)
        times = Ledger()  # the mids' own work, booked as a phase books it
        try:
            batches = self._apply_group(group, decisions, spill, step, source, Ledger(), _Discard(), "") if n else ()
            for table, rows, raw in batches:
                nb = raw.num_rows
                pos = np.arange(nb) if rows is None else np.asarray(rows.to_numpy(zero_copy_only=False), dtype=np.int64)
                for i in run_mids:
                    st = self.stages[i]
                    start = _clock()
                    details, child_cpu = None, 0.0
                    if table.num_rows:
                        annotated, reasons, details, child_cpu = self._apply_stage(st, self.labels[i], table)
                    else:
                        annotated, reasons = table, pa.array([], pa.string())
                    _book(times, self.labels[i], source, start, child_cpu)
                    dec = set_column(set_column(annotated, "drop_reason", reasons), "text",
                                     _rewritten(table.column("text"), annotated.column("text")))
                    dec = set_column(dec, "drop_detail", pa.nulls(len(reasons), pa.string()) if details is None else details)
                    cols = [raw.column("id")] + scatter_fields(dec, list(mid_schema[i])[1:], pos, nb)
                    writers[i].write_table(pa.Table.from_arrays(cols, schema=mid_schema[i]))
                    keep = pc.invert(pc.is_valid(reasons))
                    table = annotated.filter(keep)
                    pos = pos[np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)]
                keys = nst.annotate(without_signals(table, nst)) if table.num_rows else table
                cols = [raw.column("id")] + scatter_fields(keys, list(ov_schema)[1:], pos, nb)
                ov_writer.write_table(pa.Table.from_arrays(cols, schema=ov_schema))
            if n == 0:
                for i in run_mids:
                    writers[i].write_table(mid_schema[i].empty_table())
                ov_writer.write_table(ov_schema.empty_table())
        finally:
            for w in list(writers.values()) + [ov_writer]:
                w.close()
        spent = {i: times.counts(self.labels[i], source) for i in run_mids}
        return ({"mids": {str(i): ({"file": dest["mids"][str(i)], "cpu": spent[i].cpu_s, "wall": spent[i].wall_s}
                                   if i in spent else None) for i in mids}, "overlay": dest["overlay"]},
                time.process_time() - cpu_start + self._child_cpu - child_start)

    # -- stages ----------------------------------------------------------------------------
    def _run_stages(self, indices: list[int], shard: Part, live: pa.Table, ledger: Ledger,
                    outputs: ShardOutputs) -> pa.Table:
        for i in indices:
            stage, label = self.stages[i], self.labels[i]
            n_in, b_in = live.num_rows, text_bytes(live)
            applies = stage.applies_to(shard.source, shard.kind)
            if not applies or n_in == 0:
                ledger.record(label, shard.source, docs_in=n_in, bytes_in=b_in, kept=n_in, kept_bytes=b_in,
                              skipped=0 if applies else n_in)
                continue
            if self.timed is None:
                stage.ensure_setup()  # model loading is booked to the shard's other work, not the stage
            start = _clock()
            annotated, reasons, details, child_cpu = self._apply_stage(stage, label, live)
            live = _decide(annotated, label, reasons, details, ledger, shard.source, outputs, shard.part, b_in,
                           stage.unexamined(annotated))
            _book(ledger, label, shard.source, start, child_cpu)
        return live

    def _apply_stage(self, stage: Stage, label: str, table: pa.Table) -> tuple[pa.Table, pa.Array, pa.Array | None, float]:
        """A per-document stage's annotate and decide on a batch: in the stages' child under the
        recipe's stage_time_limit (pipeline/engine/time_limit.py), else here. Returns the annotated
        batch, one reason per row, the rows' drop details (None: none) and the child's CPU seconds."""
        table = without_signals(table, stage)
        if self.timed is None or stage.runs_in_worker:
            annotated = stage.annotate(table)
            reasons = pa.array(list(stage.decide(annotated)), pa.string())
            details, child_cpu = None, 0.0
        else:
            annotated, why, detail_list, child_cpu = self.timed.apply(stage, label, table)
            reasons = pa.array(why, pa.string())
            details = pa.array(detail_list, pa.string()) if any(d is not None for d in detail_list) else None
            self._child_cpu += child_cpu
        if len(reasons) != annotated.num_rows:
            raise RuntimeError(f"stage {label} gave {len(reasons)} decisions for {annotated.num_rows} rows")
        own = stage.drop_details(annotated, reasons.to_pylist()) if reasons.null_count < len(reasons) else None
        if own is not None:  # the stage's own details, where the time limit gave none
            own = pa.array(list(own), pa.string())
            details = own if details is None else pc.coalesce(details, own)
        return annotated, reasons, details, child_cpu

    def _finish(self, phase: Phase, shard: Part, live: pa.Table, ledger: Ledger, outputs: ShardOutputs) -> None:
        if not phase.group:
            outputs.write(f"kept/{shard.part}", live)
            return
        first = self.labels[phase.group[0]]
        if not self.stages[phase.group[0]].applies_to(shard.source, shard.kind):  # the group shares it
            outputs.write(bypass_name(first, shard), live)
            return
        if live.num_rows:
            for i in spilled_keys(self.stages, phase.group):  # the text is spilled once, with these keys
                stage = self.stages[i]
                stage.ensure_setup()
                start = _clock()
                live = stage.annotate(without_signals(live, stage))
                _book(ledger, self.labels[i], shard.source, start)  # the keys; the stage's ledger row comes next phase
        outputs.write(spill_name(first, shard), live, self.spill_schema(phase.group), spill=True)


class _Discard:
    """Outputs of a wave's replay of decisions already applied: nothing is written."""

    def write(self, name: str, table: pa.Table, schema: pa.Schema | None = None) -> None:
        pass


def _rewritten(before: pa.ChunkedArray | pa.Array, after: pa.ChunkedArray | pa.Array) -> pa.Array:
    """`after` where it differs from `before`, null elsewhere (the text a stage rewrote)."""
    if len(after) == 0:
        return pa.array([], pa.string())
    changed = pc.fill_null(pc.not_equal(before, after), False)
    out = pc.if_else(changed, after, pa.scalar(None, pa.string()))
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _read_decision(entry: "str | dict", id_list: list, stage: Stage) -> pa.Table:
    """A member's decisions for these ids: its decision file, plus (a global member after a
    per-document one) the signals its keys wave left in its overlay (exact dedup's `text_hash`)."""
    dec = storage.read_parquet(decision_file(entry), filters=[("id", "in", id_list)])
    overlay = entry.get("overlay") if isinstance(entry, dict) else None
    if overlay:
        have = storage.read_parquet_schema(overlay).names
        names = [f.name for f in stage.signal_fields() if f.name in have and f.name not in dec.column_names]
        if names:
            ov = storage.read_parquet(overlay, columns=["id"] + names, filters=[("id", "in", id_list)])
            dec = dec.join(ov, "id", join_type="left outer")
    return dec


def _later_signals(stages: list[Stage], group: list[int], j: int) -> list[str]:
    """The signal columns of the group's members after its j-th that no stage up to it sets (a
    stage used twice shares its columns): null on rows the j-th member drops, as if the later
    stages never saw them."""
    before = {f.name for st in stages[: group[j] + 1] for f in st.signal_fields()}
    return [f.name for i in group[j + 1:] for f in stages[i].signal_fields() if f.name not in before]


def _concat(tables: list[pa.Table]) -> pa.Table:
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive").combine_chunks()


def without_signals(table: pa.Table, stage: Stage) -> pa.Table:
    """A stage's signals replace earlier values of the same columns (a stage used twice)."""
    names = [f.name for f in stage.signal_fields() if f.name in table.column_names]
    return table.drop_columns(names) if names else table
