"""Runs a recipe: plans shards and phases, fans shards out over Ray, keeps the ledger.

Why Ray actors over shards rather than one Ray Data stream: each shard's output (kept, rejects
per stage, ledger) is committed as a unit, which makes the ledger exact per shard, the output
file names independent of the number of workers, and resuming a killed run a matter of skipping
completed shards. Actors hold the stages, so a model loads once per worker and phase. Memory per
worker is bounded by one batch per stage, since readers stream.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from pipeline.engine import state
from pipeline.errors import ConfigError, RunError
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import Recipe
from pipeline.schema import full_schema
from pipeline.engine.state import atomic_write_json
from pipeline.engine.worker import READ, Phase, Shard, ShardWorker, bypass_path, plan_phases, spill_path, work_dir
from stages.base import Executor, GlobalStage, LocalExecutor

log = logging.getLogger("refinery")


@dataclass
class RunResult:
    out: str
    ledger: Ledger
    seconds: float
    workers: int
    resumed: bool = False


def plan_shards(recipe: Recipe) -> list[Shard]:
    shards: list[Shard] = []
    for name, source in recipe.sources.items():
        for url, id_path in source.files():
            shards.append(Shard(len(shards), name, source.kind, url, id_path))
    if not shards:
        raise ConfigError(f"{recipe.path}: sources: no input files")
    return shards


def largest_first(shards: Sequence[Shard], sizes: Sequence[int]) -> list[Shard]:
    """Dispatch order for a phase: biggest input first (longest-processing-time-first), so a worker
    does not start a big shard while the others run out of work. Outputs are named by shard index,
    so the order changes nothing but the wall time."""
    order = sorted(range(len(shards)), key=lambda i: -sizes[i])
    return [shards[i] for i in order]


def _phase_input_bytes(out: str, prev_label: str | None, shard: Shard) -> int:
    """The bytes a shard reads in a phase: its source file (remote sizes are not looked up: 0),
    or its spill and bypass files of the previous barrier."""
    paths = ([shard.url.removeprefix("file://")] if prev_label is None
             else [spill_path(out, prev_label, shard), bypass_path(out, prev_label, shard)])
    total = 0
    for p in paths:
        if "://" not in p and os.path.exists(p):
            total += os.path.getsize(p)
    return total


# -- executors: in-process, or Ray -----------------------------------------------------------
class _Pool:
    """The run's workers: ShardWorker in-process, or one Ray actor per worker for the whole run.

    `map` runs shards (results in completion order); `executor` lends the same workers to global
    stages between phases, when they are idle, so a barrier needs no CPUs of its own and the
    actors (with their loaded models) live from the first phase to the last."""

    def __init__(self, worker_args: tuple, workers: int, use_ray: bool):
        self.use_ray = use_ray
        self.workers = workers
        if use_ray:
            import ray

            # A lost worker is restarted and its shard redone: shard work is idempotent (files are
            # written under temporary names and renamed when the shard is complete).
            remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=3)(ShardWorker)
            self.actors = [remote.remote(*worker_args) for _ in range(workers)]
            self.pool = ray.util.ActorPool(self.actors)
        else:
            self.local = ShardWorker(*worker_args)

    def map(self, phase: Phase, prev: Phase | None, shards: Sequence[Shard], decisions: dict[int, str | None]):
        if not self.use_ray:
            for s in shards:
                yield (s, *self.local.run_timed(phase, prev, s, decisions.get(s.index))[1:])
            return
        by_index = {s.index: s for s in shards}

        def submit(actor, s: Shard):
            return actor.run_timed.remote(phase, prev, s, decisions.get(s.index))

        from ray.exceptions import RayTaskError

        try:
            for idx, result, seconds in self.pool.map_unordered(submit, list(shards)):
                yield by_index[idx], result, seconds
        except RayTaskError as exc:  # surface the worker's own error (e.g. OSError: disk full)
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, BaseException) else exc) from None

    def executor(self) -> Executor:
        return _ActorExecutor(self) if self.use_ray else LocalExecutor()

    def close(self) -> None:
        if self.use_ray:
            import ray

            for a in self.actors:
                ray.kill(a)


class _ActorExecutor(Executor):
    """Parallel map for global stages on the run's actors; results in order."""

    def __init__(self, pool: _Pool):
        self._pool = pool
        self.cpu_seconds = 0.0  # spent on the actors, for the ledger's global-step time

    def map(self, fn, items):
        import ray

        fn_ref = ray.put(fn)
        out = []
        for result, cpu in self._pool.pool.map(lambda actor, x: actor.call.remote(fn_ref, x), list(items)):
            self.cpu_seconds += cpu
            out.append(result)
        return out

    @property
    def parallelism(self) -> int:
        return self._pool.workers


