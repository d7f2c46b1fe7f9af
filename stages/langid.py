"""Language identification: fastText lid.176, per-language thresholds, confusable groups, CLD2.

The compressed lid.176.ftz ships with refinery (stages/models/, CC BY-SA 3.0, see NOTICE.md there),
so nothing is downloaded; we load it with the trainable `fasttext` module (the same engine datatrove uses) and score it with
stages/_fasttext_lid.py: fastText's own top-k, computed once per distinct token (docs/langid.md has
its parity and speed; other models are scored by fastText). `model_path` points at any other
fastText LID model: lid.176.bin (labels `__label__en`) or GlotLID (labels `__label__eng_Latn`; an
allowed entry may be the full label or the language part, `eng`).

Why not one global threshold (datatrove's 0.65): lid.176's scores differ by language. Correctly
labelled Croatian 10-sentence documents score 0.47 (median), Afrikaans 0.69, German 0.99; a single
0.65 drops every Croatian document whose label is right. The decision, per document:

1. fastText's 5 best labels. The top label `L` is `lang` unless step 3 changes it; `lang_score` is
   fastText's probability of `lang`.
2. Confusable groups (bs/hr/sr/sh, ms/id, no/nb/nn/da, af/nl, cs/sk; docs/langid.md has the
   measurement): lid.176 splits its probability among the members, so the score compared with the
   threshold is the group's summed probability (`lang_group_score`), and allowing one member allows
   the whole group (the label itself stays in `lang`, the group in `lang_group`).
3. Second opinion (`second_opinion: true`): CLD2 (pycld2, an independent offline model) is asked when
   the score is below `L`'s threshold, and for every document labelled with a group member. Its
   answer counts (`lang_cld2`; `un` otherwise, null: not asked) when CLD2 calls it reliable, gives it
   most of the text and scores it well (`Cld2Rule`: mixed-language text splits the share, garbled text
   scores low). Within CLD2's measured range (stages/data/cld2_rule.json, from the tuning half of
   lingua; docs/langid.md): CLD2 agrees (same language or group) and is precise on that language ->
   confirmed; CLD2 names a language it is precise on, it recognises `L` (so never a language it does not
   know, such as Upper Sorbian), and fastText is below its threshold and below 0.7 -> CLD2's language is
   `lang` (on tuning sentences CLD2 was right 1,542 times, fastText 100); otherwise fastText's label stands.
4. Reject `language_not_allowed` when an allowed list exists and neither `lang` nor a member of its
   group is in it; else `language_score_too_low` when the score (group score for group members) is
   below the threshold and CLD2 did not confirm the language (also empty text).

Text: the first `max_chars` characters as one line, Unicode space separators (no-break space,
ideographic space, ...) as ASCII spaces (`unicode_spaces`): fastText splits tokens on ASCII whitespace
only, and on crawl pages CJK breadcrumbs joined by no-break spaces read as one French or Japanese token
(docs/langid.md, "Real web pages").

Thresholds: per language, from the shipped table `stages/data/langid_thresholds.json` (FineWeb-2's
rule, clip(median - std, 0.3, 0.9) of the scores of documents labelled with that language, on the
tuning half of lingua's languages lid.176 knows; `python benchmarks/langid.py --write-thresholds` rebuilds it) for the bundled
model; `thresholds:` overrides single languages; `min_score:` (one value or per source) replaces the
table with one threshold, the old behaviour; languages without a value use `default_min_score`.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Sequence

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from stages._arrow import set_column
from stages._fasttext import load_model, one_line, strip_label
from stages._fasttext_lid import FastTextLID, supports
from stages.base import Stage, StageConfig

# lid.176 predates the ISO split of Norwegian: it answers `no` for Bokmål.
LABEL_ALIASES = {"nb": ("no",), "no": ("nb",)}
# Confusable groups: the three the issue names, plus af/nl and cs/sk, the two pairs of related
# languages where lid.176 gives the other label to >= 10% of tuning sentences (docs/langid.md).
DEFAULT_GROUPS: tuple[tuple[str, ...], ...] = (
    ("bs", "hr", "sr", "sh"),
    ("ms", "id"),
    ("no", "nb", "nn", "da"),
    ("af", "nl"),
    ("cs", "sk"),
)
FASTTEXT_K = 5  # labels read from fastText: enough to sum a group's probability
# Unicode space separators (Zs but the ASCII space). fastText splits tokens on ASCII whitespace only, so
# "首页\xa0\xa0»\xa0\xa0亚洲" is one token to it; 622 of 1,257 crawl pages hold a no-break space in their
# first 3,000 characters (docs/langid.md, "Real web pages").
UNICODE_SPACES = "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"

# CLD2 replaces fastText's label only below this score: on tuning sentences where the two disagree,
# CLD2 is right more often up to 0.7 and fastText from 0.7 on (docs/langid.md).
OVERRIDE_BELOW = 0.7


class Cld2Rule:
    """When CLD2's answer counts (stages/data/cld2_rule.json, measured on the tuning half of lingua's
    sentences by `python benchmarks/langid.py --write-cld2-rule`):

    * `reliable`: the languages CLD2 is precise on: of its counted answers naming the language, at least
      `min_precision` are right. Only these may replace fastText's label or confirm it.
    * `recognised`: the languages CLD2 recognises: it names at least `min_recall` of their sentences.
      Only these may be replaced: for a language CLD2 does not know (Upper Sorbian, Asturian, ...) or
      rarely names, its naming another language says nothing against the label.
    * `min_percent`: CLD2's answer counts only when it gives its top language at least this share of
      the text (mixed-language text splits it), and `min_score`: CLD2's normalised score of it (garbled
      text, letters shuffled, scores low).
    * `top_k`: a replacement must be among fastText's `top_k` best labels (0: any).
    * `group_swaps`: CLD2 naming another member of the label's confusable group replaces the label even
      above the threshold.
    """

    def __init__(self, reliable, recognised, min_percent: int, top_k: int, group_swaps: bool = True,
                 min_score: float = 0.0, min_precision=None, min_recall=None):
        self.reliable = frozenset(reliable)
        self.recognised = frozenset(recognised)
        self.min_percent = int(min_percent)
        self.min_score = float(min_score)
        self.top_k = int(top_k)
        self.group_swaps = bool(group_swaps)
        self.min_precision, self.min_recall = min_precision, min_recall

    @classmethod
    def bundled(cls) -> "Cld2Rule":
        data = json.loads((files("stages") / "data" / "cld2_rule.json").read_text(encoding="utf-8"))
        return cls(data["reliable"], data["recognised"], data["min_percent"], data["top_k"], data["group_swaps"],
                   data["min_score"], data.get("min_precision"), data.get("min_recall"))

    def counts(self, answer) -> bool:
        """CLD2's answer counts: it has one, calls it reliable, and gives it enough of the text and score."""
        return (answer.lang is not None and answer.reliable and answer.percent >= self.min_percent
                and answer.score >= self.min_score)

    def trusts(self, lang: str | None) -> bool:
        """CLD2 naming `lang` is right often enough to replace or confirm a label."""
        return _in(lang, self.reliable)

    def may_replace(self, lang: str | None) -> bool:
        """CLD2 recognises `lang` well enough that its naming another language is evidence against it."""
        return _in(lang, self.recognised)


