"""Barrier groups: the machinery between phases, apart from the per-part path.

At a barrier the stages' global members decide over every surviving document (docs/dedup.md):
    spill              each part's survivors, with the keys of the members that compute them in the
                       phase before (`spilled_keys`), at `_work/LABEL/part-N` (`spill_name`); documents
                       the group's stages skip go to a bypass file (`bypass_name`)
    waves              a global member whose keys are not in the spill gets them in a wave over the
                       spill, per part (`run_wave`, `ShardWorker.wave`): the per-document members
                       before it run there, writing decision files, and its keys are computed on
                       their survivors, in an overlay of the spill it resolves on
    dropped_before     each later member is given the decision files of the earlier ones and treats
                       the rows they drop as absent
    resolve            `resolve_stage`: the stage's `resolve` on the pool's idle workers; one decision
                       file per part
    stored keys        `store_stage_keys`: a member's private keys under OUT/keys/LABEL (`keys_name`),
                       committed, for `refinery retune` (pipeline/engine/reresolve.py)
The next phase reads the spill back with the decisions applied (`ShardWorker._read_barrier`).
"""
from __future__ import annotations

import json
import logging
import time
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from pipeline import storage
from pipeline.engine import state
from pipeline.engine.ledger import Ledger
from pipeline.engine.planning import Part
from pipeline.engine.pool import WorkerPool
from pipeline.engine.recipe import Recipe
from pipeline.engine.state import new_attempt
from pipeline.errors import RunError
from stages._arrow import flat
from stages.base import Executor, GlobalStage, Stage

log = logging.getLogger("refinery")


def spilled_keys(stages: list[Stage], group: list[int]) -> list[int]:
    """The members whose keys go into the group's spill (computed in the phase before the barrier):
    the first one, and any whose keys are also signals (exact dedup's `text_hash`), up to the first
    per-document member. The others (`keys_private`: MinHash bands, line hashes; and every global
    member after a per-document one) are computed after the earlier members resolved, for their
    survivors only (`run_wave`), so no MinHash is spent on exact duplicates."""
    out = []
    for j, i in enumerate(group):
        if not stages[i].needs_all_documents:
            break
        if j == 0 or not getattr(stages[i], "keys_private", False):
            out.append(i)
    return out


def scatter(vals: pa.Array | pa.ChunkedArray, pos: np.ndarray, n: int, typ: pa.DataType) -> pa.Array:
    """`vals` (one per live row, at positions `pos` of a batch of `n` rows) spread over the batch's
    rows, null elsewhere: decisions and keys keep the spill's rows and order."""
    vals = flat(vals)
    if len(pos) == 0:
        return pa.nulls(n, typ)
    at = np.full(n, -1, dtype=np.int64)
    at[pos] = np.arange(len(pos))
    return vals.take(pa.array(np.where(at >= 0, at, 0), mask=at < 0)).cast(typ)


def scatter_fields(table: pa.Table, fields: list[pa.Field], pos: np.ndarray, n: int) -> list[pa.Array]:
    """`scatter` of each field's column of `table` (null where the table lacks it)."""
    return [scatter(table.column(f.name) if f.name in table.column_names else pa.nulls(len(pos), f.type),
                     pos, n, f.type) for f in fields]


def work_dir(out: str, label: str) -> str:
    return storage.join(out, "_work", label)


def spill_name(label: str, shard: Part) -> str:
    """A shard's spill before the barrier `label`, relative to OUT (its logical name; the file
    written carries the attempt id, see ShardOutputs)."""
    return f"_work/{label}/{shard.part}"


def keys_name(label: str, shard: Part) -> str:
    """One attempt's file of a shard's stored keys of the global stage `label` (`id` + its
    `spill_fields`, e.g. MinHash band keys), relative to OUT: a committed output kept after the run
    (not under _work), so `refinery retune` can re-resolve the stage without recomputing them."""
    return f"keys/{label}/{shard.part.removesuffix('.parquet')}-{new_attempt()}.parquet"


