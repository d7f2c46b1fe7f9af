"""The stage contract: a small class with its config, its signals and its reasons.

A stage is configured from the recipe, loads its model or state once per worker (`setup`), and
for each Arrow batch of live documents:
  1. `annotate(batch) -> batch`: adds its signal columns (and may rewrite `text`, as PII masking does);
  2. `decide(batch) -> reasons`: one drop reason per row, None to keep.
The runner (pipeline/) composes stages, splits rejected rows to rejects and keeps the ledger.
Stages never import Ray.

A global stage (`needs_all_documents = True`, e.g. deduplication) runs as a barrier: all
documents that survived the earlier stages are available before it decides. See GlobalStage.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Sequence

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field


# The one reason the runner gives on any per-document stage's behalf: the document took longer than
# the recipe's stage_time_limit in it (pipeline/engine/time_limit.py). Its signals are null, so a
# retune or the report's yields keep it rejected rather than re-deciding it from nothing.
TIME_LIMIT = "time_limit_exceeded"


class StageConfig(BaseModel):
    """Options every stage has; each stage subclasses this with its own parameters."""

    model_config = ConfigDict(extra="forbid")

    sources: list[str] | None = Field(None, description="apply only to these sources (recipe source names); null: every source")
    skip_kinds: list[str] | None = Field(
        None, description="source kinds that pass through unexamined (e.g. code for langid); null: the stage's default")


class Stage:
    name: ClassVar[str] = ""
    Config: ClassVar[type[StageConfig]] = StageConfig
    reasons: ClassVar[tuple[str, ...]] = ()
    needs_all_documents: ClassVar[bool] = False
    default_skip_kinds: ClassVar[tuple[str, ...]] = ()
    # The config keys that only move this stage's decision (dotted below its config; `x.*` is any
    # key directly below `x`): `refinery retune` and the report's yields may change them and
    # re-decide every document from the signals the run stored. Any other key changes what the
    # stage measures or writes and needs a full run. None: a retune may change nothing of it.
    decision_keys: ClassVar[tuple[str, ...] | None] = None
    # The signals that say this stage rewrote a document's text (any of them non-zero): C4's
    # removed lines, PII's masked matches.
    rewrite_signals: ClassVar[tuple[str, ...]] = ()
    # The settings that are thresholds on one of its signal columns: dotted setting -> column. The
    # report marks them on the column's histogram and names the column in the yield table.
    threshold_signals: ClassVar[dict[str, str]] = {}
    # Time per document bounded by its size, no model or C parser that can hang (the URL filter):
    # the stage runs in the worker process itself, not in the stage_time_limit child, so its
    # lists are held once per worker, where a reader's `rejects_before_text` also asks it.
    runs_in_worker: ClassVar[bool] = False

    def __init__(self, config: StageConfig | None = None, **kwargs: Any):
        self.config = config if config is not None else self.Config(**kwargs)
        self._ready = False

    # -- contract ---------------------------------------------------------------------------
    def signal_fields(self) -> list[pa.Field]:
        """The columns this stage adds, with their types (nullable)."""
        return []

    def signal_descriptions(self) -> dict[str, str]:
        """Signal name -> what it measures, for `refinery stages` (names may be patterns with {n})."""
        return {}

    def setup(self) -> None:
        """Load models or state. Called once per worker before the first batch."""

    def annotate(self, batch: pa.Table) -> pa.Table:
        """Return `batch` with this stage's signal columns added."""
        return batch

    def decide(self, batch: pa.Table) -> Sequence[str | None]:
        """One drop reason per row (from `reasons`), or None to keep it."""
        return [None] * batch.num_rows

    def reason_signals(self) -> dict[str, str]:
        """Reason -> the one signal column whose value decides it (the report's histogram of that
        signal shows the documents rejected for this reason apart from the stage's other rejects);
        {} when no reason reads a single signal."""
        return {}

    def flagged_span(self, row: dict[str, Any]) -> tuple[int, int] | None:
        """Where in a rejected document's text its reason applies, as character offsets
        [start, end) into `row["text"]` (`row`: the rejected row's text, signals, `lang`,
        `drop_reason`, `drop_detail`), for the report's audit samples. None: the reason is about
        the whole document, or where is not known. Called on a few sampled documents only, after
        `setup` may not have run: load what it needs itself."""
        return None

    def drop_details(self, batch: pa.Table, reasons: Sequence[str | None]) -> Sequence[str | None] | None:
        """Optional: one `drop_detail` per row of the annotated `batch` (None where there is none),
        e.g. which benchmark item a document contains; read from the batch's signals only, so a
        retune gives the same. None: no details."""
        return None

    def params(self) -> dict[str, Any]:
        """Parameters worth recording in the run's ledger (e.g. derived ones); {} for none."""
        return {}

    # -- re-deciding from stored signals (`refinery retune`, the report's yields) ------------
    def rescore(self, batch: pa.Table) -> tuple[pa.Table, list[bool]]:
        """`batch` (stored signals) with the signals this config derives from them re-derived (the
        quality stage's failed rules and scores), and per row whether the text a later part of the
        stage measured is now another (the quality stage's C4 chain). Default: as stored."""
        return batch, [False] * batch.num_rows

    def redecide(self, batch: pa.Table) -> tuple[pa.Table, list[str | None], list[bool]]:
        """Decide again from stored signals under this config: `rescore`, then `decide`. Returns the
        rescored batch, one reason per row and `rescore`'s per-row flag."""
        batch, changed = self.rescore(batch)
        return batch, list(self.decide(batch)), changed

    def measure_again(self, batch: pa.Table, reasons: Sequence[str | None]) -> list[int]:
        """Rows of `batch` (stored signals) now kept (`reasons` None) whose text this stage rewrote:
        kept, a document carries the text the stage leaves, so it is measured again from the text it
        entered with."""
        kept = [k for k, r in enumerate(reasons) if r is None]
        if not self.rewrite_signals or not kept:
            return []
        cols = [c for c in self.rewrite_signals if c in batch.column_names]  # only what `rewrote` reads
        rows = batch.select(cols).take(pa.array(kept, pa.int64())).to_pylist()
        return [k for k, row in zip(kept, rows) if self.rewrote(row)]

    def measure_context(self, batch: pa.Table) -> list[bytes]:
        """Per row, what a measurement depends on besides the text and the measuring settings (part
        of the key the report's yields store measurements under). Default: nothing."""
        return [b"0\x1f"] * batch.num_rows

    def can_free(self, key: str, batch: pa.Table) -> list[int] | None:
        """Rows of rejected `batch` that relaxing or turning off setting `key` can free; None: any."""
        return None

    def retune_refusal(self, changed: list[str]) -> tuple[str, str] | None:
        """(key, why) when this config cannot re-decide from stored signals with the decision
        settings `changed` moved (e.g. the setting also chooses what is measured); None: it can."""
        return None

    def threshold_marks(self) -> list[tuple[str, str, float]]:
        """(signal column, setting, value) for each threshold of this config (`threshold_signals`;
        a per-source or per-language mapping gives one mark per entry, `key[entry]`)."""
        cfg = self.config.model_dump()
        out = []
        for key, col in self.threshold_signals.items():
            node: Any = cfg
            for k in key.split("."):
                node = node.get(k) if isinstance(node, dict) else None
            items = [(f"{key}[{k}]", v) for k, v in node.items()] if isinstance(node, dict) else [(key, node)]
            out += [(col, k, float(v)) for k, v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return out

    def unexamined(self, batch: pa.Table) -> int:
        """How many rows of an annotated batch the stage passed unexamined (a URL filter's documents
        without a URL): booked as skipped in the ledger."""
        return 0

    def rejects_before_text(self) -> "Callable[[str | None], bool] | None":
        """A stage that decides on a document's URL alone: a predicate on the URL, True when the
        stage rejects the document whatever its text (and whatever a retune changes). A reader may
        then skip extracting the page (pipeline/sources/url_gate.py). None: the stage needs the text."""
        return None

    # -- helpers the runner uses -------------------------------------------------------------
    def ensure_setup(self) -> None:
        if not self._ready:
            self.setup()
            self._ready = True

    def skip_kinds(self) -> tuple[str, ...]:
        if self.config.skip_kinds is not None:
            return tuple(self.config.skip_kinds)
        return self.default_skip_kinds

    @classmethod
    def decision_only(cls, key: str) -> bool:
        """Is the dotted config `key` a setting that only moves the decision (`decision_keys`)?"""
        for pat in cls.decision_keys or ():
            if pat == key or (pat.endswith(".*") and key.startswith(pat[:-1]) and key.count(".") == pat.count(".")):
                return True
        return False

    def rewrote(self, row: dict) -> bool:
        """Did this stage rewrite the text of the document whose signals are `row`?"""
        return any(row.get(c) for c in self.rewrite_signals)

    def applies_to(self, source: str, kind: str) -> bool:
        if self.config.sources is not None and source not in self.config.sources:
            return False
        return kind not in self.skip_kinds()



class GlobalStage(Stage):
    """A stage that must see every surviving document before deciding (a barrier).

    The runner streams every live document through `annotate` (in parallel, like any stage: this
    is where per-document keys such as hashes or MinHash signatures are computed), writes the
    annotated batches as spill files (one Parquet file per input shard, keeping the columns
    `annotate` added, including the private ones listed by `spill_fields`), then calls `resolve`
    once with those files and an executor for parallel work.

    Storage contract. Spill files, `work_url` and the decision files are local paths or fsspec
    URLs (s3://, gs://, memory://...) below the run's output: nodes of a cluster may share no disk,
    and object stores have no directories and no rename. Before calling `resolve` the runner sets
    `self.work_url` to a fresh location under the output (OUT/_work/LABEL/resolve-<attempt>),
    which every worker of the run can read and write; put intermediates and decision files there
    (write each file whole, read with fsspec or pyarrow's filesystem support; never os.path on
    it). `pipeline.storage` shows how the runner does it, but stages must not import pipeline:
    use `fsspec.core.url_to_fs(url)` directly. The runner removes OUT/_work when the run ends.

    `resolve` returns a list of decision Parquet files, one per spill file, in the same order,
    each with exactly the rows of its spill file in the same order, and columns `id`,
    `drop_reason` (null = keep), `drop_detail` plus the stage's signal columns (e.g. cluster id
    and size). So each shard joins only its own decisions; no table of all documents is ever
    gathered. A resolve that is killed is simply run again with a new `work_url`.
    """

    needs_all_documents = True
    work_url: str | None = None  # set by the runner before `resolve`; see the storage contract
    # Barrier groups (docs/dedup.md "One pass for consecutive global stages"): consecutive global
    # stages share one spill file per shard (every member's keys) and resolve in recipe order.
    # A stage that can be a later member sets `accepts_dropped_before`: the runner then sets
    # `dropped_before` before `resolve`, per spill file the decision files of the earlier members,
    # and the stage treats rows any of them drops as absent (`stages.dedup.io.live_rows`), so it
    # decides as if it had been given only their survivors. A stage that rewrites `text`
    # (`rewrites_text`) ends its group: a later stage's keys would be computed on the old text.
    accepts_dropped_before: bool = False
    rewrites_text: bool = False
    dropped_before: list[list[str]] | None = None
    # `annotate` adds only `spill_fields()` (private keys, no signal column). Then, as a later
    # member of a group, its keys are computed after the earlier members resolved, for their
    # survivors only (no MinHash for exact duplicates), into an overlay of each spill file (same
    # rows), which it resolves on (pipeline/engine/barrier.py, `resolve_group`).
    keys_private: bool = False

    # Its keys and its `resolve` read the document's text beyond any stored signal (MinHash
    # shingles, Jaccard verification): a retune cannot reuse them for a text a later stage rewrote.
    reads_text: ClassVar[bool] = False

    def spill_fields(self) -> list[pa.Field]:
        """Columns `annotate` adds that only `resolve` needs: kept in spill files, not in outputs."""
        return []

    def group_keys(self) -> list[str]:
        """The columns (stored signals or `spill_fields`) linking the documents it decides together,
        so a retune re-resolves only the groups holding a changed document; []: every document
        is decided again whenever the documents reaching it change."""
        return []

    def ranks_by(self) -> str | None:
        """The signal column that chooses a group's survivor under this config, if any."""
        return None

    def resolve(self, spill_files: list[str], executor: "Executor") -> list[str]:  # pragma: no cover
        raise NotImplementedError


class Executor:
    """Parallel map handed to global stages, so they can fan out without importing Ray.

    `map(fn, items)` applies a picklable function to each item and returns results in order.
    The runner supplies a Ray-backed one; `LocalExecutor` runs in-process (tests, 1 worker).
    """

    def map(self, fn, items: Sequence[Any]) -> list[Any]:  # pragma: no cover
        raise NotImplementedError

    @property
    def parallelism(self) -> int:
        return 1


class LocalExecutor(Executor):
    def map(self, fn, items):
        return [fn(x) for x in items]
