"""Runs a recipe: the driver of a run.

    run             plan (planning.py: shards -> parts -> phases), open the run (state.py: lock,
                    fingerprint, resume records), choose and open a WorkerPool (pool.py), then per
                    phase `_run_phase` (every unfinished part through `ShardWorker.run`, worker.py)
                    and, at its barrier group, the group's waves, resolves and stored keys (barrier.py);
                    last the ledger, shards.jsonl, recipe.json and the manifest.

Each part's outputs (kept, rejects per stage, ledger) are committed as a unit, which makes the
ledger exact per part, the output file names independent of the number of workers, and resuming a
killed run a matter of skipping completed parts. Workers hold the stages, so a model loads once per
worker. Memory per worker is bounded by one batch per stage, since readers stream.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
from tqdm import tqdm

from pipeline import storage
from pipeline.dataset_card import write_dataset_card
from pipeline.engine import state
from pipeline.errors import RunError
from pipeline.engine.run_cpu import RunCpu
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import Recipe
from pipeline.schema import full_schema
from pipeline.engine.planning import (check_output_apart, input_stamps, largest_first, part_limits, plan_parts,
                                      plan_phases, plan_shards, split_shards, stamp_size)
from pipeline.engine.pool import SMALL_INPUT_BYTES, WorkerPool, backend, choose, open_pool
from pipeline.engine.barrier import bypass_name, resolve_group, spill_name, stored_key_files
from pipeline.engine.worker import READ, Part, Phase, Shard, ShardWorker

log = logging.getLogger("refinery")


@dataclass
class RunResult:
    out: str
    ledger: Ledger
    seconds: float
    workers: int
    resumed: bool = False
    used_ray: bool = False
    complete: bool = False  # the output was a finished run already: nothing was done


def _phase_input_bytes(out: str, prev_label: str, part: Part, files: dict[str, str]) -> int:
    """The bytes a part reads in a phase after a barrier: its spill and bypass files (local outputs
    only; the first phase's parts are sized by their input stamps)."""
    paths = [storage.join(out, files[n]) for n in (spill_name(prev_label, part), bypass_name(prev_label, part))
             if n in files]
    return sum(os.path.getsize(p) for p in paths if not storage.is_url(p) and os.path.exists(p))


# -- the run ----------------------------------------------------------------------------------
def run(
    recipe: Recipe,
    *,
    address: str | None = None,
    workers: int | None = None,
    executor: str = "ray",
    overwrite: bool = False,
    progress: bool = True,
) -> RunResult:
    """Run a recipe on the workers of `executor` (pipeline/engine/pool.py: auto, local, processes or
    ray; every backend keeps the same documents). The command's default is auto (`--executor`)."""
    t0 = time.time()
    run_cpu = RunCpu()
    recipe.output = out = storage.absolute(recipe.output)
    check_output_apart(recipe)
    shards = plan_shards(recipe)
    kind = choose(executor, recipe, shards, address)
    if executor == "auto" and kind == "local":
        _say(f"small local input (under {SMALL_INPUT_BYTES >> 20} MiB): running in this process without Ray"
             " (--ray to start one)", progress)
    stages = [spec.build() for spec in recipe.stages]
    labels = [spec.label for spec in recipe.stages]
    schema = full_schema(f for st in stages for f in st.signal_fields())
    phases = plan_phases(stages)
    stamps = input_stamps(shards)
    shards = [dataclasses.replace(s, size=stamp_size(stamps[f"{s.source}:{s.id_path}"])) for s in shards]
    shards = split_shards(recipe, shards)
    fp = state.fingerprint_inputs(recipe.raw, stamps)
    lock = state.RunLock(out, recipe.path)
    resumed = state.open_run(out, fp, recipe.path, overwrite, lock=lock)
    try:
        return _run_locked(recipe, shards, stages, labels, schema, phases, resumed, t0,
                           address=address, workers=workers, kind=kind, progress=progress, run_cpu=run_cpu)
    finally:
        lock.release()


def _say(line: str, progress: bool) -> None:
    """A line for the run log, and for the user too unless the run is quiet."""
    log.info("%s", line)
    if progress:
        print(line, file=sys.stderr)


def _read_records(out: str, phases: Sequence[Phase], shards: Sequence[Shard]) -> list[dict[int, dict]]:
    """Per phase, the records of finished parts, by part index (read once: the snapshot the run
    trusts). A record lists the shards its part covers.
    Phase 0's records must cover disjoint shards (an overlapping one, which only a stray attempt
    of a killed driver could write, is ignored and its files swept); a later phase's record counts
    only for a part of exactly the same shards."""
    from concurrent.futures import ThreadPoolExecutor

    found: list[dict[int, dict]] = []
    covered: set[int] = set()
    for phase in phases:
        d = storage.join(out, state.STATE, f"p{phase.index}")
        named = [(int(m.group(1)), n) for n in storage.listdir(d) if (m := re.fullmatch(r"part-(\d+)\.json", n))]
        with ThreadPoolExecutor(16 if storage.is_url(out) else 1) as pool:  # an object store: GETs overlap
            read = list(pool.map(lambda n: storage.read_json(storage.join(d, n)), [n for _, n in named]))
        recs: dict[int, dict] = {}
        for (idx, _), rec in sorted(zip(named, read), key=lambda x: x[0]):
            if not (isinstance(rec, dict) and isinstance(rec.get("files"), dict) and isinstance(rec.get("shards"), list)
                    and rec["shards"] and rec["shards"][0] == idx):
                continue  # not a record this version writes: the part is done again
            if not found:  # phase 0
                if not all(isinstance(i, int) and 0 <= i < len(shards) and i not in covered for i in rec["shards"]):
                    continue
                covered.update(rec["shards"])
            elif idx not in found[-1] or rec["shards"] != found[-1][idx]["shards"]:
                continue
            recs[idx] = rec
        found.append(recs)
    return found


def _run_locked(recipe: Recipe, shards: list[Shard], stages: list, labels: list[str], schema: pa.Schema,
                phases: list[Phase], resumed: bool, t0: float, *, address: str | None, workers: int | None,
                kind: str, progress: bool, run_cpu: RunCpu) -> RunResult:
    out = recipe.output
    _setup_log_file(out)
    if resumed and storage.exists(state.complete_marker(out)):
        log.info("run already complete: %s", out)
        if not recipe.keep_work:  # left by a run killed between its manifest and this clean-up
            storage.rmtree(storage.join(out, "_work"))
        return RunResult(out, Ledger.read(storage.join(out, "ledger.json")),
                         time.time() - t0, 0, resumed=True, used_ray=kind == "ray", complete=True)
    records = _read_records(out, phases, shards) if resumed else [{} for _ in phases]
    if resumed:
        committed = {f for recs in records for r in recs.values() for f in r["files"].values()}
        committed |= stored_key_files(out, labels)
        log.info("resuming the run in %s: removed %d uncommitted files", out,
                 state.sweep_uncommitted(out, committed))

    t_ray = time.time()
    n_workers = backend(kind).count(recipe, address, workers)
    log.info("%d shards, %d phases, %d worker(s)%s; set-up took %.1fs", len(shards), len(phases), n_workers,
             f" (Ray, {time.time() - t_ray:.1f}s of it to start or attach)" if kind == "ray" else
             " (local processes)" if kind == "processes" else "", time.time() - t0)
    parts = _plan_run_parts(shards, records[0], n_workers)
    part_ledgers = PartLedgers()
    log.info("%d shards in %d parts", len(shards), len(parts))
    ledger = Ledger([READ] + labels)
    for label, st in zip(labels, stages):
        if st.params():
            ledger.params[label] = st.params()
            _say(f"{label}: {json.dumps(st.params())}", progress)
    pool = open_pool(kind, ShardWorker, (recipe, schema, os.getcwd()), n_workers)
    resumed_cpu = 0.0
    try:
        decisions: dict[int, list[str | None]] = {}
        prev: Phase | None = None
        for phase in phases:
            names = ([READ] if prev is None else [labels[i] for i in prev.group]) + [labels[i] for i in phase.stages]
            if phase.group:
                names.append(" + ".join(labels[i] for i in phase.group) + " (keys)")
            done = records[phase.index]
            for p in parts:
                if p.index in done:  # committed by an earlier attempt: its shard work is not this run's CPU
                    ledger.merge(led := part_ledgers.add(p.index, done[p.index]))
                    resumed_cpu += led.shard_work["cpu_seconds"]
            todo = [p for p in parts if p.index not in done]
            prev_files = {} if prev is None else {i: r["files"] for i, r in records[prev.index].items()}
            prev_label = None if prev is None else labels[prev.barrier]  # type: ignore[index]
            todo = largest_first(todo, [sum(s.size for s in p.shards) if prev_label is None else
                                        _phase_input_bytes(out, prev_label, p, prev_files.get(p.index, {}))
                                        for p in todo])
            if todo:
                _run_phase(pool, phase, prev, todo, len(shards), decisions, prev_files, ledger, done,
                           part_ledgers, " > ".join(names), progress)
            if phase.group:
                spills = [storage.join(out, done[p.index]["files"][spill_name(labels[phase.group[0]], p)])
                          for p in parts]
                decisions = resolve_group(recipe, pool, stages, labels, phase.group, parts, spills, ledger, progress)
            prev = phase
        workers_cpu = pool.workers_cpu()
    finally:
        pool.close()

    run_cpu.book(ledger, resumed_cpu, in_process=kind == "local", own_ray=kind == "ray" and not address,
                 workers=workers_cpu)
    problems = ledger.check()
    ledger.write(storage.join(out, "ledger.json"))
    write_shard_ledgers(out, parts, part_ledgers)
    part_ledgers.close()
    if problems:
        raise RunError("ledger does not balance: " + "; ".join(problems))
    storage.write_text(storage.join(out, "recipe.json"), json.dumps(recipe.raw, indent=2, default=str))
    committed = {f for recs in records for r in recs.values() for f in r["files"].values()}
    committed |= stored_key_files(out, labels)
    state.sweep_uncommitted(out, committed)
    outputs = sorted(f for f in committed if not f.startswith("_work/"))
    write_dataset_card(out, outputs)
    storage.write_json(state.complete_marker(out), {
        "seconds": time.time() - t0, "files": outputs,
        "ledger": "ledger.json", "shards": "shards.jsonl", "recipe": "recipe.json"})
    if not recipe.keep_work:  # after the manifest: a run killed before it can still resume
        storage.rmtree(storage.join(out, "_work"))
    for h in log.handlers:
        h.flush()
    return RunResult(out, ledger, time.time() - t0, n_workers, resumed=resumed, used_ray=kind == "ray")


class PartLedgers:
    """Each part's ledger of every phase, spooled to a local temporary file as its record arrives:
    the driver keeps a file offset per part and phase instead of the ledgers themselves (a crawl of
    90,000 files has 90,000 parts), and merges a part's ledgers only when shards.jsonl is written."""

    def __init__(self) -> None:
        import tempfile

        self._fh = tempfile.TemporaryFile()
        self._at: dict[int, list[tuple[int, int]]] = {}

    def add(self, index: int, record: dict) -> Ledger:
        """Spool the record's ledger (removed from the record, which keeps its files); returns it."""
        raw = record.pop("ledger")
        data = json.dumps(raw).encode()
        off = self._fh.seek(0, 2)
        self._fh.write(data)
        self._at.setdefault(index, []).append((off, len(data)))
        return Ledger.from_dict(raw)

    def ledger(self, index: int) -> Ledger:
        led = Ledger()
        for off, n in self._at.get(index, []):
            self._fh.seek(off)
            led.merge(Ledger.from_dict(json.loads(self._fh.read(n))))
        return led

    def close(self) -> None:
        self._fh.close()


def write_shard_ledgers(out: str, parts: Sequence[Part], ledgers: PartLedgers) -> None:
    """OUT/shards.jsonl: one line per part (its number is the N of its part-N files) with its
    input files and its ledger over every phase, so the report projects from what the run wrote
    instead of reading the runner's private records. Written line by line."""
    storage.write_lines(storage.join(out, "shards.jsonl"), (
        json.dumps({"shard": p.index, "source": p.source, "file": p.shards[0].id_path,
                    "files": [s.id_path for s in p.shards], "ledger": ledgers.ledger(p.index).to_dict()}) + "\n"
        for p in parts))


def _plan_run_parts(shards: Sequence[Shard], done: dict[int, dict], workers: int) -> list[Part]:
    """The run's parts: those phase 0 already committed (a resumed run), then the other shards
    joined by plan_parts. Sizes come from the input stamps (no extra listing)."""
    parts = [Part(tuple(shards[i] for i in rec["shards"])) for rec in done.values()]
    covered = {s.index for p in parts for s in p.shards}
    todo = [s for s in shards if s.index not in covered]
    target, most = part_limits([s.size for s in shards], workers)
    parts += plan_parts(todo, [s.size for s in todo], target, most)
    return sorted(parts, key=lambda p: p.index)


def _run_phase(pool: WorkerPool, phase: Phase, prev: Phase | None, parts: list[Part], total: int,
               decisions: dict[int, list[str | None]], prev_files: dict[int, dict[str, str]], ledger: Ledger,
               done: dict[int, dict], part_ledgers: PartLedgers, desc: str, progress: bool) -> None:
    first = READ if prev is None else None
    docs = 0
    t0 = time.time()
    n_shards = sum(len(p.shards) for p in parts)
    bar = tqdm(total=total, initial=total - n_shards, desc=desc, unit="shard", disable=not progress,
               dynamic_ncols=True)
    try:
        for part, result, seconds in pool.run_parts(phase, prev, parts, decisions, prev_files):
            done[part.index] = result
            led = part_ledgers.add(part.index, result)
            ledger.merge(led)
            stage = first or (led.stage_order[0] if led.stage_order else None)
            n = led.total(stage).docs_in if stage else 0
            docs += n
            bar.set_postfix_str(f"{docs / max(time.time() - t0, 1e-9):,.0f} docs/s")
            bar.update(len(part.shards))
            log.info("phase %d: %s done: %d documents in, %.2fs of work", phase.index, part.describe(), n, seconds)
    finally:
        bar.close()
    log.info("phase %d: %d shards in %d parts in %.1fs", phase.index, n_shards, len(parts), time.time() - t0)


def _setup_log_file(out: str) -> None:
    """The run's log goes to OUT/run.log (instead of an earlier run's in this process)."""
    handler = storage.log_handler(storage.join(out, "run.log"))
    handler.set_name("run.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for h in list(log.handlers):
        if h.get_name() == "run.log":
            log.removeHandler(h)
            h.close()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