def store_keys(args) -> str:
    """One part's stored keys of a global stage: `id` and the stage's `spill_fields` of every row
    that reached the stage (rows an earlier member of its group dropped have null keys), read from
    the spill or the stage's key file, written to `dest` (`keys/<label>/part-N-<attempt>.parquet`).
    Runs as an executor task after the stage's resolve; returns `dest`."""
    src, dest, names = args
    t = storage.read_parquet(src, columns=["id"] + names)
    if names and t.num_rows:
        t = t.filter(pc.is_valid(t.column(names[0])))
    storage.write_parquet(dest, t)
    return dest


def bypass_name(label: str, shard: Part) -> str:
    return f"_work/{label}/bypass-{shard.part}"


def committed_path(out: str, name: str, files: dict[str, str] | None = None) -> str:
    """Where a shard's work file of logical name `name` (`spill_name`, `bypass_name`) is: the
    committed file named in `files` (the shard's record of the phase that wrote it), else `name`."""
    return storage.join(out, (files or {}).get(name, name))


def keys_record(out: str, label: str) -> str:
    return storage.join(out, state.STATE, f"keys-{label}.json")


def stored_key_files(out: str, labels: Sequence[str]) -> set[str]:
    """The `keys/` files the run stored (their records), so they count as committed."""
    files: set[str] = set()
    for label in labels:
        files.update(storage.read_json(keys_record(out, label)) or [])
    return files


def store_stage_keys(recipe: Recipe, stage: GlobalStage, label: str, parts: list[Part], spills: list[str],
                     executor: Executor) -> None:
    """Keep a global stage's private keys (MinHash band keys) of every document that reached it in
    OUT/keys/<label>/, one file per part, listed by _SUCCESS: `refinery retune` re-resolves the
    stage from them instead of recomputing them. They are copied from the files it resolved on:
    the spill (a member whose keys were spilled) or the overlay its wave wrote."""
    names = [f.name for f in stage.spill_fields()]
    if not names or storage.read_json(keys_record(recipe.output, label)) is not None:
        return
    if not spills or any(n not in storage.read_parquet_schema(spills[0]).names for n in names):
        return
    rel = [keys_name(label, p) for p in parts]
    executor.map(store_keys, [(src, storage.join(recipe.output, r), names) for src, r in zip(spills, rel)])
    storage.write_json(keys_record(recipe.output, label), rel)


def decision_file(entry: "str | dict") -> str:
    return entry if isinstance(entry, str) else entry["file"]


def run_wave(recipe: Recipe, pool: WorkerPool, labels: list[str], decided: list[int], mids: list[int], nxt: int,
             parts: list[Part], spills: list[str], decisions: dict[int, list]) -> tuple[dict, dict, float]:
    """The wave before the global member `nxt` of a barrier group, whose keys are not in the spill
    (`ShardWorker.wave`, one task per part on the run's workers): the per-document members `mids`
    (maybe none) run over the group's one spill, and `nxt`'s keys are computed on their survivors.
    Recorded (`_state/wave-LABEL.json`) before `nxt` resolves, so a run killed after it resumes
    with its files. Returns (per mid member, per part: its decision entry or None where it does not
    apply), per part: the overlay `nxt` resolves on, and the global step's CPU seconds (the
    members' own work is booked per part, by the barrier read)."""
    record = storage.join(recipe.output, state.STATE, f"wave-{labels[nxt]}.json")
    known = storage.read_json(record)
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
        storage.write_json(record, known)
    entries = {m: {p.index: known[str(p.index)]["mids"][str(m)] for p in parts} for m in mids}
    return entries, {p.index: known[str(p.index)]["overlay"] for p in parts}, cpu


