"""The decontamination stage: documents that contain a benchmark's test items are dropped, or the
overlapping text is cut out of them.

GPT-3 (Brown et al. 2020, appendix C) and Llama 2 (Touvron et al. 2023, appendix A.6) call a
document contaminated when it shares a normalised 13-gram with a test item; datatrove's
`NGramsDecontFilter` and NeMo Curator's task decontamination do the same. Here:
  * each benchmark file the recipe names is read once per worker (stages/decontam/benchmarks.py),
    its items normalised and tokenised (stages/decontam/normalise.py: words, or code tokens for
    code benchmarks), and their n-grams hashed into an index (stages/decontam/index.py);
  * each document is normalised the same way and every window of it looked up;
  * `action: drop` (the default) rejects a document that shares at least `min_matches` distinct
    n-grams with one item (and at least `min_coverage` of that item's n-grams) as
    `benchmark_contamination`, the detail naming the benchmark and the item;
    `action: remove` cuts every run of text covered by a matching n-gram out of the document
    instead (Llama 2's token-level view of contamination) and keeps the rest; a document with
    nothing left is rejected.
Signals are stored on every document, so `min_matches` and `min_coverage` can be retuned.
"""
from __future__ import annotations

from typing import Literal, Sequence

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from stages._arrow import set_column
from stages.base import Stage, StageConfig
from stages.decontam.benchmarks import FORMATS, BenchmarkError, read_items
from stages.decontam.index import NgramIndex
from stages.decontam.normalise import TOKENIZERS, WORDS, token_spans, tokens

CONTAMINATED = "benchmark_contamination"