def init_ray(recipe: Recipe, address: str | None) -> int:
    """Start an embedded local Ray, or attach to a cluster; returns the CPUs available."""
    import ray

    address = address or recipe.ray.address or os.environ.get("RAY_ADDRESS")
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                  "log_to_driver": True}
        if address:
            ray.init(address=address, **kwargs)
        else:  # "local": a new embedded Ray, never some other job's cluster on this machine
            ray.init(address="local", num_cpus=recipe.ray.num_cpus, **kwargs)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- the run ----------------------------------------------------------------------------------
def run(
    recipe: Recipe,
    *,
    address: str | None = None,
    workers: int | None = None,
    use_ray: bool = True,
    overwrite: bool = False,
    progress: bool = True,
) -> RunResult:
    t0 = time.time()
    shards = plan_shards(recipe)
    stages = [spec.build() for spec in recipe.stages]
    labels = [spec.label for spec in recipe.stages]
    schema = full_schema(f for st in stages for f in st.signal_fields())
    phases = plan_phases(stages)
    out = recipe.output
    fp = state.fingerprint(recipe.raw, [(s.source, s.id_path) for s in shards])
    resumed = state.open_run(out, fp, recipe.path, overwrite)
    _setup_log_file(out)
    if resumed and os.path.exists(state.complete_marker(out)):
        log.info("run already complete: %s", out)
        return RunResult(out, Ledger.read(os.path.join(out, "ledger.json")), time.time() - t0, 0, resumed=True)
    if resumed:
        log.info("resuming the run in %s: removed %d partial files", out, state.sweep_partial(out))

    if use_ray:
        cpus = init_ray(recipe, address)
        n_workers = workers or recipe.ray.num_workers or cpus
    else:
        n_workers = 1
    log.info("%d shards, %d phases, %d worker(s)%s; set-up took %.1fs", len(shards), len(phases), n_workers,
             " (Ray)" if use_ray else "", time.time() - t0)
    ledger = Ledger([READ] + labels)
    pool = _Pool((recipe, schema), n_workers, use_ray)
    try:
        decisions: dict[int, str | None] = {}
        prev: Phase | None = None
        for phase in phases:
            names = ([READ] if prev is None else [labels[prev.barrier]]) + [labels[i] for i in phase.stages]  # type: ignore[index]
            if phase.barrier is not None:
                names.append(labels[phase.barrier] + " (keys)")
            done = {s.index: state.read_json(state.shard_record(out, phase.index, s.part)) for s in shards}
            for s in shards:
                if done[s.index] is not None:
                    ledger.merge(Ledger.from_dict(done[s.index]))
            todo = [s for s in shards if done[s.index] is None]
            prev_label = None if prev is None else labels[prev.barrier]  # type: ignore[index]
            todo = largest_first(todo, [_phase_input_bytes(out, prev_label, s) for s in todo])
            if todo:
                _run_phase(pool, phase, prev, todo, len(shards), decisions, ledger, " > ".join(names), progress)
            if phase.barrier is not None:
                t_res, cpu_res = time.time(), time.process_time()
                executor = pool.executor()
                decisions = _resolve(recipe, stages[phase.barrier], labels[phase.barrier], shards,
                                     executor, progress)
                ledger.add_global_step(labels[phase.barrier],
                                       time.process_time() - cpu_res + getattr(executor, "cpu_seconds", 0.0),
                                       time.time() - t_res)
                log.info("%s: global step took %.1fs", labels[phase.barrier], time.time() - t_res)
            prev = phase
    finally:
        pool.close()

    problems = ledger.check()
    ledger.write(os.path.join(out, "ledger.json"))
    write_shard_ledgers(out, shards, len(phases))
    if problems:
        raise RunError("ledger does not balance: " + "; ".join(problems))
    with open(os.path.join(out, "recipe.json"), "w", encoding="utf-8") as fh:
        json.dump(recipe.raw, fh, indent=2, default=str)
    if not recipe.keep_work:
        shutil.rmtree(os.path.join(out, "_work"), ignore_errors=True)
    atomic_write_json(state.complete_marker(out), {"seconds": time.time() - t0})
    return RunResult(out, ledger, time.time() - t0, n_workers, resumed=resumed)