def resolve_group(recipe: Recipe, pool: WorkerPool, stages: list[Stage], labels: list[str], group: list[int],
                  parts: list[Part], spills: list[str], ledger: Ledger, progress: bool) -> dict[int, list]:
    """A barrier group's members in recipe order, each on the survivors of the ones before. A
    global member whose keys are in the spill (`spilled_keys`) resolves on the spill; any other
    resolves on the overlay of its wave, where the per-document members before it run. Returns,
    per part, each member's decision entry: a decision file, {"file", "overlay"} for a member
    resolved on an overlay, a per-document member's wave entry, or None where it does not apply."""
    decisions: dict[int, list] = {p.index: [] for p in parts}
    eager = spilled_keys(stages, group)
    decided: list[int] = []  # the members with an entry in decisions, in recipe order
    mids: list[int] = []  # per-document members not yet run (in the wave before the next global one)
    for i in group:
        if not stages[i].needs_all_documents:
            mids.append(i)
            continue
        t_res, cpu_res = time.time(), time.process_time()
        executor = pool.executor()
        srcs, overlays, wave_cpu = spills, None, 0.0
        if i not in eager:
            entries, overlays, wave_cpu = run_wave(recipe, pool, labels, decided, mids, i, parts, spills, decisions)
            for m in mids:
                for p in parts:
                    decisions[p.index].append(entries[m][p.index])
            decided += mids
            mids = []
            srcs = [overlays[p.index] for p in parts]
        stages[i].dropped_before = ([[decision_file(e) for e in decisions[p.index] if e is not None] for p in parts]
                                    if decided else None)
        mine = resolve_stage(recipe, stages[i], labels[i], parts, srcs, executor, progress)
        store_stage_keys(recipe, stages[i], labels[i], parts, srcs, executor)
        for p in parts:
            decisions[p.index].append(mine[p.index] if overlays is None else
                                      {"file": mine[p.index], "overlay": overlays[p.index]})
        decided.append(i)
        ledger.add_global_step(labels[i], time.process_time() - cpu_res + getattr(executor, "cpu_seconds", 0.0)
                               + wave_cpu, time.time() - t_res, time.process_time() - cpu_res)
        log.info("%s: global step took %.1fs %s", labels[i], time.time() - t_res,
                 json.dumps(getattr(stages[i], "stats", {})))
    return decisions


def resolve_stage(recipe: Recipe, stage: GlobalStage, label: str, parts: list[Part], spills: list[str],
                  executor: Executor, progress: bool) -> dict[int, str | None]:
    """Run a global stage's barrier step; returns the decision file for each part (by its index)."""
    record = state.resolve_record(recipe.output, label)
    known = storage.read_json(record)
    if known is not None:
        return {int(k): v for k, v in known.items()}
    # A fresh work location per attempt under the output: every worker reaches it, and a killed
    # attempt's intermediates are never mistaken for this one's (the whole _work goes at the end).
    stage.work_url = storage.join(work_dir(recipe.output, label), f"resolve-{state.new_attempt()}")
    storage.makedirs(stage.work_url)
    bar = tqdm(total=1, desc=f"{label} (global)", disable=not progress, dynamic_ncols=True)
    try:
        stage.ensure_setup()
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
    storage.write_json(record, decisions)
    return decisions


def aligned_decisions(ids: pa.ChunkedArray, dec: pa.Table, stage: Stage) -> pa.Table:
    """A global stage's per-document decisions (and its signals) in the spill's row order, one row
    per spilled row (or per row of a retune's table), `id` first. A `text` column in the decisions
    rewrites the documents (e.g. line-level dedup)."""
    keep = ["id", "drop_reason", "drop_detail", "text"] + [
        f.name for f in stage.signal_fields() if f.name in dec.column_names
    ]
    dec = dec.select([c for c in keep if c in dec.column_names])
    rows = pa.table({"id": ids, "_row": pa.array(range(len(ids)), pa.int64())})
    joined = rows.join(dec, "id", join_type="left outer").sort_by("_row").drop_columns(["_row"])
    if joined.num_rows != len(ids):
        raise RuntimeError(f"decisions of stage {stage.name} do not match its documents one to one")
    for col in ("drop_reason", "drop_detail"):
        if col not in joined.column_names:
            joined = joined.append_column(col, pa.nulls(joined.num_rows, pa.string()))
    return joined