class BenchmarkSpec(BaseModel):
    """One benchmark file: where it is, which fields make up a test item, how to tokenise it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="the benchmark's name, as drop details and signals give it (e.g. gsm8k)")
    format: Literal[FORMATS] = Field("auto", description="auto (by the file name), jsonl, parquet or text")  # type: ignore[valid-type]
    fields: list[str] = Field(default_factory=list, description="the fields that together are one test item, in order "
                                                                "(GSM8K: question, answer; HumanEval: prompt, canonical_solution)")
    id_field: str | None = Field(None, description="the field that names an item (HumanEval: task_id); null: its row number from 0")
    tokenizer: Literal[TOKENIZERS] = Field(WORDS, description="words (prose) or code (the symbols between the words count "
                                                              "too; for code benchmarks)")  # type: ignore[valid-type]
    ngram: int | None = Field(None, ge=1, le=1000, description="n-gram length in words for this benchmark; null: the stage's")
    # last, so that its check sees the keys above
    path: str = Field(min_length=1, description="local path or fsspec URL of its test items: JSONL, Parquet or plain "
                                                "text (one item per line); .gz/.bz2/.xz/.zst decompressed by name")

    @field_validator("path")
    @classmethod
    def _readable(cls, path: str, info: ValidationInfo) -> str:
        # At validation, before anything is written: a benchmark the stage cannot read would make it
        # silently remove nothing.
        d = info.data
        if not {"format", "fields", "id_field"} <= d.keys():
            return path  # one of them is invalid itself: that is the error to report
        try:
            read_items(path, d["fields"], d["id_field"], d["format"])
        except BenchmarkError as exc:
            raise ValueError(str(exc)) from None
        return path


class DecontaminationConfig(StageConfig):
    benchmarks: list[BenchmarkSpec] = Field(
        default_factory=list, description="the benchmark files whose test items must not be in the output (at least one)")
    ngram: int = Field(13, ge=1, le=1000, description="n-gram length in words (GPT-3 and Llama 2: 13); under the code "
                                                      "tokenizer the symbols between the words must match too")
    min_item_tokens: int = Field(
        8, ge=1, description="an item with fewer words is not used (too common to mean contamination); one with at "
                             "least this many but fewer than ngram is matched whole")
    action: Literal["drop", "remove"] = Field(
        "drop", description="drop: reject the document; remove: cut the overlapping text out and keep the rest")
    min_matches: int = Field(1, ge=1, description="drop: distinct n-grams of one item the document must share with it")
    min_coverage: float = Field(
        0.0, ge=0.0, le=1.0, description="drop: fraction of one item's n-grams the document must share with it (0: any)")

    @model_validator(mode="after")
    def _some_benchmark(self) -> "DecontaminationConfig":
        if not self.benchmarks:
            raise ValueError("name at least one benchmark file (benchmarks: [{name, path, fields}])")
        names = [b.name for b in self.benchmarks]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ValueError(f"benchmark {dup!r} is named twice")
        return self


class Decontamination(Stage):
    name = "decontamination"
    Config = DecontaminationConfig
    reasons = (CONTAMINATED,)
    decision_keys = ("min_matches", "min_coverage")
    threshold_signals = {"min_matches": "decontam_matches", "min_coverage": "decontam_coverage"}
    rewrite_signals = ("decontam_removed_chars",)

    config: DecontaminationConfig

    def signal_fields(self) -> list[pa.Field]:
        return [
            pa.field("decontam_matches", pa.int32()),
            pa.field("decontam_coverage", pa.float32()),
            pa.field("decontam_items", pa.int32()),
            pa.field("decontam_benchmark", pa.string()),
            pa.field("decontam_item", pa.string()),
            pa.field("decontam_removed_chars", pa.int32()),
            pa.field("decontam_left_chars", pa.int32()),
            pa.field("decontam_front_matches", pa.list_(pa.int32())),
            pa.field("decontam_front_coverage", pa.list_(pa.float32())),
        ]

    def signal_descriptions(self) -> dict[str, str]:
        return {
            "decontam_matches": "distinct n-grams of the most-matched test item found in the document (0: none)",
            "decontam_coverage": "that count as a fraction of the item's n-grams",
            "decontam_items": "test items with at least one n-gram in the document",
            "decontam_benchmark": "benchmark of the most-matched item (null: none)",
            "decontam_item": "id of the most-matched item (the id field, else its row number)",
            "decontam_removed_chars": "action remove: characters cut out of the text (0: none; drop: always 0)",
            "decontam_left_chars": "action remove: non-space characters left after the cut (null under drop)",
            "decontam_front_matches": "the matched items no other beats on both counts: their shared n-grams (with "
                                      "decontam_front_coverage; what min_matches and min_coverage are decided on)",
            "decontam_front_coverage": "the same items' coverage, in the same order",
        }

    # -- setup -------------------------------------------------------------------------------
    def setup(self) -> None:
        c = self.config
        self._items: list[tuple[str, str]] = []  # item number -> (benchmark, id)
        self._indexes: dict[str, NgramIndex] = {}
        self._stats: dict[str, dict[str, int]] = {}
        for b in c.benchmarks:
            index = self._indexes.setdefault(b.tokenizer, NgramIndex())
            n = b.ngram or c.ngram
            used = short = ngrams = 0
            for item in read_items(b.path, b.fields, b.id_field, b.format):
                k = index.add(len(self._items), tokens(item.text, b.tokenizer), n, c.min_item_tokens)
                if k:
                    self._items.append((b.name, item.id))
                    used += 1
                    ngrams += k
                else:
                    short += 1
            self._stats[b.name] = {"items": used, "items_too_short": short, "ngrams": ngrams, "ngram": n}
        for index in self._indexes.values():
            index.freeze()

    def params(self) -> dict:
        self.ensure_setup()
        return {"benchmarks": self._stats,
                "index_bytes": sum(ix.nbytes() for ix in self._indexes.values())}

    # -- per document ------------------------------------------------------------------------
    def inspect(self, text: str) -> tuple[dict[int, int], list[tuple[int, int]]]:
        """Per matched item number, its distinct n-grams found; and (under remove) the character
        spans of `text` covered by matching n-grams, merged, in order."""
        remove = self.config.action == "remove"
        per_item: dict[int, int] = {}
        spans: list[tuple[int, int]] = []
        for tok_name, index in self._indexes.items():
            if remove:
                toks, where = token_spans(text, tok_name)
            else:
                toks, where = tokens(text, tok_name), None
            found = index.find(toks, want_windows=remove)
            per_item.update(found.per_item)
            if where is not None:
                for lo, hi in found.windows:
                    spans.append((where[lo][0], where[hi - 1][1]))
        return per_item, _merge(spans)

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        n = batch.num_rows
        cols: dict[str, list] = {f.name: [None] * n for f in self.signal_fields()}
        remove = self.config.action == "remove"
        out = list(texts) if remove else None
        for i, text in enumerate(texts):
            if not self.applies_to(sources[i], kinds[i]):
                continue
            per_item, spans = self.inspect(text or "")
            best, hits = None, 0
            if per_item:
                best = max(per_item, key=lambda it: (per_item[it], per_item[it] / self._ngrams_of(it), -it))
                hits = per_item[best]
            cols["decontam_matches"][i] = hits
            cols["decontam_items"][i] = len(per_item)
            cols["decontam_coverage"][i] = hits / self._ngrams_of(best) if best is not None else 0.0
            # a document is contaminated by one item with enough matches AND enough coverage, which need
            # not be the most-matched one: the items no other beats on both, for any thresholds
            front_m, front_c = [], []
            for it in sorted(per_item, key=lambda it: (-per_item[it], it)):
                cov = per_item[it] / self._ngrams_of(it)
                if not front_c or cov > front_c[-1]:
                    front_m.append(per_item[it])
                    front_c.append(cov)
            cols["decontam_front_matches"][i], cols["decontam_front_coverage"][i] = front_m, front_c
            if best is not None:
                cols["decontam_benchmark"][i], cols["decontam_item"][i] = self._items[best]
            removed = 0
            if remove:
                if spans:
                    out[i], removed = _cut(text, spans)
                cols["decontam_left_chars"][i] = len("".join(out[i].split())) if out[i] else 0
            cols["decontam_removed_chars"][i] = removed
        if remove:
            batch = set_column(batch, "text", pa.array(out, pa.string()))
        for f in self.signal_fields():
            batch = set_column(batch, f.name, pa.array(cols[f.name], f.type))
        return batch

    def _ngrams_of(self, item: int) -> int:
        for index in self._indexes.values():
            if item in index.item_ngrams:
                return index.item_ngrams[item]
        return 1

    def decide(self, batch: pa.Table) -> list[str | None]:
        c = self.config
        matches = batch.column("decontam_matches").to_pylist()
        if c.action == "remove":
            left = batch.column("decontam_left_chars").to_pylist()
            return [CONTAMINATED if m and lc == 0 else None for m, lc in zip(matches, left)]
        coverage = batch.column("decontam_coverage").to_pylist()
        fronts = (zip(batch.column("decontam_front_matches").to_pylist(), batch.column("decontam_front_coverage").to_pylist())
                  if "decontam_front_matches" in batch.column_names else ((None, None) for _ in matches))
        out: list[str | None] = []
        for m, cov, (fm, fc) in zip(matches, coverage, fronts):
            pairs = list(zip(fm, fc)) if fm else [(m or 0, cov or 0.0)]
            hit = any(a > 0 and a >= c.min_matches and b >= c.min_coverage for a, b in pairs)
            out.append(CONTAMINATED if hit else None)
        return out

    def flagged_span(self, row: dict) -> tuple[int, int] | None:
        """The longest stretch of the rejected text that test items' n-grams cover (merged windows,
        as `remove` would cut them), found again in the sampled text: the index is built here
        (`setup`) if it was not. None when nothing is found (under `remove` the stored text is
        what the cut left)."""
        text = row.get("text")
        if row.get("drop_reason") != CONTAMINATED or not text:
            return None
        self.ensure_setup()
        spans = []
        for tok_name, index in self._indexes.items():
            toks, where = token_spans(text, tok_name)
            spans += [(where[lo][0], where[hi - 1][1]) for lo, hi in index.find(toks, want_windows=True).windows]
        merged = _merge(spans)
        return max(merged, key=lambda se: (se[1] - se[0], -se[0])) if merged else None

    def drop_details(self, batch: pa.Table, reasons: Sequence[str | None]) -> list[str | None] | None:
        if CONTAMINATED not in reasons:
            return None
        bench = batch.column("decontam_benchmark").to_pylist()
        item = batch.column("decontam_item").to_pylist()
        matches = batch.column("decontam_matches").to_pylist()
        coverage = batch.column("decontam_coverage").to_pylist()
        items = batch.column("decontam_items").to_pylist()
        out: list[str | None] = []
        for r, b, it, m, cov, k in zip(reasons, bench, item, matches, coverage, items):
            if r != CONTAMINATED or b is None:
                out.append(None)
                continue
            more = f"; {k - 1} more item{'s' if k > 2 else ''}" if k and k > 1 else ""
            what = "nothing left after the overlap was cut" if self.config.action == "remove" else (
                f"{m} shared n-gram{'s' if m != 1 else ''}, {cov:.0%} of the item")
            out.append(f"{b} item {it}: {what}{more}")
        return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _cut(text: str, spans: list[tuple[int, int]]) -> tuple[str, int]:
    """`text` without the merged `spans`; returns it and the number of characters removed."""
    parts, last, removed = [], 0, 0
    for s, e in spans:
        parts.append(text[last:s])
        removed += e - s
        last = e
    parts.append(text[last:])
    return "".join(parts), removed