def write_shard_ledgers(out: str, shards: Sequence[Shard], n_phases: int) -> None:
    """OUT/shards.jsonl: one line per input shard with its ledger over every phase, so the report
    projects from what the run wrote instead of reading the runner's private records."""
    tmp = os.path.join(out, "shards.jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for s in shards:
            led = Ledger()
            for p in range(n_phases):
                rec = state.read_json(state.shard_record(out, p, s.part))
                if rec is not None:
                    led.merge(Ledger.from_dict(rec))
            fh.write(json.dumps({"shard": s.index, "source": s.source, "file": s.id_path,
                                 "ledger": led.to_dict()}) + "\n")
    os.replace(tmp, os.path.join(out, "shards.jsonl"))


@contextlib.contextmanager
def stopping_ray():
    """Shut Ray down in the background while the block runs (the report): stopping the embedded
    Ray's processes is mostly waiting for them to exit, 1.5 to 2.5 s of idle wall time."""
    ray = sys.modules.get("ray")  # not imported: this run never started Ray
    if ray is None or not ray.is_initialized():
        yield
        return
    stopper = threading.Thread(target=ray.shutdown, name="ray-shutdown")
    stopper.start()
    try:
        yield
    finally:
        stopper.join()


def _run_phase(pool: _Pool, phase: Phase, prev: Phase | None, shards: list[Shard], total: int,
               decisions: dict[int, str | None], ledger: Ledger, desc: str, progress: bool) -> None:
    first = READ if prev is None else None
    docs = 0
    t0 = time.time()
    bar = tqdm(total=total, initial=total - len(shards), desc=desc, unit="shard", disable=not progress,
               dynamic_ncols=True)
    try:
        for shard, result, seconds in pool.map(phase, prev, shards, decisions):
            part = Ledger.from_dict(result)
            ledger.merge(part)
            stage = first or (part.stage_order[0] if part.stage_order else None)
            n = part.total(stage).docs_in if stage else 0
            docs += n
            bar.set_postfix_str(f"{docs / max(time.time() - t0, 1e-9):,.0f} docs/s")
            bar.update(1)
            log.info("phase %d: shard %d (%s %s) done: %d documents in, %.2fs of work", phase.index, shard.index,
                     shard.source, shard.id_path, n, seconds)
    finally:
        bar.close()
    log.info("phase %d: %d shards in %.1fs", phase.index, len(shards), time.time() - t0)


def _resolve(recipe: Recipe, stage: GlobalStage, label: str, shards: list[Shard], executor: Executor,
             progress: bool) -> dict[int, str | None]:
    """Run a global stage's barrier step; returns the decision file for each shard."""
    record = state.resolve_record(recipe.output, label)
    known = state.read_json(record)
    if known is not None:
        return {int(k): v for k, v in known.items()}
    spills = [spill_path(recipe.output, label, s) for s in shards]
    bar = tqdm(total=1, desc=f"{label} (global)", disable=not progress, dynamic_ncols=True)
    try:
        stage.ensure_setup()
        result = stage.resolve(spills, executor)
    finally:
        bar.update(1)
        bar.close()
    if isinstance(result, pa.Table):
        path = os.path.join(work_dir(recipe.output, label), "decisions.parquet")
        pq.write_table(result, path + ".tmp", compression="zstd")
        os.replace(path + ".tmp", path)
        decisions: dict[int, str | None] = {s.index: path for s in shards}
    else:
        files = list(result)
        if len(files) != len(shards):
            raise RunError(f"stage {label}: resolve returned {len(files)} decision files for {len(shards)} shards")
        decisions = {s.index: f for s, f in zip(shards, files)}
    atomic_write_json(record, decisions)
    return decisions


def _setup_log_file(out: str) -> None:
    handler = logging.FileHandler(os.path.join(out, "run.log"), encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for h in list(log.handlers):
        if isinstance(h, logging.FileHandler):
            log.removeHandler(h)
            h.close()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def summary_table(ledger: Ledger) -> str:
    """The end-of-run table: documents and bytes per stage, with the top rejection reasons."""
    rows = [("stage", "docs in", "kept", "rejected", "MB in", "MB kept", "top reasons")]
    for stage in ledger.stage_order:
        c = ledger.total(stage)
        top = sorted(c.rejected.items(), key=lambda kv: -kv[1][0])[:3]
        rows.append((
            stage, f"{c.docs_in:,}", f"{c.kept:,}", f"{c.rejected_docs:,}",
            f"{c.bytes_in / 1e6:.2f}", f"{c.kept_bytes / 1e6:.2f}",
            ", ".join(f"{r} {d}" for r, (d, _) in top),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(v.ljust(w) if i in (0, 6) else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
