"""Runs a recipe: plans shards and phases, fans shards out over Ray (or local processes), keeps the ledger.

Why Ray actors over shards rather than one Ray Data stream: each shard's output (kept, rejects
per stage, ledger) is committed as a unit, which makes the ledger exact per shard, the output
file names independent of the number of workers, and resuming a killed run a matter of skipping
completed shards. Actors hold the stages, so a model loads once per worker and phase. Memory per
worker is bounded by one batch per stage, since readers stream.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from pipeline import storage
from pipeline.dataset_card import write_dataset_card
from pipeline.engine import state
from pipeline.errors import ConfigError, RunError
from pipeline.engine import ray_tasks
from pipeline.engine.run_cpu import RunCpu, records_shard_cpu
from pipeline.engine.ledger import Ledger
from pipeline.engine.recipe import Recipe
from pipeline.schema import full_schema
from pipeline.engine.state import atomic_write_json
from pipeline.engine.worker import (READ, Part, Phase, Shard, ShardWorker, annotate_keys, bypass_name, keys_name,
                                    plan_phases, spill_name, spilled_keys, store_keys, work_dir)
from stages.base import Executor, GlobalStage, LocalExecutor

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


def plan_shards(recipe: Recipe) -> list[Shard]:
    """Every input file, in sorted order, as a shard. Files inside the output are never inputs
    (an output below an input glob's root is not read back on a rerun)."""
    shards: list[Shard] = []
    out = recipe.output
    for name, source in recipe.sources.items():
        seen: dict[str, str] = {}
        for url, id_path in source.files():
            if storage.inside(url, out):
                continue
            if id_path in seen:  # document ids and the `file` column come from id_path: they must differ
                if _same_file(seen[id_path], url):  # one file named twice (a.jsonl, ./a.jsonl): read once
                    continue
                raise ConfigError(
                    f"{recipe.path}: sources.{name}.paths: {seen[id_path]!r} and {url!r} are both {id_path!r} "
                    "below their input roots, so their documents would share ids; name a folder above both "
                    "(a directory or glob) so their paths below it differ, or put them in two sources")
            seen[id_path] = url
            shards.append(Shard(len(shards), name, source.kind, url, id_path))
    if not shards:
        raise ConfigError(f"{recipe.path}: sources: no input files")
    return shards


def _same_file(a: str, b: str) -> bool:
    if storage.is_url(a) or storage.is_url(b):
        return storage.normalize(a) == storage.normalize(b)
    return os.path.realpath(a) == os.path.realpath(b)


def _glob_root(pattern: str) -> str:
    """The directory before a pattern's first glob character (the pattern itself when it has none)."""
    if not any(c in pattern for c in "*?["):
        return pattern
    head = pattern[: min(pattern.index(c) for c in "*?[" if c in pattern)]
    return head.rsplit("/", 1)[0] if "/" in head else "."


def check_output_apart(recipe: Recipe) -> None:
    """Refuse an output that is, contains or lies inside an input (a directory walked as input, or
    an input file or glob root): writing there would mix outputs into inputs, and --overwrite would
    delete inputs. (An output below a glob's root is allowed: its files are never inputs.)"""
    out = recipe.output
    for name, source in recipe.sources.items():
        for j, pattern in enumerate(source.config.paths):
            where = f"sources.{name}.paths[{j}] ({pattern!r})"
            if storage.inside(_glob_root(pattern), out):
                raise ConfigError(f"{recipe.path}: output: {out!r} contains the input {where}; "
                                  "choose an output outside the inputs")
            if _glob_root(pattern) == pattern and storage.inside(out, pattern):
                raise ConfigError(f"{recipe.path}: output: {out!r} is inside the input {where}; "
                                  "choose an output outside the inputs")


def input_stamps(shards: Sequence[Shard]) -> dict[str, str]:
    """source:file -> size and mtime (ETag on object stores), for the resume fingerprint."""
    out = {}
    for s in shards:
        try:
            out[f"{s.source}:{s.id_path}"] = storage.stamp(s.url)
        except (OSError, ValueError):
            out[f"{s.source}:{s.id_path}"] = "unreadable"
    return out


def stamp_size(stamp: str) -> int:
    """The size in an input stamp (0 when unknown)."""
    m = re.match(r"size=(\d+)", stamp)
    return int(m.group(1)) if m else 0


def plan_parts(shards: Sequence[Shard], sizes: Sequence[int], target_bytes: int, most_shards: int) -> list[Part]:
    """Consecutive shards of one source, joined into parts of at most `target_bytes` of input and
    `most_shards` shards (a shard larger than the target is a part of its own). Why by bytes: a
    part's cost is its input plus a fixed cost (a task, its writers, its record, its files in every
    later step), so small files are joined until the fixed cost is small beside the work, while
    large files stay one part each and the work still spreads over every worker."""
    parts: list[Part] = []
    cur: list[Shard] = []
    cur_bytes = 0
    for s, b in zip(shards, sizes):
        if cur and (s.source != cur[0].source or cur_bytes + b > target_bytes or len(cur) >= most_shards):
            parts.append(Part(tuple(cur)))
            cur, cur_bytes = [], 0
        cur.append(s)
        cur_bytes += b
    if cur:
        parts.append(Part(tuple(cur)))
    return parts


PARTS_PER_WORKER = 4  # parts per worker when files are small: enough to balance, few enough to be cheap
MOST_PART_BYTES = 256 << 20  # input bytes of a part of small files: a redone part costs at most this


def part_limits(sizes: Sequence[int], workers: int) -> tuple[int, int]:
    """(target bytes, most shards) of a part for a run of these input sizes on `workers` workers:
    about PARTS_PER_WORKER parts per worker, each at most MOST_PART_BYTES; when sizes are unknown
    (0), by count alone."""
    n = max(1, workers * PARTS_PER_WORKER)
    target = min(MOST_PART_BYTES, max(1, -(-sum(sizes) // n)))
    return target, max(1, -(-len(sizes) // n))


def largest_first(shards: Sequence[Shard], sizes: Sequence[int]) -> list[Shard]:
    """Dispatch order for a phase: biggest input first (longest-processing-time-first), so a worker
    does not start a big shard while the others run out of work. Outputs are named by shard index,
    so the order changes nothing but the wall time."""
    order = sorted(range(len(shards)), key=lambda i: -sizes[i])
    return [shards[i] for i in order]


def _phase_input_bytes(out: str, prev_label: str | None, shard: Shard, files: dict[str, str] | None = None) -> int:
    """The bytes a shard reads in a phase: its local source file (remote sizes are not looked up:
    0), or its spill and bypass files of the previous barrier (local outputs only)."""
    if prev_label is None:
        paths = [storage.normalize(shard.url)]
    else:
        files = files or {}
        paths = [storage.join(out, files[n]) for n in (spill_name(prev_label, shard), bypass_name(prev_label, shard))
                 if n in files]
    total = 0
    for p in paths:
        if not storage.is_url(p) and os.path.exists(p):
            total += os.path.getsize(p)
    return total


# -- executors: in-process, or Ray -----------------------------------------------------------
def chunks(shards: list[Part], workers: int, per_worker: int = 8, most: int = 32) -> list[list[Part]]:
    """Parts in consecutive groups, one Ray call each. Why: each call costs the driver about a
    millisecond of CPU and a round trip, which counts when there are many parts (a crawl of 90,000
    large files is 90,000 parts); each part in a group still commits on its own. Groups stay small
    enough that every worker gets about `per_worker` of them, so the load still balances (largest
    first)."""
    size = max(1, min(most, len(shards) // max(1, workers * per_worker)))
    return [shards[i:i + size] for i in range(0, len(shards), size)]


class _Pool:
    """The run's workers: ShardWorker in-process, one Ray actor per worker, or one local process
    per worker (pipeline/engine/processes.py), each for the whole run.

    `map` runs shards (results in completion order); `executor` lends the same workers to global
    stages between phases, when they are idle, so a barrier needs no CPUs of its own and the
    workers (with their loaded models) live from the first phase to the last."""

    def __init__(self, worker_args: tuple, workers: int, use_ray: bool, processes: bool = False):
        self.use_ray = use_ray
        self.processes = processes
        self.workers = workers
        if processes:
            import functools

            from pipeline.engine.processes import ProcessPool

            self.procs = ProcessPool(functools.partial(ShardWorker, *worker_args), workers)
        elif use_ray:
            import ray

            # A lost worker is restarted and its shard redone: shard work is idempotent (each attempt
            # writes files of its own; the shard's record names the winner's, see state.py).
            remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=3)(ShardWorker)
            self.actors = [remote.remote(*worker_args) for _ in range(workers)]
            self.pool = ray.util.ActorPool(self.actors)
        else:
            self.local = ShardWorker(*worker_args)

    def map(self, phase: Phase, prev: Phase | None, shards: Sequence[Part], decisions: dict[int, list[str | None]],
            prev_files: dict[int, dict[str, str]]):
        if not self.use_ray and not self.processes:
            for s in shards:
                yield (s, *self.local.run_timed(phase, prev, s, decisions.get(s.index), prev_files.get(s.index))[1:])
            return
        by_index = {s.index: s for s in shards}

        def items(chunk: list[Part]) -> list:
            return [(s, decisions.get(s.index), prev_files.get(s.index)) for s in chunk]

        groups = chunks(list(shards), self.workers)
        if self.processes:
            for _, results in self.procs.imap_unordered([("run_many", (phase, prev, items(c))) for c in groups]):
                for idx, result, seconds in results:
                    yield by_index[idx], result, seconds
            return

        def submit(actor, chunk: list[Part]):
            return actor.run_many.remote(phase, prev, items(chunk))

        with _workers_own_errors():
            for _, results in ray_tasks.map_unordered(self.actors, submit, groups):  # survives a lost node
                for idx, result, seconds in results:
                    yield by_index[idx], result, seconds

    def executor(self) -> Executor:
        if self.processes:
            return _ProcessExecutor(self)
        return _ActorExecutor(self) if self.use_ray else LocalExecutor()

    def waves(self, items: list) -> list[tuple[dict, float]]:
        """`ShardWorker.wave_timed` for each item, on the run's workers (their stages are set up
        once), results in order."""
        if self.processes:
            return self.procs.map([("wave_timed", (x,)) for x in items])
        if not self.use_ray:
            return [self.local.wave_timed(x) for x in items]
        with _workers_own_errors():
            return ray_tasks.map_ordered(self.actors, lambda actor, x: actor.wave_timed.remote(x), list(items))

    def close(self) -> None:
        if self.processes:
            self.procs.close()  # each process's stages' child ends with it
        elif self.use_ray:
            import ray

            for a in self.actors:
                ray.kill(a)  # its stages' child ends with it (its pipe closes)
        else:
            self.local.close()


@contextlib.contextmanager
def _workers_own_errors():
    """Raise a failed actor task's own error (e.g. OSError: disk full), not Ray's wrapper of it."""
    from ray.exceptions import RayTaskError

    try:
        yield
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, BaseException) else exc) from None


class _ActorExecutor(Executor):
    """Parallel map for global stages on the run's actors; results in order."""

    def __init__(self, pool: _Pool):
        self._pool = pool
        self.cpu_seconds = 0.0  # spent on the actors, for the ledger's global-step time

    def map(self, fn, items):
        import ray

        fn_ref = ray.put(fn)
        with _workers_own_errors():
            return self._booked(ray_tasks.map_ordered(self._pool.actors, lambda actor, x: actor.call.remote(fn_ref, x),
                                                      list(items)))

    def _booked(self, answers) -> list:
        """The results of (result, CPU seconds) answers, in order; their CPU booked."""
        out = []
        for result, cpu in answers:
            self.cpu_seconds += cpu
            out.append(result)
        return out

    @property
    def parallelism(self) -> int:
        return self._pool.workers


class _ProcessExecutor(_ActorExecutor):
    """The same on the run's local worker processes (`--processes`)."""

    def map(self, fn, items):
        return self._booked(self._pool.procs.map([("call", (fn, x)) for x in items]))


@contextlib.contextmanager
def _lean_head():
    """While an embedded Ray starts: no dashboard head and no autoscaler monitor. Why: with
    `include_dashboard=False` Ray still starts the dashboard head process (only its usage-stats
    module, and usage stats are off in ray.init) and waits for it, and a one-node embedded Ray has
    nothing to autoscale; together they cost about 1 CPU-s at start, a second of start-up and of
    shutdown, and CPU that the workers lose all run long (BENCHMARKS.md, "Scaling (item 6)").
    Nothing of refinery talks to either. Ray's private Node methods: where a Ray version lacks
    them, Ray starts as it always did."""
    try:
        from ray._private.node import Node
    except ImportError:
        yield
        return
    saved = {n: Node.__dict__[n] for n in ("start_api_server", "start_monitor") if n in Node.__dict__}
    if len(saved) < 2:
        yield
        return
    Node.start_api_server = lambda self, *a, **k: None  # type: ignore[method-assign]
    Node.start_monitor = lambda self, *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(Node, n, f)


def init_ray(recipe: Recipe, address: str | None) -> int:
    """Start an embedded local Ray, or attach to a cluster; returns the CPUs available."""
    import ray

    address = address or recipe.ray.address or os.environ.get("RAY_ADDRESS")
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                  "log_to_driver": True}
        main = threading.current_thread() is threading.main_thread()
        on_term = signal.getsignal(signal.SIGTERM) if main else None
        if address:
            ray.init(address=address, **kwargs)
        else:  # "local": a new embedded Ray, never some other job's cluster on this machine
            # No metrics: nothing reads them in an embedded Ray (no dashboard), and exporting them
            # costs its agent and every worker CPU all run long (BENCHMARKS.md, "Where refinery's CPU goes at 50 MB").
            with _lean_head():
                ray.init(address="local", num_cpus=recipe.ray.num_cpus,
                         _system_config={"enable_metrics_collection": False}, **kwargs)
        if callable(on_term):  # ray.init puts its native handler first, which dumps a stack on SIGTERM
            signal.signal(signal.SIGTERM, on_term)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- the run ----------------------------------------------------------------------------------
# Below this many bytes of local input, an embedded Ray costs more than it saves: starting and
# stopping Ray alone is about 5 CPU-s (GCS, raylet, dashboard and runtime-env agents, log monitor;
# BENCHMARKS.md, "Start-up"), and each actor loads the models again (~1.5 CPU-s), while 4 MiB of
# JSONL text is a few CPU-seconds of work in one process.
SMALL_INPUT_BYTES = 4 << 20


def small_local_input(recipe: Recipe, shards: Sequence[Shard], address: str | None) -> bool:
    """True for a run that would start its own Ray (no --address, recipe address, RAY_ADDRESS or
    running Ray in this process) on local input files of under SMALL_INPUT_BYTES in all, with a
    local output."""
    if address or recipe.ray.address or os.environ.get("RAY_ADDRESS"):
        return False
    if storage.is_url(recipe.output):
        return False  # object-store output: keep the path that is tested against real clusters
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return False
    total = 0
    for s in shards:
        path = storage.normalize(s.url)
        if storage.is_url(path):
            return False  # size unknown without a listing call: keep Ray
        try:
            total += os.path.getsize(path)
        except OSError:
            continue  # unreadable entries become reject rows; they cost nothing to run
        if total >= SMALL_INPUT_BYTES:
            return False
    return True


def run(
    recipe: Recipe,
    *,
    address: str | None = None,
    workers: int | None = None,
    use_ray: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    ray_for_small_input: bool = True,
    processes: bool = False,
) -> RunResult:
    """Run a recipe. `ray_for_small_input=False` (the CLI's default) runs a small local input in
    this process instead of starting an embedded Ray (`small_local_input`): the same kept documents,
    for a fraction of the start-up. `processes`: the workers are local processes, without Ray
    (pipeline/engine/processes.py): the same kept documents, without Ray's start, stop and daemons;
    not with `address` (a cluster is Ray's) nor `use_ray=False`."""
    t0 = time.time()
    run_cpu = RunCpu()
    if processes and address:
        raise ConfigError("--processes runs the workers on this machine without Ray; --address attaches to a Ray"
                          " cluster: choose one")
    if processes and not use_ray:
        raise ConfigError("--processes and --no-ray: choose one (--no-ray runs everything in this process)")
    recipe.output = out = storage.absolute(recipe.output)
    check_output_apart(recipe)
    shards = plan_shards(recipe)
    if use_ray and not processes and not ray_for_small_input and small_local_input(recipe, shards, address):
        use_ray = False
        log.info("small local input (under %d MiB): running in this process, without Ray (--ray to start one)",
                 SMALL_INPUT_BYTES >> 20)
        if progress:
            print(f"small local input (under {SMALL_INPUT_BYTES >> 20} MiB): running in this process without Ray"
                  " (--ray to start one)", file=sys.stderr)
    stages = [spec.build() for spec in recipe.stages]
    labels = [spec.label for spec in recipe.stages]
    schema = full_schema(f for st in stages for f in st.signal_fields())
    phases = plan_phases(stages, group=recipe.group_global_stages)
    stamps = input_stamps(shards)
    shards = [dataclasses.replace(s, size=stamp_size(stamps[f"{s.source}:{s.id_path}"])) for s in shards]
    fp = state.fingerprint_inputs(recipe.raw, stamps)
    lock = state.RunLock(out, recipe.path)
    resumed = state.open_run(out, fp, recipe.path, overwrite, lock=lock)
    try:
        return _run_locked(recipe, shards, stages, labels, schema, phases, resumed, t0,
                           address=address, workers=workers, use_ray=use_ray and not processes,
                           processes=processes, progress=progress, run_cpu=run_cpu)
    finally:
        lock.release()


def _read_records(out: str, phases: Sequence[Phase], shards: Sequence[Shard]) -> list[dict[int, dict]]:
    """Per phase, the records of finished parts, by part index (read once: the snapshot the run
    trusts). A record lists the shards its part covers (records of older runs: their own shard).
    Phase 0's records must cover disjoint shards (an overlapping one, which only a stray attempt
    of a killed driver could write, is ignored and its files swept); a later phase's record counts
    only for a part of exactly the same shards."""
    from concurrent.futures import ThreadPoolExecutor

    found: list[dict[int, dict]] = []
    for phase in phases:
        d = storage.join(out, state.STATE, f"p{phase.index}")
        names = [n for n in storage.listdir(d) if re.fullmatch(r"part-(\d+)\.json", n)]
        with ThreadPoolExecutor(16 if storage.is_url(out) else 1) as pool:  # an object store: GETs overlap
            read = list(pool.map(lambda n: state.read_json(storage.join(d, n)), names))
        recs: dict[int, dict] = {}
        for name, rec in zip(names, read):
            m = re.fullmatch(r"part-(\d+)\.json", name)
            assert m is not None
            if not (isinstance(rec, dict) and isinstance(rec.get("files"), dict)):
                continue
            rec.setdefault("shards", [int(m.group(1))])
            if rec["shards"] and rec["shards"][0] == int(m.group(1)):
                recs[int(m.group(1))] = rec
        found.append(recs)
    n = len(shards)
    covered: set[int] = set()
    first = {}
    for idx in sorted(found[0] if found else {}):
        cover = found[0][idx]["shards"]
        if all(isinstance(i, int) and 0 <= i < n and i not in covered for i in cover):
            covered.update(cover)
            first[idx] = found[0][idx]
    if found:
        found[0] = first
    for k in range(1, len(found)):
        found[k] = {i: r for i, r in found[k].items() if i in found[k - 1] and r["shards"] == found[k - 1][i]["shards"]}
    return found


def _run_locked(recipe: Recipe, shards: list[Shard], stages: list, labels: list[str], schema: pa.Schema,
                phases: list[Phase], resumed: bool, t0: float, *, address: str | None, workers: int | None,
                use_ray: bool, progress: bool, processes: bool = False, run_cpu: RunCpu | None = None) -> RunResult:
    out = recipe.output
    run_cpu = run_cpu or RunCpu()
    _setup_log_file(out)
    if resumed and storage.exists(state.complete_marker(out)):
        log.info("run already complete: %s", out)
        if not recipe.keep_work:  # left by a run killed between its manifest and this clean-up
            storage.rmtree(storage.join(out, "_work"))
        return RunResult(out, Ledger.from_dict(storage.read_json(storage.join(out, "ledger.json"))),
                         time.time() - t0, 0, resumed=True, used_ray=use_ray, complete=True)
    records = _read_records(out, phases, shards) if resumed else [{} for _ in phases]
    if resumed:
        committed = {f for recs in records for r in recs.values() for f in r["files"].values()}
        committed |= _stored_key_files(out, labels)
        log.info("resuming the run in %s: removed %d uncommitted files", out,
                 state.sweep_uncommitted(out, committed))

    t_ray = time.time()
    if use_ray:
        cpus = init_ray(recipe, address)
        n_workers = workers or recipe.ray.num_workers or cpus
    elif processes:
        n_workers = workers or recipe.ray.num_workers or recipe.ray.num_cpus or len(os.sched_getaffinity(0))
    else:
        n_workers = 1
    log.info("%d shards, %d phases, %d worker(s)%s; set-up took %.1fs", len(shards), len(phases), n_workers,
             f" (Ray, {time.time() - t_ray:.1f}s of it to start or attach)" if use_ray else
             " (local processes)" if processes else "", time.time() - t0)
    parts = _plan_run_parts(shards, records[0], n_workers)
    part_ledgers = PartLedgers()
    log.info("%d shards in %d parts", len(shards), len(parts))
    ledger = Ledger([READ] + labels)
    for label, st in zip(labels, stages):
        if st.params():
            ledger.params[label] = st.params()
            log.info("%s: %s", label, json.dumps(st.params()))
            if progress:
                print(f"{label}: {json.dumps(st.params())}", file=sys.stderr)
    pool = _Pool((recipe, schema, os.getcwd()), n_workers, use_ray, processes)
    try:
        decisions: dict[int, list[str | None]] = {}
        prev: Phase | None = None
        for phase in phases:
            names = ([READ] if prev is None else [labels[i] for i in prev.group]) + [labels[i] for i in phase.stages]
            if phase.group:
                names.append(" + ".join(labels[i] for i in phase.group) + " (keys)")
            done = records[phase.index]
            for p in parts:
                if p.index in done:
                    ledger.merge(part_ledgers.add(p.index, done[p.index]))
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
                decisions = {p.index: [] for p in parts}
                eager = spilled_keys(stages, phase.group)
                decided: list[int] = []  # the members with an entry in decisions, in recipe order
                mids: list[int] = []  # per-document members not yet run (in the wave before the next global one)
                for i in phase.group:  # in recipe order, each on the survivors of the ones before
                    if not stages[i].needs_all_documents:
                        mids.append(i)
                        continue
                    t_res, cpu_res = time.time(), time.process_time()
                    executor = pool.executor()
                    srcs, overlays, wave_cpu = spills, None, 0.0
                    if any(not stages[j].needs_all_documents for j in decided + mids):  # keys on the current text
                        entries, overlays, wave_cpu = _wave(recipe, pool, labels, decided, mids, i, parts, spills,
                                                            decisions)
                        for m in mids:
                            for p in parts:
                                decisions[p.index].append(entries[m][p.index])
                        decided += mids
                        mids = []
                        srcs = [overlays[p.index] for p in parts]
                    stages[i].dropped_before = ([[_decision_file(e) for e in decisions[p.index] if e is not None]
                                                 for p in parts] if decided else None)
                    stages[i].key_files = None
                    mine = _resolve(recipe, stages[i], labels[i], parts, srcs, executor, progress,
                                    keys=overlays is None and i not in eager)
                    _store_keys(recipe, stages[i], labels[i], parts, srcs, executor)
                    for p in parts:
                        decisions[p.index].append(mine[p.index] if overlays is None else
                                                  {"file": mine[p.index], "overlay": overlays[p.index]})
                    decided.append(i)
                    ledger.add_global_step(labels[i],
                                           time.process_time() - cpu_res + getattr(executor, "cpu_seconds", 0.0)
                                           + wave_cpu, time.time() - t_res, time.process_time() - cpu_res)
                    log.info("%s: global step took %.1fs %s", labels[i], time.time() - t_res,
                             json.dumps(getattr(stages[i], "stats", {})))
            prev = phase
    finally:
        pool.close()

    run_cpu.book(ledger, records_shard_cpu(records), in_process=not use_ray and not processes,
                 own_ray=use_ray and not address)
    problems = ledger.check()
    storage.write_text(storage.join(out, "ledger.json"), json.dumps(ledger.to_dict(), indent=2) + "\n")
    write_shard_ledgers(out, parts, part_ledgers)
    part_ledgers.close()
    if problems:
        raise RunError("ledger does not balance: " + "; ".join(problems))
    storage.write_text(storage.join(out, "recipe.json"), json.dumps(recipe.raw, indent=2, default=str))
    committed = {f for recs in records for r in recs.values() for f in r["files"].values()}
    committed |= _stored_key_files(out, labels)
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
    return RunResult(out, ledger, time.time() - t0, n_workers, resumed=resumed, used_ray=use_ray)


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


@contextlib.contextmanager
def stopping_ray():
    """Shut Ray down in the background while the block runs (the report): stopping the embedded
    Ray's processes is mostly waiting for them to exit, 1.5 to 2.5 s of idle wall time."""
    ray = sys.modules.get("ray")  # not imported: this run never started Ray
    if ray is None or not ray.is_initialized():
        yield
        return
    took = {}

    def stop() -> None:
        t = time.time()
        ray.shutdown()
        took["stop"] = time.time() - t

    stopper = threading.Thread(target=stop, name="ray-shutdown")
    stopper.start()
    t0 = time.time()
    try:
        yield
    finally:
        block = time.time() - t0
        stopper.join()
        log.info("Ray stopped in %.1fs, beside %.1fs of the run's last step; waited %.1fs for it",
                 took.get("stop", 0.0), block, time.time() - t0 - block)


def _run_phase(pool: _Pool, phase: Phase, prev: Phase | None, parts: list[Part], total: int,
               decisions: dict[int, list[str | None]], prev_files: dict[int, dict[str, str]], ledger: Ledger,
               done: dict[int, dict], part_ledgers: PartLedgers, desc: str, progress: bool) -> None:
    first = READ if prev is None else None
    docs = 0
    t0 = time.time()
    n_shards = sum(len(p.shards) for p in parts)
    bar = tqdm(total=total, initial=total - n_shards, desc=desc, unit="shard", disable=not progress,
               dynamic_ncols=True)
    try:
        for part, result, seconds in pool.map(phase, prev, parts, decisions, prev_files):
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


def _keys_record(out: str, label: str) -> str:
    return storage.join(out, state.STATE, f"keys-{label}.json")


def _stored_key_files(out: str, labels: Sequence[str]) -> set[str]:
    """The `keys/` files the run stored (their records), so they count as committed."""
    files: set[str] = set()
    for label in labels:
        files.update(state.read_json(_keys_record(out, label)) or [])
    return files


def _store_keys(recipe: Recipe, stage: GlobalStage, label: str, parts: list[Part], spills: list[str],
                executor: Executor) -> None:
    """Keep a global stage's private keys (MinHash band keys) of every document that reached it in
    OUT/keys/<label>/, one file per part, listed by _SUCCESS: `refinery retune` re-resolves the
    stage from them instead of recomputing them. A later member's keys wave writes them there
    itself (`_keys_wave`: nothing to do here); otherwise they are copied from the spill (the
    group's first member) or the overlay (a member after a per-document one). A run resumed past
    the resolve has neither and stores none; retune then recomputes them."""
    names = [f.name for f in stage.spill_fields()]
    if not names or state.read_json(_keys_record(recipe.output, label)) is not None:
        return
    srcs = stage.key_files or spills
    if not srcs or any(n not in storage.read_parquet_schema(srcs[0]).names for n in names):
        return
    rel = [keys_name(label, p) for p in parts]
    executor.map(store_keys, [(src, storage.join(recipe.output, r), names) for src, r in zip(srcs, rel)])
    atomic_write_json(_keys_record(recipe.output, label), rel)


def _keys_wave(recipe: Recipe, stage: GlobalStage, label: str, parts: list[Part], spills: list[str],
               executor: Executor) -> None:
    """The keys of a later member of a barrier group, for the rows the earlier members kept
    (`annotate_keys`): written once, straight to the stored keys (OUT/keys/<label>/, same rows as
    the spill, null where an earlier member dropped the document), which the stage resolves from
    and `refinery retune` reuses. Recorded once written, so a resumed run reuses them."""
    names = [f.name for f in stage.spill_fields()]
    record = _keys_record(recipe.output, label)
    stored = state.read_json(record) if names else None
    if isinstance(stored, list) and len(stored) == len(spills):
        stage.key_files = [storage.join(recipe.output, r) for r in stored]
        return
    rel = [keys_name(label, p) for p in parts] if names else None
    stage.key_files = ([storage.join(recipe.output, r) for r in rel] if rel else
                       [storage.join(stage.work_url, "keys", f"f{j}.parquet") for j in range(len(spills))])
    step = max(s.config.batch_size for s in recipe.sources.values())
    before = stage.dropped_before or [[] for _ in spills]
    executor.map(annotate_keys, [(stage, sp, before[j], stage.key_files[j], step) for j, sp in enumerate(spills)])
    if rel:
        atomic_write_json(record, rel)


def _decision_file(entry: "str | dict") -> str:
    return entry if isinstance(entry, str) else entry["file"]


def _wave(recipe: Recipe, pool: _Pool, labels: list[str], decided: list[int], mids: list[int], nxt: int,
          parts: list[Part], spills: list[str], decisions: dict[int, list]) -> tuple[dict, dict, float]:
    """The wave before the global member `nxt` of a barrier group that follows a per-document
    member (`ShardWorker.wave`, one task per part on the run's workers): the per-document members
    `mids` run over the group's one spill, and `nxt`'s keys are computed on their survivors.
    Recorded (`_state/wave-LABEL.json`) before `nxt` resolves, so a run killed after it resumes
    with its files. Returns (per mid member, per part: its decision entry or None where it does not
    apply), per part: the overlay `nxt` resolves on, and the global step's CPU seconds (the
    members' own work is booked per part, by the barrier read)."""
    record = storage.join(recipe.output, state.STATE, f"wave-{labels[nxt]}.json")
    known = state.read_json(record)
    cpu = 0.0
    if known is None:
        base = storage.join(work_dir(recipe.output, labels[nxt]), f"wave-{state.new_attempt()}")
        step = max(s.config.batch_size for s in recipe.sources.values())
        items = [(p.source, p.kind, sp, list(decided), list(decisions[p.index]), list(mids), nxt,
                  {"mids": {str(m): storage.join(base, f"{labels[m]}-{p.part}") for m in mids},
                   "overlay": storage.join(base, f"overlay-{p.part}")}, step)
                 for p, sp in zip(parts, spills)]
        results = pool.waves(items)
        known = {str(p.index): r for p, (r, _) in zip(parts, results)}
        cpu = sum(c for _, c in results) - sum(e["cpu"] for r, _ in results for e in r["mids"].values() if e)
        atomic_write_json(record, known)
    entries = {m: {p.index: known[str(p.index)]["mids"][str(m)] for p in parts} for m in mids}
    return entries, {p.index: known[str(p.index)]["overlay"] for p in parts}, cpu


def _resolve(recipe: Recipe, stage: GlobalStage, label: str, parts: list[Part], spills: list[str],
             executor: Executor, progress: bool, keys: bool = False) -> dict[int, str | None]:
    """Run a global stage's barrier step; returns the decision file for each part (by its index).
    `keys`: first compute the stage's keys for the rows the earlier members of its group kept."""
    record = state.resolve_record(recipe.output, label)
    known = state.read_json(record)
    if known is not None:
        return {int(k): v for k, v in known.items()}
    # A fresh work location per attempt under the output: every worker reaches it, and a killed
    # attempt's intermediates are never mistaken for this one's (the whole _work goes at the end).
    stage.work_url = storage.join(work_dir(recipe.output, label), f"resolve-{state.new_attempt()}")
    storage.makedirs(stage.work_url)
    bar = tqdm(total=1, desc=f"{label} (global)", disable=not progress, dynamic_ncols=True)
    try:
        stage.ensure_setup()
        if keys:
            _keys_wave(recipe, stage, label, parts, spills, executor)
        result = stage.resolve(spills, executor)
    finally:
        bar.update(1)
        bar.close()
    if isinstance(result, pa.Table):
        path = storage.join(stage.work_url, "decisions.parquet")
        storage.write_parquet(path, result)
        decisions: dict[int, str | None] = {p.index: path for p in parts}
    else:
        files = list(result)
        if len(files) != len(parts):
            raise RunError(f"stage {label}: resolve returned {len(files)} decision files for {len(parts)} spill files")
        decisions = {p.index: storage.absolute(f) for p, f in zip(parts, files)}
    atomic_write_json(record, decisions)
    return decisions


class _UploadingLogHandler(logging.Handler):
    """run.log on an object store: lines are kept in memory and the object rewritten at most every
    few seconds and when the run ends (an object cannot be appended to)."""

    def __init__(self, url: str, every: float = 5.0):
        super().__init__()
        self.url, self.every, self.lines, self.last = url, every, [], 0.0
        prev = storage.read_bytes(url).decode("utf-8", "replace") if storage.exists(url) else ""
        self.lines = [prev] if prev else []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + "\n")
        if time.time() - self.last > self.every:
            self.flush()

    def flush(self) -> None:
        try:
            storage.write_text(self.url, "".join(self.lines))
            self.last = time.time()
        except Exception:
            pass

    def close(self) -> None:
        self.flush()
        super().close()


def _setup_log_file(out: str) -> None:
    path = storage.join(out, "run.log")
    handler: logging.Handler = (_UploadingLogHandler(path) if storage.is_url(out)
                                else logging.FileHandler(path, encoding="utf-8", errors="backslashreplace"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for h in list(log.handlers):
        if isinstance(h, (logging.FileHandler, _UploadingLogHandler)):
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