def ascii_spaces(line: str) -> str:
    """`line` with every Unicode space separator as an ASCII space: a find per separator, replacing only
    those present (2.5x faster than one regex substitution on crawl lines)."""
    for sp in UNICODE_SPACES:
        if sp in line:
            line = line.replace(sp, " ")
    return line


def bundled_model_path() -> Path:
    """lid.176.ftz as shipped with refinery (917 kB, 176 languages; stages/models/NOTICE.md)."""
    return Path(str(files("stages") / "models" / "lid.176.ftz"))


@lru_cache(maxsize=1)
def bundled_thresholds() -> dict[str, float]:
    """Per-language thresholds for the bundled lid.176 (package data; see the module docstring)."""
    data = json.loads((files("stages") / "data" / "langid_thresholds.json").read_text(encoding="utf-8"))
    return {k: float(v) for k, v in data["thresholds"].items()}


@lru_cache(maxsize=8)
def model_labels(model_path: str | None) -> frozenset[str] | None:
    """The language codes a fastText LID model answers (lid.176 bundled: 176, plus `nb` for its `no`);
    for GlotLID-style labels (`eng_Latn`) also the language part (`eng`). None: no such file."""
    path = Path(model_path) if model_path else bundled_model_path()
    if not path.is_file():
        return None
    labels = {strip_label(l) for l in load_model(path).get_labels()}
    labels |= {_base(l) for l in labels}
    labels |= {a for l in list(labels) for a in LABEL_ALIASES.get(l, ())}
    return frozenset(labels)


