"""Re-decide a finished run from its stored signals: `refinery retune RUN --set KEY=VALUE --out RUN2`.

Every document of RUN (kept, and rejected by any stage after reading) is walked through the
recipe's stages again with the new settings, but nothing is re-read and no stored signal is
recomputed: a stage decides from the signals the run stored (`Stage.redecide`: the quality stage
first re-derives its failed rules and scores from its raw measurements). Only documents the old run
never showed a stage (they were rejected earlier and are now let through) are annotated by it, from
the text their rejects row holds, which is the text as it entered the stage that rejected them.
A global stage (dedup) is re-resolved, with its own `annotate` and `resolve`, only if the set of
documents reaching it changed or its own settings did; otherwise its stored decisions stand.
A per-document stage's scope (`skip_kinds`, `sources`) may change too: documents it now examines for
the first time are annotated from their text (counted as recomputed), documents it no longer
examines pass it without its signals; a global stage's scope change is refused.

What cannot be re-decided exactly, and why: a kept document's text may have been rewritten after a
stage (C4 line removal in `quality`, PII masking): if a new setting rejects it at or before that
stage, the rejects row should hold the text before the rewrite, which the run did not store. Such
documents are counted and listed (`retune.json` -> `inexact`), never silently passed off as exact.
Settings that change signals (a model, C4's line rules, PII masks, MinHash bands) are refused
with one line and exit code 2: they need `refinery run`.

The ledger of RUN2 is RUN's ledger with each changed document's old path taken out and its new
path put in, per shard, so bytes measured before a rewrite (which the outputs no longer hold) stay
as the run counted them. Stage times stay those of RUN: they are the cost of computing the signals.
"""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from pipeline import storage
from pipeline.dataset_card import write_dataset_card
from pipeline.engine import reresolve
from pipeline.engine.barrier import aligned_decisions
from pipeline.engine.ledger import Counts, Ledger
from pipeline.engine.recipe import Recipe, parse_recipe
from pipeline.engine.state import remove_own
from pipeline.engine.worker import READ, without_signals
from pipeline.errors import ConfigError, RunError
from pipeline.schema import conform, full_schema
from pipeline.yamlfile import read_yaml
from stages._arrow import null_columns, set_column
from stages.base import TIME_LIMIT, GlobalStage, LocalExecutor, Stage
from stages.decision_settings import dotted_keys, rewrite_rows

PASS, SKIP = "", "~"  # outcomes besides a rejection reason; None: the stage never saw the document


