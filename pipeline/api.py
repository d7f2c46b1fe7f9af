"""refinery on plain strings: every stage from Python, with no Arrow in the caller's code.

    from pipeline import api
    api.language("Der Hund schläft.")            # LanguageResult(lang='de', score=0.97, keep=True, ...)
    api.quality(texts)                           # [QualityResult(keep, reason, score, signals, text), ...]
    api.near_dedup(texts).kept                   # indices of the texts a run would keep

Each function runs the pipeline's own code: the texts become a batch with pipeline.schema's
helpers and go through the stage's `annotate` and `decide` (a global stage's `annotate`, its spill
file and its real `resolve` with a LocalExecutor, through stages/dedup/in_process.py), so a text gets the
same signals, decision and kept text here as in `refinery run` with the same stage config.
Keyword arguments are the stage's config keys (`refinery stages NAME` lists them); a stage is
built and its model loaded once per config and reused.

A str gives one result, a list of str gives a list. Document ids are the texts' indices (as
128-bit hex), so where a dedup stage keeps "the lowest id", the earliest text of a group is kept.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Sequence, TypeVar, overload

import pyarrow as pa

from pipeline.schema import make_record, records_to_table, valid_utf8
from stages import registry
from stages.base import Stage
from stages.dedup.exact import exact_duplicates
from stages.dedup.in_process import Duplicates
from stages.dedup.near import near_duplicates

SOURCE, KIND = "api", "text"  # a kind no stage skips by default

T = TypeVar("T")


# -- results -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LanguageResult:
    lang: str | None  # the top language, as the model names it ("en", "de", ...)
    score: float | None
    keep: bool  # the langid stage's decision under the given config (languages, min_score)
    reason: str | None


@dataclass(frozen=True)
class QualityResult:
    keep: bool
    reason: str | None  # the first failed rule (docs/architecture.md's vocabulary), or None
    failed_rules: list[str]  # every failed rule, in order
    score: float | None  # composite quality score in [0, 1]
    signals: dict[str, Any]  # every signal column of the quality stage
    text: str  # the text a run keeps (C4 deletes lines from kept documents); the input if dropped


@dataclass(frozen=True)
class ToxicityResult:
    keep: bool
    reason: str | None
    score: float | None  # the largest span score (None: not scored, e.g. a language the model lacks)
    toxic_fraction: float | None  # share of characters in toxic spans
    toxic_words: int | None  # word-list hits (None without a word list)


@dataclass(frozen=True)
class PIIResult:
    text: str  # the masked text
    emails: int
    phones: int
    ips: int


@dataclass(frozen=True)
class ExtractResult:
    text: str | None  # None: the page is rejected (see reason)
    reason: str | None  # the reader's reject reason: no_text, extract_error, extract_timeout
    charset: str | None
    extractor: str


@dataclass(frozen=True)
class DedupResult:
    kept: list[int]  # indices of the texts kept, ascending
    dropped: dict[int, int]  # index of a dropped text -> index of the kept text it duplicates
    clusters: list[list[int]] = field(default_factory=list)  # groups of >= 2 duplicates, each ascending


# -- shared machinery ----------------------------------------------------------------------------
def _as_list(texts: str | Sequence[str]) -> tuple[list[str], bool]:
    if isinstance(texts, str):
        return [valid_utf8(texts)], True
    if isinstance(texts, (bytes, bytearray)):
        raise TypeError("give str texts (for HTML bytes use api.extract)")
    try:
        out = list(texts)
    except TypeError:
        raise TypeError(f"texts must be str or a list of str, not {type(texts).__name__}") from None
    if not all(isinstance(t, str) for t in out):
        raise TypeError("texts must be str or a list of str")
    return [valid_utf8(t) for t in out], False  # lone surrogates as U+FFFD, as every reader gives them


def _one_or_all(results: list[T], single: bool) -> T | list[T]:
    return results[0] if single else results


@functools.lru_cache(maxsize=32)
def _built(name: str, config_json: str) -> Stage:
    stage = registry.get(name)(**json.loads(config_json))
    stage.ensure_setup()
    return stage


def stage(name: str, **config: Any) -> Stage:
    """The stage `name` built with `config` (validated as in a recipe) and set up, cached per config."""
    return _built(name, json.dumps(config, sort_keys=True, default=list))


def batch(texts: Sequence[str], langs: Sequence[str | None] | None = None) -> pa.Table:
    """The Arrow batch the runner would hand a stage: base columns (pipeline.schema), ids = indices."""
    table = records_to_table(make_record(source=SOURCE, kind=KIND, file=SOURCE, offset=i, text=t)
                             for i, t in enumerate(texts))
    table = table.set_column(0, "id", pa.array([f"{i:032x}" for i in range(len(texts))], pa.string()))
    if langs is not None:
        table = table.append_column("lang", pa.array(list(langs), pa.string()))
    return table


def run_stage(st: Stage, table: pa.Table) -> tuple[pa.Table, list[str | None]]:
    """What the worker does with a per-document stage: annotate, then decide."""
    annotated = st.annotate(table)
    reasons = list(st.decide(annotated))
    return annotated, reasons


def _langs(lang: str | Sequence[str | None] | None, n: int) -> list[str | None] | None:
    if lang is None:
        return None
    if isinstance(lang, str):
        return [lang] * n
    out = list(lang)
    if len(out) != n:
        raise ValueError(f"{len(out)} languages for {n} texts")
    return out


# -- per-document stages -------------------------------------------------------------------------
@overload
def language(texts: str, **config: Any) -> LanguageResult: ...
@overload
def language(texts: Sequence[str], **config: Any) -> list[LanguageResult]: ...
def language(texts, **config):
    """Language ID (the `langid` stage): top language, score, and the keep/drop decision."""
    items, single = _as_list(texts)
    out, reasons = run_stage(stage("langid", **config), batch(items))
    lang, score = out.column("lang").to_pylist(), out.column("lang_score").to_pylist()
    res = [LanguageResult(a, s, r is None, r) for a, s, r in zip(lang, score, reasons)]
    return _one_or_all(res, single)


@overload
def quality(texts: str, lang: str | None = None, **config: Any) -> QualityResult: ...
@overload
def quality(texts: Sequence[str], lang: str | Sequence[str | None] | None = None, **config: Any) -> list[QualityResult]: ...
def quality(texts, lang=None, **config):
    """Quality signals and decision (the `quality` stage: Gopher, C4, FineWeb rules). `lang` picks
    stop words and turns word rules off for unspaced languages; None: each text's language is
    detected as the langid stage does (a pipeline runs langid before quality), so Japanese text is
    not judged by English word rules."""
    items, single = _as_list(texts)
    st = stage("quality", **config)
    langs = _langs(lang, len(items))
    if langs is None:
        langs = run_stage(stage("langid"), batch(items))[0].column("lang").to_pylist()
    out, reasons = run_stage(st, batch(items, langs))
    names = [f.name for f in st.signal_fields()]
    cols = {n: out.column(n).to_pylist() for n in names}
    kept_text = out.column("text").to_pylist()
    res = []
    for i, reason in enumerate(reasons):
        sig = {n: cols[n][i] for n in names}
        failed = [x for x in (sig.get("quality_failed_rules") or "").split(",") if x]
        res.append(QualityResult(reason is None, reason, failed, sig.get("quality_score"), sig, kept_text[i]))
    return _one_or_all(res, single)


@overload
def toxicity(texts: str, lang: str | None = None, **config: Any) -> ToxicityResult: ...
@overload
def toxicity(texts: Sequence[str], lang: str | Sequence[str | None] | None = None, **config: Any) -> list[ToxicityResult]: ...
def toxicity(texts, lang=None, **config):
    """Toxicity score and decision (the `toxicity` stage, the shipped model unless model_path is given).
    `lang` tells the model the text's language (as the langid stage's column does; without it the stage
    identifies it); a text in a language the stage does not judge (`languages`) has score None and is kept."""
    items, single = _as_list(texts)
    out, reasons = run_stage(stage("toxicity", **config), batch(items, _langs(lang, len(items))))
    score = out.column("toxicity_score").to_pylist()
    frac = out.column("toxic_span_fraction").to_pylist()
    words = out.column("toxic_word_count").to_pylist()
    res = [ToxicityResult(r is None, r, s, f, w) for r, s, f, w in zip(reasons, score, frac, words)]
    return _one_or_all(res, single)


@overload
def mask_pii(texts: str, **config: Any) -> PIIResult: ...
@overload
def mask_pii(texts: Sequence[str], **config: Any) -> list[PIIResult]: ...
def mask_pii(texts, **config):
    """E-mail addresses, phone numbers and public IPs masked (the `pii` stage), with counts."""
    items, single = _as_list(texts)
    out, _ = run_stage(stage("pii", **config), batch(items))
    cols = [out.column(c).to_pylist() for c in ("text", "pii_email_count", "pii_phone_count", "pii_ip_count")]
    res = [PIIResult(t, e or 0, p or 0, i or 0) for t, e, p, i in zip(*cols)]
    return _one_or_all(res, single)


# -- extraction ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _extractor(config_json: str):
    from pipeline.sources.extract import Extractor, ExtractorConfig

    return Extractor(ExtractorConfig.model_validate(json.loads(config_json)))


def extract(html: bytes, charset: str | None = None, **config: Any) -> ExtractResult:
    """Main text of an HTML page given as bytes, as the commoncrawl reader extracts a response:
    charset from `charset` (the HTTP header's), a BOM, <meta> or detection; then the extractor
    (config: pipeline.sources.extract.ExtractorConfig keys, e.g. name="trafilatura", time_limit=0)."""
    from pipeline.sources.commoncrawl import html_to_text

    if not isinstance(html, (bytes, bytearray)):
        raise TypeError("give the page as bytes (as it comes off the wire); str.encode() it if needed")
    ex = _extractor(json.dumps(config, sort_keys=True))
    text, reason, _detail, meta = html_to_text(ex, bytes(html), charset)
    return ExtractResult(text, reason, meta.get("charset"), meta.get("extractor", ex.name))


# -- global stages (dedup) -----------------------------------------------------------------------
def _dedup(found: Duplicates, grouped_by_cluster: bool) -> DedupResult:
    """The stages' in-process result (stages/dedup/in_process.py) as kept indices, a dropped ->
    keeper map and clusters of two or more texts."""
    n = len(found.keeper)
    dropped = {k: found.keeper[k] for k in range(n) if found.keeper[k] != k}
    groups: dict[int, set[int]] = {}
    if grouped_by_cluster:  # the stage's cluster column (near duplicates)
        for k in range(n):
            groups.setdefault(found.cluster[k], set()).add(k)
    else:  # a text and the texts dropped as its duplicates
        for d, k in dropped.items():
            groups.setdefault(k, {k}).add(d)
    clusters = sorted(sorted(g) for g in groups.values() if len(g) > 1)
    return DedupResult(list(found.kept), dropped, clusters)


def exact_dedup(texts: Sequence[str], **config: Any) -> DedupResult:
    """Exact duplicates (the `exact_dedup` stage: NFC, whitespace collapsed; `lowercase=True` too)."""
    items, _ = _as_list(texts)
    return _dedup(exact_duplicates(items, **config), False) if items else DedupResult([], {}, [])


def near_dedup(texts: Sequence[str], **config: Any) -> DedupResult:
    """Near duplicates (the `minhash_dedup` stage: MinHash LSH, verified by true Jaccard >= threshold)."""
    items, _ = _as_list(texts)
    return _dedup(near_duplicates(items, **config), True) if items else DedupResult([], {}, [])