def suggest_code(code: str, known: frozenset[str]) -> str | None:
    """`EN` -> `en`, `english` -> `en`, `eng` -> `en`, `Deutsch`... a close name -> its code."""
    import difflib

    import pycld2

    from stages._cld2 import _CODES

    low = code.strip().lower().replace("-", "_")
    if low in known:
        return low
    if _base(low) in known:
        return _base(low)
    names = {name.lower(): _CODES.get(c, c) for name, c in pycld2.LANGUAGES}
    names = {n: c for n, c in names.items() if c in known}
    if low in names:
        return names[low]
    if len(low) == 3 and low[:2] in known:  # ISO 639-3/2 codes often start with the 639-1 code: eng, deu, fra
        return low[:2]
    close = difflib.get_close_matches(low, list(names), n=1, cutoff=0.75)
    return names[close[0]] if close else None


def _unit(v: float) -> float:
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"a score threshold must be between 0 and 1, got {v}")
    return v


class LangIDConfig(StageConfig):
    languages: list[str] | dict[str, list[str]] | None = Field(None, description=(
        "allowed languages: one list for every source, or a mapping source -> list ('*' = other sources); "
        "null (or a source absent from the mapping, without '*') allows any language; allowing one member "
        "of a confusable group allows the group"))
    min_score: float | dict[str, float] | None = Field(None, description=(
        "one score threshold for every language (or a mapping source -> value, '*' = other sources), "
        "replacing the per-language table; null: the table"))
    thresholds: dict[str, float] = Field({}, description="per-language score thresholds overriding the shipped table")
    default_min_score: float = Field(0.65, description="threshold for languages the table does not list")
    groups: list[list[str]] | None = Field(None, description=(
        "confusable groups (allowing one member allows all; the threshold applies to the group's summed "
        "score); null: bs/hr/sr/sh, ms/id, no/nb/nn/da, af/nl, cs/sk; []: none"))
    second_opinion: bool = Field(True, description="ask CLD2 about low-confidence and group-labelled documents")
    model_path: str | None = Field(None, description="fastText model file; null: the lid.176.ftz refinery ships")
    max_chars: int | None = Field(3_000, description=(
        "score only this prefix (fastText cost is linear in length; 3,000: the same label as 10,000 on 99.8% of "
        "crawl pages at 58% of the CPU, docs/langid.md); null: the whole text"))
    top_k: int = Field(1, description="> 1 also stores `lang_top` (the k best languages with scores)")
    unicode_spaces: bool = Field(True, description=(
        "fastText reads Unicode space separators (no-break space, ideographic space, ...) as ASCII spaces; "
        "false: as datatrove passes them, inside tokens"))

    @field_validator("max_chars", "top_k")
    @classmethod
    def _positive(cls, v):
        if v is not None and v < 1:
            raise ValueError("must be >= 1")
        return v

    @field_validator("min_score")
    @classmethod
    def _min_score_range(cls, v):
        for x in (v.values() if isinstance(v, dict) else [] if v is None else [v]):
            _unit(x)
        return v

    @field_validator("thresholds")
    @classmethod
    def _thresholds_range(cls, v):
        for x in v.values():
            _unit(x)
        return v

    @field_validator("default_min_score")
    @classmethod
    def _default_range(cls, v):
        return _unit(v)

    @model_validator(mode="after")
    def _known_codes(self):
        """Language codes (in `languages` and `thresholds`) the model can answer; an empty list allows nothing."""
        lists = self.languages.items() if isinstance(self.languages, dict) else [(None, self.languages)]
        for src, langs in lists:
            if langs is not None and not langs:
                where = f"languages.{src}" if src is not None else "languages"
                raise ValueError(f"{where}: [] allows no language and would reject every document; "
                                 f"omit the key (or null) to allow any language")
        known = model_labels(self.model_path)
        if known is None:  # a model file that does not exist: setup() says so
            return self
        codes = [(f"languages.{src}" if src is not None else "languages", c) for src, langs in lists for c in (langs or [])]
        codes += [("thresholds", c) for c in self.thresholds]
        for where, code in codes:
            if code not in known and _base(code) not in known:
                model = "lid.176" if self.model_path is None else Path(self.model_path).name
                hint = suggest_code(code, known)
                raise ValueError(f"{where}: unknown language code {code!r}: {model} answers codes such as 'en', 'de', "
                                 f"'zh'" + (f"; did you mean {hint!r}?" if hint else ""))
        return self