def parse_sets(items: list[str]) -> list[tuple[list[str], Any]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or "." not in key:
            raise ConfigError(f"--set {item!r}: expected STAGE.KEY=VALUE, e.g. quality.gopher_quality.min_stop_words=1")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML") from None
        out.append(([p for p in key.strip().split(".")], parsed))
    return out


def new_recipe(run: str, sets: list[str], recipe_file: str | None, out: str) -> tuple[Recipe, Recipe, dict]:
    """(old recipe, new recipe, new raw recipe); ConfigError for anything retune cannot do."""
    old_raw = storage.read_json(storage.join(run, "recipe.json"))
    if old_raw is None or not storage.exists(storage.join(run, storage.MANIFEST)):
        raise ConfigError(f"{run}: not a finished refinery run (no recipe.json or {storage.MANIFEST})")
    raw = dict(read_yaml(recipe_file)) if recipe_file is not None else copy.deepcopy(old_raw)
    labels = [st.get("label") or st.get("stage") for st in raw.get("stages", [])]
    for keys, value in parse_sets(sets):
        if keys[0] not in labels:
            raise ConfigError(f"--set {'.'.join(keys)}: no stage {keys[0]!r} in the run's recipe (stages: {', '.join(labels)})")
        node = raw["stages"][labels.index(keys[0])]
        for k in keys[1:-1]:
            if node.get(k) is None:
                node[k] = {}
            node = node[k]
            if not isinstance(node, dict):
                raise ConfigError(f"--set {'.'.join(keys)}: {k} is not a mapping")
        node[keys[-1]] = value
    raw["output"] = out
    old = parse_recipe(copy.deepcopy(old_raw), f"{run}/recipe.json", check_inputs=False)
    new = parse_recipe(copy.deepcopy(raw), f"{recipe_file or run + '/recipe.json'} with --set", check_inputs=False)
    if [(s.name, s.label) for s in old.stages] != [(s.name, s.label) for s in new.stages]:
        raise ConfigError("retune: the stages (names, labels, order) must stay those of the run")
    if json.dumps(old_raw.get("sources"), sort_keys=True) != json.dumps(raw.get("sources"), sort_keys=True):
        raise ConfigError("retune: sources cannot change (that needs `refinery run`)")
    for o, n in zip(old.stages, new.stages):
        built, rebuilt = o.build(), n.build()
        if [f.name for f in built.signal_fields()] != [f.name for f in rebuilt.signal_fields()]:
            raise ConfigError(f"retune: the new settings of {o.label!r} measure other signals (e.g. other n-grams); use `refinery run`")
        if built.decision_keys is None:
            raise ConfigError(f"retune: stage {o.label!r} ({o.name}) has no declared decision settings; rerun instead")
        a, b = dotted_keys(o.config.model_dump()), dotted_keys(n.config.model_dump())
        changed = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        if refusal := rebuilt.retune_refusal(changed):
            raise ConfigError(f"retune: {o.label}.{refusal[0]}: {refusal[1]}")
        for key in changed:
            if key in SCOPE_KEYS:
                if isinstance(built, GlobalStage):  # its groups span every document it examined
                    raise ConfigError(f"retune: {o.label}.{key}: changing which documents a global stage examines "
                                      f"needs all of them grouped again from their text: use `refinery run`")
                continue  # newly examined documents are measured again from their text (Walk._local)
            if not built.decision_only(key):
                raise ConfigError(f"retune: {o.label}.{key} changes what the stage measures, not only what it "
                                  f"decides; retune re-decides from stored signals only (use `refinery run`)")
    return old, new, raw


# The settings that say which documents a stage examines (stages/base.py StageConfig); a retune may
# change them for a per-document stage only (the module docstring says how).
SCOPE_KEYS = ("skip_kinds", "sources")


# -- reading the run ----------------------------------------------------------------------------
@dataclass
class ShardDocs:
    """A shard's documents as the run left them, every one after reading; the walk filters, splits
    and sorts copies of `table`, and writes the documents it moved."""
    entry: dict  # its line of shards.jsonl
    index: int
    part: str
    source: str
    kind: str | None
    table: pa.Table  # every document after reading, with `_old` (stage index, len(stages) = kept) and `_row`
    old_reason: list[str | None] = field(default_factory=list)
    old_bytes: list[int] = field(default_factory=list)  # UTF-8 bytes of the stored text, by `_row`
    # per place (stage index, len(stages) = kept) holding exactly one file of the shard in the run:
    # (path, its column names), to copy when the new content is the same
    files: dict[int, tuple[str, list[str]]] = field(default_factory=dict)


def _bytes(table: pa.Table) -> list[int]:
    """Bytes of the text of each of `table`'s rows."""
    return pc.fill_null(pc.binary_length(table.column("text")), 0).to_pylist()


_PART = re.compile(r"part-(\d+)")


def _by_shard(run: str, subdir: str) -> dict[int, list[str]]:
    """The run's committed files below `subdir` (its _SUCCESS manifest), by shard number."""
    out: dict[int, list[str]] = {}
    for f in storage.committed_files(run, subdir):
        out.setdefault(int(_PART.match(storage.basename(f)).group(1)), []).append(f)
    return out


def read_run(run: str, recipe: Recipe, schema: pa.Schema) -> list[ShardDocs]:
    shards = []
    entries = [json.loads(line) for line in storage.read_text(storage.join(run, "shards.jsonl")).splitlines() if line.strip()]
    files = [_by_shard(run, f"rejects/{s.label}") for s in recipe.stages] + [_by_shard(run, "kept")]
    for e in entries:
        part = f"part-{e['shard']:05d}.parquet"
        tables = [schema.empty_table().append_column("_old", pa.array([], pa.int32()))]
        same: dict[int, tuple[str, list[str]]] = {}
        for i, found in enumerate(files):
            for p in found.get(e["shard"], []):
                raw = storage.read_parquet(p)
                t = conform(raw, schema)
                if len(found[e["shard"]]) == 1:
                    same[i] = (p, raw.column_names)
                tables.append(t.append_column("_old", pa.array([i] * t.num_rows, pa.int32())))
        t = pa.concat_tables(tables).sort_by([("offset", "ascending"), ("id", "ascending")])
        t = t.append_column("_row", pa.array(range(t.num_rows), pa.int64()))
        kind = t.column("kind")[0].as_py() if t.num_rows else None
        shards.append(ShardDocs(e, e["shard"], part, e["source"], kind, t, t.column("drop_reason").to_pylist(),
                                _bytes(t), same))
    return shards


# -- the walk -------------------------------------------------------------------------------------
class Walk:
    """New outcomes per stage and document, as the stages are replayed."""

    def __init__(self, shards: list[ShardDocs], stages: list[Stage], labels: list[str], work: str,
                 config_changed: list[bool], stored_keys: dict[str, pa.Table | None], old_stages: list[Stage]):
        self.shards = shards
        self.shard = {s.index: s for s in shards}
        self.old_stages = old_stages  # as the run had them: which documents each examined
        self.config_changed = config_changed  # per stage: do its settings differ from the run's?
        self.stages = stages
        self.labels = labels
        self.work = work
        self.outcome = {s.index: [[None] * s.table.num_rows for _ in stages] for s in shards}
        self.bytes = {s.index: [[(0, 0)] * s.table.num_rows for _ in stages] for s in shards}
        self.rejects: dict[int, dict[str, list[pa.Table]]] = {s.index: {} for s in shards}
        self.alive = {s.index: s.table for s in shards}
        self.inexact: set[str] = set()
        self.recomputed = 0  # documents a stage annotated (never measured by it in the run)
        self.reresolved = 0  # documents a global stage decided again
        self.stored_keys = stored_keys  # per global stage label: keys the run stored (keys/<label>/)
        # per global stage label and shard: the keys of every document that reaches it now, stored in
        # the retune's keys/<label>/ so that a retune of this retune re-resolves from them as from a run's
        self.keys_out: dict[str, dict[int, pa.Table]] = {}
        self.keys_as_stored: set[str] = set()

    def run(self) -> None:
        for i, stage in enumerate(self.stages):
            reach = []  # the shards the stage examines, maybe with no documents now; the others' pass it
            for sd in self.shards:
                live = self.alive[sd.index]
                if live.num_rows and sd.kind is not None and not stage.applies_to(sd.source, sd.kind):
                    self._record(sd, i, live, [SKIP] * live.num_rows)
                    if self.old_stages[i].applies_to(sd.source, sd.kind):  # no longer examined: no signals of it
                        self.alive[sd.index] = null_columns(live, [f.name for f in stage.signal_fields()])
                elif sd.kind is None or stage.applies_to(sd.source, sd.kind):
                    reach.append(sd)
            if isinstance(stage, GlobalStage):
                self._global(i, stage, reach)
            else:
                for sd in [sd for sd in reach if self.alive[sd.index].num_rows]:
                    self._local(i, stage, sd)

    def _record(self, sd: ShardDocs, i: int, table: pa.Table, reasons: list[str | None],
                b_in: list[int] | None = None) -> None:
        """Stage i's outcomes of `table`'s rows; bytes out are those of the text the rows hold, bytes
        in those of `b_in` (the text before the stage rewrote it), else the same."""
        oc, by = self.outcome[sd.index][i], self.bytes[sd.index][i]
        b_out = _bytes(table)
        for r, reason, bi, bo in zip(table.column("_row").to_pylist(), reasons, b_in or b_out, b_out):
            oc[r] = PASS if reason is None else reason
            by[r] = (bi, bo if reason is None else bi)

    def _reject(self, sd: ShardDocs, i: int, table: pa.Table, reasons: list[str | None],
                b_in: list[int] | None = None) -> pa.Table:
        """Stage i's decisions of `table`'s rows, recorded (`_record`); rejected rows go to
        rejects/LABEL; returns the survivors. A global stage's decisions carry a detail (e.g. the
        document kept instead); a per-document stage derives its own from the signals
        (`Stage.drop_details`)."""
        self._record(sd, i, table, reasons, b_in)
        arr = pa.array(reasons, pa.string())
        if arr.null_count == len(arr):  # nothing rejected: no copy of the text
            return table
        mask = pc.is_valid(arr)
        rej, table = _split(table, mask)
        why, n = arr.filter(mask), rej.num_rows
        self._note_rewrites(rej, i)  # passed on from stage i in the run: its text as it entered is gone
        rej = set_column(rej, "drop_stage", pa.array([self.labels[i]] * n, pa.string()))
        rej = set_column(rej, "drop_reason", why)
        if not self.stages[i].needs_all_documents:  # a per-document stage's own details, from the signals
            own = self.stages[i].drop_details(rej, why.to_pylist())
            rej = set_column(rej, "drop_detail", pa.array(list(own), pa.string()) if own is not None
                             else pa.nulls(n, pa.string()))
        # measured by stages the document no longer reaches
        rej = null_columns(rej, [f.name for st in self.stages[i + 1:] for f in st.signal_fields()])
        self.rejects[sd.index].setdefault(self.labels[i], []).append(rej)
        return table

    def _note_rewrites(self, table: pa.Table, start: int) -> None:
        """The documents of `table` whose text a stage from `start` up to where the run left them
        rewrote (`Stage.rewrote`: PII masking, C4 cleaning): the text a stage before them saw in
        the run is gone (inexact)."""
        for row in rewrite_rows(table, ("id", "_old")):
            if any(self.stages[j].rewrote(row) for j in range(start, min(row["_old"], len(self.stages)))):
                self.inexact.add(row["id"])

    def _local(self, i: int, stage: Stage, sd: ShardDocs) -> None:
        live = self.alive[sd.index]
        old = live.column("_old").to_pylist()
        unmeasured = sd.kind is not None and not self.old_stages[i].applies_to(sd.source, sd.kind)
        memo_mask = pa.array([o >= i and not unmeasured for o in old])  # the run stored no signals of theirs
        memo, fresh = _split(live, memo_mask)
        if unmeasured:  # now examined: a later stage may have rewritten the text it held
            self._note_rewrites(fresh, i + 1)
        redo_rows: set[int] = set()
        survivors = []  # the live documents of each part: re-decided, measured again
        if memo.num_rows:
            memo, reasons, chain_changed = stage.redecide(memo)
            mold = memo.column("_old").to_pylist()
            for k, (o, r) in enumerate(zip(mold, memo.column("_row").to_pylist())):
                if o == i and sd.old_reason[r] == TIME_LIMIT:
                    reasons[k] = TIME_LIMIT  # never measured: it stays rejected
            # now kept where the run rejected it here: measured again if the stage rewrote its text
            redo_rows.update(stage.measure_again(memo, [r if o == i else "" for o, r in zip(mold, reasons)]))
            for k, (o, changed) in enumerate(zip(mold, chain_changed)):
                if o == i and changed:
                    redo_rows.add(k)  # the stored row holds the text as it entered: recompute exactly
                elif changed:
                    self.inexact.add(memo.column("id")[k].as_py())
            memo, redo = _split(memo, pa.array([k not in redo_rows for k in range(memo.num_rows)]))
            if memo.num_rows:
                survivors.append(self._reject(sd, i, memo, [r for k, r in enumerate(reasons) if k not in redo_rows]))
            fresh = pa.concat_tables([fresh, redo]) if redo_rows else fresh
        if fresh.num_rows:
            self.recomputed += fresh.num_rows
            stage.ensure_setup()
            ann = stage.annotate(without_signals(fresh, stage))
            survivors.append(self._reject(sd, i, conform(ann, fresh.schema), list(stage.decide(ann)), _bytes(fresh)))
        self.alive[sd.index] = _restore_order(pa.concat_tables(survivors))

    def _global(self, i: int, stage: GlobalStage, reach: list[ShardDocs]) -> None:
        label = self.labels[i]
        spill: dict[int, pa.Table] = {}
        changed = self.config_changed[i]
        for sd in reach:  # a shard none of whose documents reach it now changes it too (its groups lose them)
            live = self.alive[sd.index]
            if live.num_rows:
                spill[sd.index] = live
            reached_before = pc.sum(pc.greater_equal(sd.table.column("_old"), i)).as_py() or 0
            if reached_before != live.num_rows or pc.any(pc.less(live.column("_old"), i)).as_py():
                changed = True
        if not spill:
            return
        if not changed:  # the same documents reach the stage: its stored decisions stand
            for idx, live in spill.items():
                self.alive[idx] = self._stored_decisions(i, self.shard[idx], live)
            if self.stored_keys.get(label) is not None:
                self.keys_as_stored.add(label)  # the run's key files stand: copied
            return
        keyed = {idx: self._keyed(i, stage, self.shard[idx], live) for idx, live in sorted(spill.items())}
        private = [f.name for f in stage.spill_fields()]
        if private and all(c in t.column_names for t in keyed.values() for c in private):
            self.keys_out[label] = {idx: t.select(["id"] + private) for idx, t in keyed.items()}
        redo = self._to_redo(i, stage, keyed)
        # re-resolve: the stage's own resolve, over the documents of the groups that can change, in one
        # spill file (a stage decides the same whatever the files; each file costs its waves' files)
        wd = os.path.join(self.work, label)
        subs = {idx: t.filter(pa.array(redo[idx], pa.bool_())) for idx, t in keyed.items()}
        subs = {idx: t for idx, t in subs.items() if t.num_rows}
        decided: dict[int, pa.Table] = {}
        if subs:
            stage.work_url = os.path.join(wd, "resolve")  # the stage's intermediates, as the runner gives it
            os.makedirs(stage.work_url, exist_ok=True)
            path = os.path.join(wd, "part-00000.parquet")
            spilled = pa.concat_tables(list(subs.values()), promote_options="permissive")
            pq.write_table(spilled, path)  # resolve reads the text (Jaccard)
            self.reresolved += sum(t.num_rows for t in subs.values())
            stage.ensure_setup()
            result = stage.resolve([path], LocalExecutor())
            dec = result if isinstance(result, pa.Table) else storage.read_parquet(result[0])
            t = spilled.drop_columns([c for c in private if c in spilled.column_names])
            joined = aligned_decisions(t.column("id"), dec, stage)
            for name in joined.column_names[1:]:
                t = set_column(t, name, joined.column(name))
            at = 0
            for idx, sub in subs.items():
                decided[idx] = t.slice(at, sub.num_rows)
                at += sub.num_rows
        for idx, t in keyed.items():
            sd, live = self.shard[idx], spill[idx]
            parts = [self._stored_decisions(i, sd, live.filter(pc.invert(pa.array(redo[idx], pa.bool_()))))]
            if idx in decided:
                t = conform(decided[idx], live.schema)  # its text as the decisions have it (a stage may rewrite)
                reasons = t.column("drop_reason").to_pylist()
                parts.append(self._reject(sd, i, t, reasons))
            self.alive[idx] = _restore_order(pa.concat_tables(parts))
        shutil.rmtree(wd, ignore_errors=True)

    def _stored_decisions(self, i: int, sd: ShardDocs, live: pa.Table) -> pa.Table:
        """The run's own decisions of global stage i, for documents whose group is unchanged;
        returns the survivors."""
        reasons = [sd.old_reason[r] if o == i else None
                   for r, o in zip(live.column("_row").to_pylist(), live.column("_old").to_pylist())]
        return self._reject(sd, i, live, reasons)

    def _keyed(self, i: int, stage: GlobalStage, sd: ShardDocs, live: pa.Table) -> pa.Table:
        """`live` with the stage's keys: as the run stored them for documents that reached the stage
        before (the text a row holds now may have been rewritten by a later stage, PII masking),
        computed by the stage's own `annotate` only for the others."""
        cols = stage.group_keys()
        private = [f.name for f in stage.spill_fields()]
        stored = self.stored_keys.get(self.labels[i])
        if private and stored is not None:
            at = pc.index_in(live.column("id"), value_set=stored.column("id"))  # null: not stored
            for c in private:
                if c in stored.column_names:
                    live = set_column(live, c, stored.column(c).take(at))
        if not cols or (private and stored is None) or any(c not in live.column_names for c in cols):
            known = pa.array([False] * live.num_rows, pa.bool_())
        else:
            known = pc.greater_equal(live.column("_old"), i)
            for c in cols:
                known = pc.and_(known, pc.is_valid(live.column(c)))
            known = pc.fill_null(known, False)
        have, fresh = _split(live, known)
        if fresh.num_rows == 0:
            return live
        self.recomputed += fresh.num_rows
        if stage.reads_text:  # keys from a text a later stage rewrote are not the run's keys
            self._note_rewrites(fresh, i + 1)
        stage.ensure_setup()
        drop = [c for c in [f.name for f in stage.signal_fields()] + private if c in fresh.column_names]
        ann = stage.annotate(fresh.drop_columns(drop))
        schema = pa.schema(list(have.schema) + [ann.schema.field(c) for c in ann.column_names if c not in have.column_names])
        return _restore_order(pa.concat_tables([conform(have, schema), conform(ann, schema)]))

    def _to_redo(self, i: int, stage: GlobalStage, keyed: dict[int, pa.Table]) -> dict[int, list[bool]]:
        """Per shard, which documents reaching the stage to re-resolve: those whose group can change
        (pipeline/engine/reresolve.py); all of them when the stage's settings changed or the run
        did not store its keys."""
        cols = stage.group_keys()
        private = [f.name for f in stage.spill_fields()]
        stored = self.stored_keys.get(self.labels[i])
        if not cols:
            return {idx: [True] * t.num_rows for idx, t in keyed.items()}
        new = pa.concat_tables([t.select(["id"] + cols) for t in keyed.values()])
        moved: set[str] = set()
        if self.config_changed[i] or (private and stored is None):  # every group is decided again
            old, moved = new.slice(0, 0), set(new.column("id").to_pylist())
        elif private:  # keys the run stored in keys/<label>/: every document that reached the stage
            old = stored.select(["id"] + cols)
        else:  # keys stored as signals on every document that reached the stage
            olds = [sd.table.filter(pc.greater_equal(sd.table.column("_old"), i)).select(["id"] + cols)
                    for sd in self.shards if sd.kind is None or stage.applies_to(sd.source, sd.kind)]
            old = pa.concat_tables(olds)
        if (qcol := stage.ranks_by()) and not moved:
            for idx, t in keyed.items():  # a new ranking score may change its group's survivor
                sd = self.shard[idx]
                if qcol in t.column_names and qcol in sd.table.column_names:
                    before = sd.table.column(qcol).take(t.column("_row")).to_pylist()
                    moved.update(d for d, a, b in zip(t.column("id").to_pylist(), before, t.column(qcol).to_pylist())
                                 if a != b)
        mask, comp = reresolve.affected(new.column("id").to_pylist(), [new.column(c) for c in cols],
                                        old.column("id").to_pylist(), [old.column(c) for c in cols], moved)
        # a stage whose verification reads the text: a re-resolved document that shares its group with
        # another re-resolved one and whose text a later stage rewrote (PII masking) would be compared
        # on other text than in a full run, where the stage saw it before the rewrite: inexact
        size = np.bincount(comp[mask], minlength=int(comp.max()) + 1) if comp.size else comp
        out, at = {}, 0
        for idx, t in keyed.items():
            out[idx] = mask[at:at + t.num_rows].tolist()
            if stage.reads_text:
                rows = [k for k in range(t.num_rows) if out[idx][k] and size[comp[at + k]] > 1]
                self._note_rewrites(t.take(pa.array(rows, pa.int64())), i + 1)
            at += t.num_rows
        return out


def _restore_order(table: pa.Table) -> pa.Table:
    """Rows in the shard's order (`_row`); sorting copies every column, text included, so a table
    already in order is returned as it is."""
    rows = table.column("_row").to_numpy()
    if bool(np.all(rows[1:] > rows[:-1])):
        return table
    return table.sort_by("_row")


def _split(table: pa.Table, mask: pa.Array | pa.ChunkedArray) -> tuple[pa.Table, pa.Table]:
    """(rows where `mask`, the others); filtering copies the text, so a whole table stays as it is."""
    if pc.all(mask).as_py():
        return table, table.slice(0, 0)
    return table.filter(mask), table.filter(pc.invert(mask))


# -- the ledger ------------------------------------------------------------------------------------
def _old_outcome(sd: ShardDocs, stages: list[Stage], row: int, old: int, j: int) -> str | None:
    if j > old:
        return None
    if j == old:
        return sd.old_reason[row]
    return SKIP if sd.kind is not None and not stages[j].applies_to(sd.source, sd.kind) else PASS


def ledger_delta(walk: Walk, stages: list[Stage], labels: list[str]) -> tuple[dict[int, Ledger], int]:
    """Per shard: the new paths minus the old paths of the documents whose path changed (the old
    paths with the run's stages, `walk.old_stages`: they say which documents each skipped)."""
    deltas: dict[int, Ledger] = {}
    changed = 0
    for sd in walk.shards:
        led = Ledger(labels)
        for row, old in enumerate(sd.table.column("_old").to_pylist()):
            new_oc = [walk.outcome[sd.index][j][row] for j in range(len(stages))]
            old_oc = [_old_outcome(sd, walk.old_stages, row, old, j) for j in range(len(stages))]
            if new_oc == old_oc:
                continue
            changed += 1
            k = next(j for j in range(len(stages)) if new_oc[j] != old_oc[j])
            for j in range(k, len(stages)):
                if old_oc[j] is not None:
                    _book(led, labels[j], sd.source, old_oc[j], sd.old_bytes[row], sd.old_bytes[row], -1)
                if new_oc[j] is not None:
                    bi, bo = walk.bytes[sd.index][j][row]
                    _book(led, labels[j], sd.source, new_oc[j], bi, bo, +1)
        deltas[sd.index] = led
    return deltas, changed


def _book(led: Ledger, label: str, source: str, outcome: str, b_in: int, b_out: int, sign: int) -> None:
    if outcome in (PASS, SKIP):
        c = Counts(sign, sign * b_in, sign, sign * b_out, sign if outcome == SKIP else 0)
    else:
        c = Counts(sign, sign * b_in, 0, 0, 0, {outcome: [sign, sign * b_in]})
    led.counts(label, source).add(c)


def _apply(base: dict, delta: Ledger, stages: list[Stage], labels: list[str]) -> Ledger:
    """The run's ledger `base` with `delta` merged, and the parameters each stage ran with (e.g. LSH
    bands), as the runner records them: the new ones."""
    led = Ledger.from_dict(base)
    led.merge(delta)
    for per_source in led.stages.values():
        for c in per_source.values():
            c.rejected = {r: v for r, v in c.rejected.items() if v[0] != 0 or v[1] != 0}
    for st, label in zip(stages, labels):
        if label in led.params and st.params():
            led.params[label] = st.params()
    return led


# -- writing ------------------------------------------------------------------------------------------
def _write_parquet(out: str, rel: str, sd: ShardDocs, table: pa.Table, place: int, schema: pa.Schema,
                   files: list[str]) -> bool:
    """Write the rows `table` (`_row` order) at OUT/rel, or copy the run's file of the shard at that
    place (stage index, len(stages) = kept) when it holds the same rows, columns and values: no
    compressing again what a retune left alone (the run's order is a full run's). True if copied."""
    files.append(rel)
    was = sd.files.get(place)
    table = conform(table.drop_columns(["_old", "_row"]), schema)
    if was is not None and was[1] == schema.names:
        old = sd.table.filter(pc.equal(sd.table.column("_old"), place)).drop_columns(["_old", "_row"])
        if conform(old, schema).equals(table):
            storage.copy_file(was[0], storage.join(out, rel))
            return True
    storage.write_parquet(storage.join(out, rel), table)
    return False


def _copy_committed(run: str, out: str, subdir: str, files: list[str]) -> int:
    """Copy RUN's committed files below `subdir` to OUT as they are, noting them in `files`;
    returns how many."""
    found = storage.committed_files(run, subdir)
    for f in found:
        files.append(f"{subdir}/{storage.basename(f)}")
        storage.copy_file(f, storage.join(out, files[-1]))
    return len(found)


@dataclass
class RetuneResult:
    out: str
    ledger: Ledger
    seconds: float
    changed: int
    recomputed: int
    inexact: list[str]
    recipe_path: str


# What retune (and the report and mixture after it) writes in --out; --overwrite deletes only these.
OWN_NAMES = ("kept", "rejects", "keys", "report", "mixture", "shards.jsonl", "ledger.json", "recipe.json", "recipe.yaml",
             "retune.json", "README.md", storage.MANIFEST)


def retune(run: str, sets: list[str], out: str, recipe_file: str | None = None, overwrite: bool = False,
           allow_inexact: bool = False) -> RetuneResult:
    """Write OUT as the run RUN would have been with the new settings; see the module docstring."""
    t0 = time.time()
    run, out = storage.normalize(run), storage.normalize(out)
    if storage.absolute(run).rstrip("/") == storage.absolute(out).rstrip("/"):
        raise ConfigError("retune: --out must be a new directory, not the run itself")
    old, new, raw = new_recipe(run, sets, recipe_file, out)
    if storage.exists(out) and storage.listdir(out):
        if not overwrite:
            raise ConfigError(f"retune: {out} exists and is not empty (pass --overwrite to replace it)")
        theirs = [n for n in storage.listdir(out) if n not in OWN_NAMES]
        if theirs and not storage.exists(storage.join(out, "retune.json")):  # not an (interrupted) retune's
            raise ConfigError(f"retune: {out} was not written by retune; refusing to delete it")
    stages = [s.build() for s in new.stages]
    labels = [s.label for s in new.stages]
    schema = full_schema(f for st in stages for f in st.signal_fields())
    shards = read_run(run, old, schema)
    with tempfile.TemporaryDirectory(prefix="refinery-retune-") as work:  # a global stage's spill, if re-resolved
        keys = {label: reresolve.read_stored_keys(run, label)
                for st, label in zip(stages, labels) if isinstance(st, GlobalStage) and st.spill_fields()}
        walk = Walk(shards, stages, labels, work, [a.config != b.config for a, b in zip(old.stages, new.stages)],
                    keys, [s.build() for s in old.stages])
        walk.run()
    if walk.inexact and not allow_inexact:
        raise ConfigError(
            f"retune: {len(walk.inexact):,} documents would be rejected at or before a stage that later rewrote "
            f"their text (C4 line removal, PII masking), and the run did not store the text before it: "
            f"these settings need `refinery run` (or --allow-inexact to write them with the rewritten text)")
    deltas, changed = ledger_delta(walk, stages, labels)

    # the ledger first: nothing is written if it does not balance
    total_delta = Ledger(labels)
    for sd in shards:
        sd.entry["ledger"] = _apply(sd.entry["ledger"], deltas[sd.index], stages, labels).to_dict()
        total_delta.merge(deltas[sd.index])
    ledger = _apply(storage.read_json(storage.join(run, "ledger.json")), total_delta, stages, labels)
    if problems := ledger.check():
        raise RunError("retune: ledger does not balance: " + "; ".join(problems))

    remove_own(out, OWN_NAMES)  # --overwrite: only now, when the new settings are known to give a run
    files: list[str] = []
    copied = _copy_committed(run, out, f"rejects/{READ}", files)  # read rejects: as they are
    for sd in shards:
        for label, tables in walk.rejects[sd.index].items():
            t = _restore_order(pa.concat_tables(tables))
            copied += _write_parquet(out, f"rejects/{label}/{sd.part}", sd, t, labels.index(label), schema, files)
        kept = walk.alive[sd.index]
        if kept.num_rows:
            kept = null_columns(kept, ["drop_stage", "drop_reason", "drop_detail"])  # rows revived from rejects
            copied += _write_parquet(out, f"kept/{sd.part}", sd, kept, len(stages), schema, files)
        for label, per_shard in walk.keys_out.items():  # as a run stores them: a retune of this one reads them
            t = per_shard.get(sd.index)
            if t is not None and t.num_rows:
                storage.write_parquet(storage.join(out, f"keys/{label}/{sd.part}"), t)
                files.append(f"keys/{label}/{sd.part}")
    for label in sorted(walk.keys_as_stored):
        copied += _copy_committed(run, out, f"keys/{label}", files)
    storage.write_text(storage.join(out, "shards.jsonl"), "\n".join(json.dumps(sd.entry) for sd in shards) + "\n")
    ledger.write(storage.join(out, "ledger.json"))
    storage.write_text(storage.join(out, "recipe.json"), json.dumps(raw, indent=2, default=str))
    recipe_path = storage.join(out, "recipe.yaml")
    storage.write_text(recipe_path, yaml.safe_dump(raw, sort_keys=False))
    seconds = time.time() - t0
    storage.write_json(storage.join(out, "retune.json"), {
        "from": storage.absolute(run), "set": sets, "recipe": recipe_file, "changed_documents": changed,
        "recomputed_documents": walk.recomputed, "reresolved_documents": walk.reresolved,
        "files_copied": copied, "files_written": len(files) - copied, "inexact": sorted(walk.inexact), "seconds": round(seconds, 3),
    })
    write_dataset_card(out, sorted(files))
    storage.write_json(storage.join(out, storage.MANIFEST), {  # last: readers trust what it lists
        "seconds": seconds, "files": sorted(files), "ledger": "ledger.json", "shards": "shards.jsonl",
        "recipe": "recipe.json", "retuned_from": storage.absolute(run)})
    return RetuneResult(out, ledger, seconds, changed, walk.recomputed + walk.reresolved, sorted(walk.inexact), recipe_path)
