"""Yield: what relaxing each rule would add, measured on the run's stored signals.

For every numeric decision setting of a stage (the settings `refinery retune` can change:
`stages/decision_settings.py`), the stage is rebuilt with the setting moved and asked to
decide again (`Stage.redecide`) for the documents it rejected, all
other settings fixed (a document whose C4-cleaned text the quality stage would now measure is
measured again, as `refinery retune` does). Relaxing one threshold never rejects a document that
passed, so the gain is the rejected documents that now pass. The stage's own decision is exact; what the later stages
would do with the documents they never saw is estimated from what they kept of those they did see
(bytes), and tokens from the kept text's tokens per byte. `refinery retune` gives the exact answer
for a chosen setting.

The stage's measurements of the documents it measures again are kept in
`report/yield_measures/LABEL.parquet`, keyed by a hash of what they depend on (the stage's
measuring settings, the text, its language, which text the rules after C4 see): the report of a run
and of every run retuned from it reuse them (`refinery retune` writes a report; measuring is most of
the yield section's cost), and only documents never measured are measured.

A step is one unit for integer settings and 10% of the value for the others (each float of a list
such as `top_n_grams`), except upwards from a share or probability (a float in [0, 1]) that five
such steps would carry past 1: there a step is a fifth of the way to 1, so no step leaves the
signal's range. The direction is the one that admits
more documents. The curve goes 1, 2, 3 and 5 steps, then the rule turned off.
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pipeline import storage
from pipeline.report.scan import recipe_stages, shard_of
from stages import registry
from stages.base import TIME_LIMIT
from stages.decision_settings import allowed, dotted_keys

STEPS = (1, 2, 3, 5)
MEASURES = "yield_measures"  # report/yield_measures/<label>.<signals>.<part>.parquet: measurements to reuse


@dataclass
class Point:
    value: Any
    docs: int = 0  # documents the stage now keeps in addition
    bytes: int = 0
    final_bytes: float = 0.0  # estimated, after the later stages
    final_tokens: float = 0.0
    by_source: dict[str, int] = field(default_factory=dict)  # documents added
    by_lang: dict[str, int] = field(default_factory=dict)
    by_shard: dict[str, float] = field(default_factory=dict)  # shard number -> tokens added (est.), for the bootstrap


@dataclass
class RuleYield:
    stage: str  # label
    key: str  # setting below the stage, dotted
    current: Any
    column: str | None
    points: list[Point]  # STEPS (the first: one step looser), then "off"
    freed: list[str] = field(default_factory=list)  # of the ids it alone rejected (off frees them), the NEAR nearest its threshold

    @property
    def name(self) -> str:
        return f"{self.stage}.{self.key}"


def _numeric(v: Any) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    if isinstance(v, (int, float)):
        return True
    return isinstance(v, (list, tuple)) and bool(v) and all(
        isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[1], (int, float)) for x in v)


def _move(v: Any, steps: int, sign: int) -> Any:
    if isinstance(v, (list, tuple)):
        return [[n, _move(t, steps, sign)] for n, t in v]
    if isinstance(v, int):
        return max(0, v + sign * steps)
    if isinstance(v, float) and 0 <= v <= 1 and sign > 0 and v * (1 + 0.1 * STEPS[-1]) > 1:
        # a share or a probability that 10% steps would carry past 1 (0.95 became 1.045, a threshold
        # no signal reaches): a step is a fifth of the way to 1, the last step 1 itself
        return min(1.0, v + (1.0 - v) * 0.2 * steps)
    return max(0.0, v * (1 + sign * 0.1 * steps)) if v else max(0.0, sign * 0.1 * steps)


def _off_values(v: Any, sign: int) -> list[Any]:
    """Ways to turn a rule off: null where the config allows it, else the far end of the range."""
    if isinstance(v, (list, tuple)):
        return [[]]
    if sign < 0:
        return [None, 0]
    return [None, 1.0, 10**18] if isinstance(v, float) and v <= 1 else [None, 10**18]


def _set(cfg: dict, key: str, value: Any) -> dict:
    """`cfg` with `key` (dotted) set to `value`: the dicts on the key's path are copied, the rest
    shared (a config is validated from it, never changed; a deep copy of the quality stage's config,
    stop-word lists and all, cost the section a tenth of a CPU-second)."""
    out = dict(cfg)
    node = out
    parts = key.split(".")
    for p in parts[:-1]:
        node[p] = dict(node[p])
        node = node[p]
    node[parts[-1]] = value
    return out


class PartReader:
    """A run's committed part files for one report, read one file at a time, nothing read kept (the
    yield section goes over a stage's files a few times rather than hold a crawl's rejects at once).

    `text_bytes`: file -> each row's text length in UTF-8 bytes, as the report's scan measured it
    (`RunScan.text_bytes`), for the `_bytes` column: the yield section needs the sizes of every
    rejected document but the texts of few (read again, language ID's rejects cost 0.6 s at 200 MB)."""

    def __init__(self, run_dir: str, text_bytes: dict[str, Any] | None = None):
        self.run_dir = run_dir
        self._listed: dict[str, list[str]] = {}
        self._names: dict[str, set[str]] = {}
        self._text_bytes = text_bytes or {}

    def files(self, folder: str) -> list[str]:
        if folder not in self._listed:
            self._listed[folder] = sorted(storage.committed_files(self.run_dir, folder))
        return self._listed[folder]

    def _has(self, f: str) -> set[str]:
        if f not in self._names:
            self._names[f] = set(storage.read_parquet_schema(f).names)
        return self._names[f]

    def _columns(self, f: str, columns: list[str]) -> pa.Table:
        """The file's non-text columns asked for (absent ones: nulls)."""
        pf = storage.open_parquet(f)
        have = pf.read(columns=[c for c in dict.fromkeys(columns) if c in self._has(f) and c != "text"])
        return pa.table({c: have.column(c) if c in have.column_names else pa.nulls(pf.metadata.num_rows, pa.string())
                         for c in columns})

    def _sizes(self, f: str, n: int) -> pa.Array:
        """Each row's text length in UTF-8 bytes (0 for no text): from the scan, else read."""
        known = self._text_bytes.get(f)
        if known is not None and len(known) == n:
            return pa.array(known, pa.int64())
        if "text" not in self._has(f):
            return pa.array([0] * n, pa.int64())
        text = storage.read_parquet(f, columns=["text"]).column("text")
        return pc.cast(pc.fill_null(pc.binary_length(text), 0), pa.int64()).combine_chunks()

    def texts_at(self, f: str, rows) -> list[str | None]:
        """The texts of the file's `rows` (any order, repeats), reading only the row groups holding them."""
        if "text" not in self._has(f):
            return [None] * len(rows)
        pf = storage.open_parquet(f)
        starts = np.cumsum([0] + [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)])
        groups, back = np.unique(np.searchsorted(starts, rows, side="right") - 1, return_inverse=True)
        offset = np.cumsum([0] + [starts[g + 1] - starts[g] for g in groups])  # of each group read
        text = pf.read_row_groups(groups.tolist(), columns=["text"]).column("text")
        return text.take(pa.array(offset[back] + np.asarray(rows) - starts[groups[back]], pa.int64())).to_pylist()

    def part(self, f: str, columns: list[str], want: pa.Array | None = None) -> pa.Table | None:
        """One file's `columns` (only the rows whose id is in `want`, if given; None: none is)
        and `_part` (its shard number). `_bytes`: the text's length in UTF-8 bytes."""
        mask = None
        if want is not None:
            mask = pc.is_in(self._columns(f, ["id"]).column("id"), value_set=want)
            if not pc.any(mask).as_py():
                return None
        t = self._columns(f, [c for c in columns if c not in ("text", "_bytes")])
        if "_bytes" in columns:
            t = t.append_column("_bytes", self._sizes(f, t.num_rows))
        if mask is not None:
            t = t.filter(mask)
        if "text" in columns:
            rows = np.arange(t.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            t = t.append_column("text", pa.array(self.texts_at(f, rows), pa.string()))
        return t.select(columns).append_column("_part", pa.array([_part_name(f)] * t.num_rows, pa.string()))

    def table(self, folders: list[str], columns: list[str], ids: list[str] | None = None) -> pa.Table | None:
        """`part` of every committed part file of the folders, in one table."""
        want = pa.array(ids, pa.string()) if ids is not None else None
        tables = [t for folder in folders for f in self.files(folder) if (t := self.part(f, columns, want)) is not None]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None

    def texts(self, ids: list[str]) -> dict[str, str | None]:
        """id -> text, from wherever in the run (kept or rejects) each document is."""
        if not ids:
            return {}
        folders = ["kept"] + [f"rejects/{s}" for s in storage.listdir(storage.join(self.run_dir, "rejects"))]
        t = self.table(folders, ["id", "text"], ids=sorted(set(ids)))
        return {} if t is None else dict(zip(t.column("id").to_pylist(), t.column("text").to_pylist()))


def _part_name(f: str) -> str:
    shard = shard_of(f)
    return storage.basename(f) if shard is None else str(shard)


@dataclass
class _Search:
    """One setting's search, summed part by part: the ways off (the one freeing most is "off"), 5 steps
    each way on what "off" frees (the direction), then the steps."""

    key: str
    value: Any
    offs: list[Point]
    off: Point | None = None
    far: dict[int, Point] = field(default_factory=lambda: {+1: Point(None), -1: Point(None)})  # 5 steps each way
    steps: list[Point] = field(default_factory=list)
    near: list[tuple[float, str]] = field(default_factory=list)  # (distance to the threshold, id) of the freed


def rule_yields(run_dir: str, recipe: dict, ledger, tokens_per_byte: float,
                reuse: list[str] | None = None, reader: PartReader | None = None) -> list[RuleYield]:
    """Gain from relaxing each numeric decision setting of each per-document stage. `reuse`: runs
    whose `report/yield_measures/` may hold measurements (the run itself, the run it was retuned
    from); the measurements of this report are written to the run's own.

    Memory: a stage's rejects are read one part file at a time, in three passes (the ways off; the
    direction; the steps: each needs the sums of the one before), each part reduced to the sums a
    `Point` holds before the next is read: nothing held grows with the run but the per-shard sums."""
    reader = reader or PartReader(run_dir)
    labels = ledger.stage_order[1:]  # after `read`
    out: list[RuleYield] = []
    last = ledger.total(ledger.stage_order[-1]).kept_bytes
    for label, stage in recipe_stages(recipe).items():
        if stage.needs_all_documents or label not in labels:
            continue
        cls = type(stage)
        base = stage.config.model_dump()
        fields = [f.name for f in stage.signal_fields()]
        cols = ["id", "source", "kind", "_bytes", "drop_reason"] + (["lang"] if "lang" not in fields else []) + fields
        survival = last / here if (here := ledger.total(label).kept_bytes) else 0.0
        fp = _fingerprint(stage)
        searches = [_Search(k, v, [Point(x) for x in {repr(x): x for x in _off_values(v, -1) + _off_values(v, +1)}.values()])
                    for k, v in dotted_keys(base).items() if _numeric(v) and allowed(stage.name, k)]
        built: dict[tuple[str, str], Any] = {}  # (key, repr(value)) -> the stage with the setting moved
        seen = 0
        for phase in range(3) if searches else ():
            for f in reader.files(f"rejects/{label}") if seen or not phase else ():
                rejected = reader.part(f, cols)
                applies = [stage.applies_to(s, k) and why != TIME_LIMIT  # timed out: never measured
                           for s, k, why in zip(*(rejected.column(c).to_pylist() for c in ("source", "kind", "drop_reason")))]
                table = rejected.filter(pa.array(applies, pa.bool_()))
                seen += table.num_rows if phase == 0 else 0
                if not table.num_rows:
                    continue
                sizes, srcs, langs = (table.column(c).to_pylist() for c in ("_bytes", "source", "lang"))
                texts = (lambda pos: reader.texts_at(f, np.flatnonzero(applies)[pos])) if stage.rewrite_signals else None
                table = table.drop_columns(["_bytes"])
                # the stage's measurements of this part's documents, shared by every setting and pass
                memo = _load_measures((reuse or []) + ([run_dir] if phase else []), label, fp, part := _part_name(f))
                known = len(memo)
                for s in searches:
                    def gain(acc: Point, v: Any, rows: list[int] | None) -> list[int]:
                        """Adds to `acc` what setting `v` frees among the part's `rows` (None: all); the rows freed."""
                        tag = (s.key, repr(v))
                        if tag not in built:
                            try:
                                built[tag] = cls(cls.Config.model_validate(_set(base, s.key, v)))
                            except Exception:
                                built[tag] = None
                        if built[tag] is None or rows == []:
                            return []
                        where = range(table.num_rows) if rows is None else rows
                        sub = table if rows is None else table.take(pa.array(rows, pa.int64()))
                        freed = [i for i, r in zip(where, _decide(built[tag], sub, memo, texts, list(where))) if r is None]
                        acc.docs, acc.bytes = acc.docs + len(freed), acc.bytes + sum(sizes[i] for i in freed)
                        for i in freed:
                            acc.by_source[srcs[i]] = acc.by_source.get(srcs[i], 0) + 1
                            acc.by_lang[langs[i] or "-"] = acc.by_lang.get(langs[i] or "-", 0) + 1
                            acc.by_shard[part] = acc.by_shard.get(part, 0.0) + sizes[i] * survival * tokens_per_byte
                        return freed

                    if phase == 0:  # every way off, over every rejected document it can free
                        failing = stage.can_free(s.key, table)
                        for p in s.offs:
                            gain(p, p.value, failing)
                        continue
                    if not s.off.docs:
                        continue
                    # a looser setting frees a subset of what "off" frees: the steps are tried on that
                    subset = gain(Point(None), s.off.value, stage.can_free(s.key, table))
                    if phase == 1:
                        for sign, p in s.far.items():
                            gain(p, _move(s.value, STEPS[-1], sign), subset)
                        s.near = _nearest(s.near, table, stage.threshold_signals.get(s.key), s.value, subset)
                    else:
                        for p in s.steps:
                            gain(p, p.value, subset)
                if len(memo) > known or phase == 2:
                    _save_measures(run_dir, label, memo, part)
            for s in searches if seen else ():
                if phase == 0:
                    s.off = max(s.offs, key=lambda p: p.docs)
                elif phase == 1:
                    up, down = s.far[+1].docs, s.far[-1].docs  # equal: neither frees anything; go by the name
                    sign = (+1 if up > down else -1) if up != down else -1 if s.key.rsplit(".", 1)[-1].startswith("min") else +1
                    s.steps = [Point(_move(s.value, n, sign)) for n in STEPS]
        for s in searches if seen else ():
            points: list[Point] = []
            for p in s.steps + [s.off]:
                p.final_bytes, p.final_tokens = p.bytes * survival, p.bytes * survival * tokens_per_byte
                if len(points) < len(STEPS) and points and p.docs < points[-1].docs:
                    p = points[-1]  # past the setting's valid range: stays where it was
                points.append(p)
            s.off.value = "off"
            out.append(RuleYield(label, s.key, s.value, stage.threshold_signals.get(s.key), points,
                                 [i for _, i in s.near]))
    return out


NEAR = 3  # rejected documents each rule shows nearest its threshold (`near_misses`)


def _nearest(best: list[tuple[float, str]], table: pa.Table, column: str | None, current: Any,
             rows: list[int]) -> list[tuple[float, str]]:
    """`best` with the `rows` of `table` nearest `current` on `column`, the NEAR nearest (by
    distance, then id) kept, as `near_misses` orders them."""
    kind = table.schema.field(column).type if column in table.column_names else pa.null()
    if not rows or not isinstance(current, (int, float)) or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return best
    sub = table.select(["id", column]).take(pa.array(rows, pa.int64()))
    sub = sub.filter(pc.is_valid(sub.column(column)))
    dist = pc.abs(pc.subtract(pc.cast(sub.column(column), pa.float64()), float(current))).to_pylist()
    return sorted(best + [(d, i) for d, i in zip(dist, sub.column("id").to_pylist()) if d == d])[:NEAR]


def _fingerprint(stage) -> str:
    """What a stage's measurements depend on besides the document: its name, the settings that
    change what it measures (not the decision settings) and its code and model files (a hash of
    the stage's module or package and of the shipped models' sizes and times), so a measurement
    stored by another version of the code never matches."""
    measuring = {k: v for k, v in dotted_keys(stage.config.model_dump()).items() if not allowed(stage.name, k)}
    return json.dumps([stage.name, _code_hash(type(stage)), measuring], sort_keys=True, default=str)


def _code_hash(cls: type) -> str:
    path = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not path:
        return ""
    here = os.path.dirname(path)
    files = [os.path.join(here, f) for f in sorted(os.listdir(here)) if f.endswith(".py")] \
        if os.path.basename(here) != "stages" else [path]  # a package's every module, else the module
    h = xxhash.xxh3_64()
    for f in files:
        with open(f, "rb") as fh:
            h.update(fh.read())
    models = os.path.join(os.path.dirname(registry.__file__), "models")
    for f in sorted(os.listdir(models)) if os.path.isdir(models) else []:
        st = os.stat(os.path.join(models, f))
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _text_digest(text: str | None) -> bytes:
    return xxhash.xxh3_128_digest((text or "").encode("utf-8", "surrogatepass"))


def _measure_key(fingerprint: str, signals: list[str], digest: bytes, context: bytes) -> bytes:
    """The key of a measurement: the stage's fingerprint, the signals, what else the measurement
    depends on (`Stage.measure_context`) and the text (its `_text_digest`, computed once per
    document: the report asks for the same documents setting after setting)."""
    h = xxhash.xxh3_128(fingerprint.encode("utf-8"))
    h.update(",".join(signals).encode("utf-8"))
    h.update(b"\x1f" + context + b"\x1f")
    h.update(digest)
    return h.digest()


def _load_measures(runs: list[str], label: str, fingerprint: str, part: str) -> dict:
    """Measurements of one part's documents stored by earlier reports, one file per part and set of
    signals measured (a setting such as `dup_n_grams` changes the set); keys include the fingerprint
    and the signals, so stale ones never match, and a missing or unreadable file is only a cache miss."""
    memo: dict = {"_fp": fingerprint, "_schemas": {}, "_digests": {}}
    for run in runs:
        folder = storage.join(run, "report", MEASURES)
        try:
            names = sorted(n for n in storage.listdir(folder) if storage.basename(n).startswith(f"{label}.")
                           and storage.basename(n).endswith(f".{part}.parquet")) if storage.exists(folder) else []
            for name in names:
                t = storage.read_parquet(storage.join(folder, storage.basename(name)))
                keys = t.column("_key").to_pylist()
                t = t.drop_columns(["_key"])
                memo["_schemas"].setdefault(tuple(t.column_names), t.schema)
                for k, row in zip(keys, t.to_pylist()):
                    memo.setdefault(k, row)
        except Exception:  # a cache: never a reason to fail the report
            continue
    return memo


def _save_measures(run_dir: str, label: str, memo: dict, part: str) -> None:
    for names, schema in memo["_schemas"].items():
        keys = [k for k, row in memo.items() if isinstance(k, bytes) and tuple(row) == names]
        if not keys:
            continue
        tag = xxhash.xxh3_64_hexdigest(",".join(names).encode("utf-8"))[:12]
        t = pa.Table.from_pylist([memo[k] for k in keys], schema=schema)
        storage.write_parquet(storage.join(run_dir, "report", MEASURES, f"{label}.{tag}.{part}.parquet"),
                              t.append_column("_key", pa.array(keys, pa.binary())))


def _decide(st, table: pa.Table, memo: dict, texts=None, rows: list[int] | None = None,
            chunk: int = 2048) -> list[str | None]:
    """The stage's decisions from the stored signals (`Stage.redecide`). A document it would now keep
    and whose text it rewrote is measured again from the original text its rejects row holds, as
    `refinery retune` does (`Stage.measure_again`: once every rule up to C4 passes, FineWeb and the
    classifier see C4's cleaned text, not the original).

    `memo` (`_load_measures`) keeps those measurements across settings: what the stage measures does not depend on a
    decision setting, except what `Stage.measure_context` names (which text the rules after C4 see,
    the language), which is part of the key; each setting then re-decides (`redecide`).

    `texts`, `rows`: when `table` has no text column, `texts(positions) -> their texts`, and the
    position of each row of `table`. Texts are read, and documents measured, `chunk` at a time."""
    t, reasons, _ = st.redecide(table)
    redo = st.measure_again(t, reasons)  # as retune: what it now keeps, measured as kept
    if redo:
        part = t.take(pa.array(redo, pa.int64()))
        fp, schemas = memo["_fp"], memo["_schemas"]
        if "text" not in part.column_names and texts is not None:  # digests by row of `texts`, computed once
            known = memo["_digests"]
            at = [rows[k] for k in redo]
            new = [r for r in dict.fromkeys(at) if r not in known]
            for c in range(0, len(new), chunk):
                known.update(zip(new[c:c + chunk], map(_text_digest, texts(new[c:c + chunk]))))
            digests = [known[r] for r in at]
        else:
            digests = [_text_digest(x) for x in part.column("text").to_pylist()]
        signals = [f.name for f in st.signal_fields()]
        keys = [_measure_key(fp, signals, d, ctx) for d, ctx in zip(digests, st.measure_context(part))]
        part = part.drop_columns([c for c in signals if c in part.column_names])
        todo = [k for k, key in enumerate(keys) if key not in memo]
        for c in range(0, len(todo), chunk):
            sub = part.take(pa.array(todo[c:c + chunk], pa.int64()))
            if "text" not in sub.column_names:  # the text itself only for what is measured now
                sub = sub.append_column("text", pa.array(texts([rows[redo[k]] for k in todo[c:c + chunk]]), pa.string()))
            ann = st.annotate(sub).select(signals)
            schemas.setdefault(tuple(signals), ann.schema)
            for k, row in zip(todo[c:c + chunk], ann.to_pylist()):
                memo[keys[k]] = row
        got = pa.Table.from_pylist([memo[key] for key in keys], schema=schemas[tuple(signals)])
        measured = part
        for c in got.column_names:
            measured = measured.append_column(got.schema.field(c), got.column(c))
        for k, r in zip(redo, st.redecide(measured)[1]):
            reasons[k] = r
    return reasons


def near_misses(run_dir: str, stages: list[str], label: str, column: str, current: float, freed: list[str],
                k: int = 3, reader: PartReader | None = None) -> tuple[list[dict], list[dict]]:
    """(just outside, just inside): documents only this rule rejected (`freed`) and documents that
    passed the stage, nearest to the threshold on `column`, with the value (`fill_texts` adds their
    texts, for many calls at once)."""
    if not isinstance(current, (int, float)) or isinstance(current, bool):
        return [], []
    reader = reader or PartReader(run_dir)
    cols = ["id", "url", "source", column]  # texts only for the few chosen, below

    def nearest(folders: list[str], only: list[str] | None) -> list[dict]:
        """The k nearest over the folders' files, read one at a time."""
        best = None
        for f in (f for folder in folders for f in reader.files(folder)):
            t = reader.part(f, cols).drop_columns(["_part"])
            if not (pa.types.is_integer(t.column(column).type) or pa.types.is_floating(t.column(column).type)):
                continue
            t = t.filter(pc.is_valid(t.column(column)))
            if only is not None:
                t = t.filter(pc.is_in(t.column("id"), value_set=pa.array(only, pa.string())))
            t = t if best is None else pa.concat_tables([best, t], promote_options="permissive")
            dist = pc.abs(pc.subtract(pc.cast(t.column(column), pa.float64()), float(current)))
            best = t.take(pc.sort_indices(pa.table({"d": dist, "id": t.column("id")}),
                                          sort_keys=[("d", "ascending"), ("id", "ascending")]).slice(0, k))
        return best.to_pylist() if best is not None else []

    later = [f"rejects/{s}" for s in (stages[stages.index(label) + 1:] if label in stages else [])]
    return nearest([f"rejects/{label}"], freed), nearest(["kept"] + later, None)


def fill_texts(reader: PartReader, rows: list[dict], chars: int = 300) -> None:
    """Each row's `text`: the first `chars` characters of its document's text, read in one pass."""
    texts = reader.texts([r["id"] for r in rows])
    for r in rows:
        r["text"] = (texts.get(r["id"]) or "")[:chars]


def duplicate_pairs(run_dir: str, stages: list[str], label: str, k: int = 3, chars: int = 300,
                    reader: PartReader | None = None) -> list[dict]:
    """Rejected near/exact duplicates with the document they duplicate (`drop_detail`) and the
    Jaccard similarity of their word 5-gram shingle sets (stages/dedup/minhash.py)."""
    from stages.dedup.minhash import jaccard_sorted, shingle_set64

    reader = reader or PartReader(run_dir)
    rows: list[dict] = []  # the k first by id, over the files read one at a time
    for f in reader.files(f"rejects/{label}"):
        t = reader.part(f, ["id", "url", "drop_detail"])
        t = t.filter(pc.is_valid(t.column("drop_detail"))).sort_by("id").slice(0, k)
        rows = sorted(rows + t.to_pylist(), key=lambda r: r["id"])[:k]
    want = sorted({r["drop_detail"] for r in rows})
    texts = reader.texts([r["id"] for r in rows] + want)
    found = reader.table(["kept"] + [f"rejects/{s}" for s in stages], ["id", "url"], ids=want) if want else None
    url_of = {} if found is None else dict(zip(found.column("id").to_pylist(), found.column("url").to_pylist()))
    out = []
    for r in rows:
        text, of = texts.get(r["id"]), r["drop_detail"]
        jac = jaccard_sorted(shingle_set64(text), shingle_set64(texts.get(of))) if of in url_of else None
        out.append({"id": r["id"], "url": r["url"], "text": (text or "")[:chars], "of_id": of, "of_url": url_of.get(of),
                    "of_text": (texts.get(of) or "")[:chars] if of in url_of else None,
                    "jaccard": None if jac is None or math.isnan(jac) else jac})
    return out