class LangID(Stage):
    name = "langid"
    Config = LangIDConfig
    reasons = ("language_not_allowed", "language_score_too_low")
    decision_keys = ("min_score", "default_min_score", "thresholds.*", "languages")
    threshold_signals = {"min_score": "lang_score"}
    default_skip_kinds = ("code",)

    config: LangIDConfig

    def __init__(self, config: LangIDConfig | None = None, **kwargs):
        super().__init__(config, **kwargs)
        groups = DEFAULT_GROUPS if self.config.groups is None else self.config.groups
        self._group: dict[str, tuple[str, ...]] = {}
        for g in groups:
            members = tuple(sorted(set(g) | {a for m in g for a in LABEL_ALIASES.get(m, ())}))
            for m in members:
                self._group[m] = members
        self._table: dict[str, float] | None = None
        self.cld2_rule = Cld2Rule.bundled()

    def retune_refusal(self, changed: list[str]) -> tuple[str, str] | None:
        """With second_opinion on, the thresholds also decide when CLD2 is asked, which may relabel."""
        moved = [k for k in changed if k.split(".")[0] in ("min_score", "default_min_score", "thresholds")]
        if self.config.second_opinion and moved:
            return moved[0], ("with second_opinion on, langid's thresholds also decide when CLD2 is asked and may "
                              "relabel a document (the lang signal): use `refinery run`, or run with "
                              "second_opinion: false to retune them")
        return None

    @property
    def thresholds(self) -> dict[str, float]:
        """Per-language thresholds: the shipped table (bundled model only) with the recipe's overrides."""
        if self._table is None:
            table = bundled_thresholds() if self.config.model_path is None else {}
            own = dict(self.config.thresholds)
            for lang, v in self.config.thresholds.items():  # `nb: 0.5` also sets lid.176's `no`
                for alias in LABEL_ALIASES.get(lang, ()):
                    own.setdefault(alias, v)
            self._table = {**table, **own}
        return self._table

    def signal_fields(self) -> list[pa.Field]:
        fields = [
            pa.field("lang", pa.string()),
            pa.field("lang_score", pa.float32()),
            pa.field("lang_group", pa.string()),
            pa.field("lang_group_score", pa.float32()),
            pa.field("lang_cld2", pa.string()),
        ]
        if self.config.top_k > 1:
            fields.append(pa.field("lang_top", _TOP_TYPE))
        return fields

    def signal_descriptions(self) -> dict[str, str]:
        return {
            "lang": "the language decided (fastText's top label unless CLD2 changed it; ISO 639 code)",
            "lang_score": "fastText's probability of `lang`",
            "lang_group": "the confusable group of `lang` (e.g. bs/hr/sh/sr), null outside groups",
            "lang_group_score": "fastText's summed probability of the group's members",
            "lang_cld2": "CLD2's answer when it counts (reliable, most of the text, a good score; 'un': it does "
                         "not; null: not asked)",
            "lang_top": "the top_k languages with their scores",
        }

    def setup(self) -> None:
        path = self.config.model_path or bundled_model_path()
        self.model = load_model(path)
        # lid.176 (hierarchical softmax): fastText's own answer, memoised per token (stages/_fasttext_lid.py)
        self.scorer = FastTextLID(self.model, path) if supports(self.model) else self.model
        # CLD2 answers lid.176-style ISO 639-1 codes; it cannot check GlotLID's `eng_Latn` labels.
        labels = self.model.get_labels()
        self._use_cld2 = self.config.second_opinion and not any("_" in strip_label(l) for l in labels)

    # -- per-source and per-language settings --------------------------------------------------
    def allowed(self, source: str) -> frozenset[str] | None:
        """The allowed labels for `source`, widened by aliases and confusable groups."""
        langs = self.config.languages
        if isinstance(langs, dict):
            langs = langs.get(source, langs.get("*"))
        if langs is None:
            return None
        out = set(langs)
        for lang in langs:
            out.update(LABEL_ALIASES.get(lang, ()))
            out.update(self._group.get(lang, ()))
        return frozenset(out)

    def threshold(self, lang: str | None, source: str) -> float:
        m = self.config.min_score
        if isinstance(m, dict):
            m = m.get(source, m.get("*"))
        if m is not None:
            return m
        if lang is None:
            return self.config.default_min_score
        table = self.thresholds
        return table.get(lang, table.get(_base(lang), self.config.default_min_score))

    def group(self, lang: str | None) -> tuple[str, ...] | None:
        if lang is None:
            return None
        return self._group.get(lang) or self._group.get(_base(lang))

    # -- scoring -------------------------------------------------------------------------------
    def predict(self, texts: Sequence[str | None], k: int | None = None) -> list[list[tuple[str, float]]]:
        """fastText's best `k` (default `top_k`) (language, score) pairs per text; [] for empty text."""
        self.ensure_setup()
        k = k or self.config.top_k
        lines = [one_line(t, self.config.max_chars) if t else "" for t in texts]
        if self.config.unicode_spaces:
            lines = [ascii_spaces(line) for line in lines]
        todo = [i for i, line in enumerate(lines) if line]
        out: list[list[tuple[str, float]]] = [[] for _ in lines]
        if todo:
            labels, scores = self.scorer.predict([lines[i] for i in todo], k=k)
            for i, labs, scs in zip(todo, labels, scores):
                out[i] = [(strip_label(lab), min(float(s), 1.0)) for lab, s in zip(labs, scs)]
        return out

    def identify(self, text: str | None, pairs: list[tuple[str, float]], source: str) -> dict:
        """Steps 1-3 of the module docstring for one document, from fastText's `pairs`."""
        if not pairs:
            return {"lang": None, "lang_score": 0.0, "lang_group": None, "lang_group_score": None, "lang_cld2": None}
        top, score = pairs[0]
        group = self.group(top)
        eff = _group_score(pairs, group) if group else score
        lang, cld = top, None
        if self._use_cld2 and (group is not None or eff < self.threshold(top, source)):
            rule = self.cld2_rule
            ans = _cld2_analyse(text[: self.config.max_chars] if self.config.max_chars else text)
            # CLD2's answer counts when CLD2 calls it reliable, gives it most of the text and scores it well
            cld = ans.lang if rule.counts(ans) else "un"
            if cld != "un" and not _same(cld, top) and rule.trusts(cld) and rule.may_replace(top):
                agrees = rule.top_k == 0 or any(_same(cld, lab) for lab, _ in pairs[: rule.top_k])
                if agrees and ((rule.group_swaps and group is not None and cld in group)
                               or eff < min(OVERRIDE_BELOW, self.threshold(top, source))):
                    lang = cld
        if lang != top:
            group = self.group(lang)
            score = dict(pairs).get(lang, 0.0)
            eff = _group_score(pairs, group) if group else score
        return {
            "lang": lang,
            "lang_score": score,
            "lang_group": "/".join(group) if group else None,
            "lang_group_score": eff if group else None,
            "lang_cld2": cld,
        }

    def annotate(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        live = [i for i in range(batch.num_rows) if self.applies_to(sources[i], kinds[i])]
        preds = self.predict([texts[i] for i in live], k=max(FASTTEXT_K, self.config.top_k))
        names = ("lang", "lang_score", "lang_group", "lang_group_score", "lang_cld2")
        cols: dict[str, list] = {n: [None] * batch.num_rows for n in names}
        top: list[list[dict] | None] = [None] * batch.num_rows
        for i, pairs in zip(live, preds):
            for n, v in self.identify(texts[i], pairs, sources[i]).items():
                cols[n][i] = v
            top[i] = [{"lang": a, "score": s} for a, s in pairs[: self.config.top_k]]
        for f in self.signal_fields():
            if f.name in cols:
                batch = set_column(batch, f.name, pa.array(cols[f.name], f.type))
        if self.config.top_k > 1:
            batch = set_column(batch, "lang_top", pa.array(top, _TOP_TYPE))
        return batch

    def reason_signals(self) -> dict[str, str]:
        # (a language with a group, e.g. hr/sr/bs, is decided on lang_group_score instead)
        return {"language_score_too_low": "lang_score"}

    def decide(self, batch: pa.Table) -> list[str | None]:
        langs = batch.column("lang").to_pylist()
        scores = batch.column("lang_score").to_pylist()
        group_scores = batch.column("lang_group_score").to_pylist()
        clds = batch.column("lang_cld2").to_pylist()
        sources = batch.column("source").to_pylist()
        out: list[str | None] = []
        allowed_of: dict[str, frozenset[str] | None] = {}  # per source: `allowed` builds a set each call
        for lang, score, gscore, cld, source in zip(langs, scores, group_scores, clds, sources):
            if score is None:  # not examined (skipped kind or source)
                out.append(None)
                continue
            if source not in allowed_of:
                allowed_of[source] = self.allowed(source)
            allowed = allowed_of[source]
            if lang is not None and allowed is not None and not _matches(lang, allowed):
                out.append("language_not_allowed")
                continue
            eff = gscore if gscore is not None else score
            confirmed = lang is not None and cld is not None and self.cld2_rule.trusts(lang) and (
                _same(cld, lang) or cld in (self.group(lang) or ())
            )
            if lang is None or (eff < self.threshold(lang, source) and not confirmed):
                out.append("language_score_too_low")
            else:
                out.append(None)
        return out


_TOP_TYPE = pa.list_(pa.struct([("lang", pa.string()), ("score", pa.float32())]))


def _in(lang: str | None, langs: frozenset[str]) -> bool:
    return lang is not None and (lang in langs or any(a in langs for a in LABEL_ALIASES.get(lang, ())))


def _cld2_analyse(text: str | None):
    from stages._cld2 import Answer, analyse

    return analyse(text) if text else Answer(None, False, 0, 0.0)


def _group_score(pairs: list[tuple[str, float]], group: tuple[str, ...]) -> float:
    return min(1.0, sum(s for lab, s in pairs if lab in group or _base(lab) in group))


def _same(a: str, b: str) -> bool:
    return a == b or b in LABEL_ALIASES.get(a, ())


def _base(label: str) -> str:
    return label.split("_", 1)[0]


def _matches(label: str, allowed: frozenset[str]) -> bool:
    """`en` in {en}; GlotLID `eng_Latn` in {eng_Latn} or {eng}."""
    return label in allowed or _base(label) in allowed
