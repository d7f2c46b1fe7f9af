"""Quality stage: Gopher quality, Gopher repetition, C4 and FineWeb rules in one pass per document.

datatrove's four filters re-tokenize each document with spaCy and re-split its lines in every
filter. Here one `DocStats` per document computes words, lines, paragraphs and n-gram counts once,
lazily, and every rule reads them. Each rule reproduces datatrove 0.10's arithmetic and default
threshold (see stages/quality/gopher_quality.py, gopher_repetition.py, c4.py, fineweb.py).

Signals (RedPajama-v2 style names) are stored on every document, with `quality_failed_rules` (all
failed rules, comma-separated, in order) and `quality_score` in [0, 1]: the mean over the applied
rules of 1 (passed) or 0.5 * max(0, 1 - relative distance beyond the threshold) (failed).
With the classifier on (the default: the shipped multilingual fastText model, stages/quality/classifier.py),
`quality_rule_score` keeps that rule score, `quality_classifier_score` is the model's P(high quality),
`quality_page_score` a logistic model over the classifier's log-odds and the text's line structure
(stages/quality/page_score.py: main content vs boilerplate, menus and link lists, which the words
alone do not tell apart), and `quality_score` becomes the mean of the rule score and the page score
(`combined_score`; with `page_score: false` the classifier's probability instead): a continuous
score that ranks the kept documents, which all pass every rule.
The drop reason is the first failed rule, in the order of FineWeb's pipeline (Gopher repetition,
Gopher quality, C4, FineWeb), with datatrove's reason strings.

C4 deletes lines as datatrove's filter does (`c4.remove_lines`): a document that passes the rules
up to C4 is measured by FineWeb (and the classifier) on C4's text, and if kept it carries that text;
rejected documents keep the original text. Only those documents need a second `DocStats`.

Language-aware: the `lang` column (from the langid stage) picks the stop words, and documents in
unspaced languages (zh, ja, th, ...) skip the word-based rules unless the recipe turns them on.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
from pydantic import Field

from stages._arrow import set_column
from stages.base import Stage, StageConfig
from stages.quality.c4 import C4, C4Config
from stages.quality.fineweb import FineWeb, FineWebConfig
from stages.quality.gopher_quality import GopherQuality, GopherQualityConfig
from stages.quality.gopher_repetition import GopherRepetition, GopherRepetitionConfig
from stages.quality.classifier import QualityClassifier, QualityClassifierConfig
from stages.quality.page_score import PageScore
from stages.quality.rules import LangRules
from stages.quality.stop_words import STOP_WORD_SETS, UNSPACED_LANGUAGES, normalize_lang
from stages.quality.text_stats import DocStats


def combined_score(rule_score: float | None, classifier_score: float | None) -> float | None:
    """The ranking score: the mean of the rule score and the classifier's P(high quality).

    Kept documents pass every rule (rule score 1), so their spread comes from the classifier;
    a document the classifier does not score (a language outside its `languages`) counts as 0.5, the midpoint,
    so it ranks neither above nor below scored ones by default.
    """
    if rule_score is None:
        return classifier_score
    return (rule_score + (0.5 if classifier_score is None else classifier_score)) / 2


class QualityConfig(StageConfig):
    """Rule families with datatrove's defaults; null turns a whole family off."""

    gopher_repetition: GopherRepetitionConfig | None = Field(
        default_factory=GopherRepetitionConfig, description="Gopher repetition rules (null: family off)")
    gopher_quality: GopherQualityConfig | None = Field(
        default_factory=GopherQualityConfig, description="Gopher quality rules (null: family off)")
    c4: C4Config | None = Field(default_factory=C4Config, description="C4 rules and line deletion (null: family off)")
    fineweb: FineWebConfig | None = Field(default_factory=FineWebConfig, description="FineWeb rules (null: family off)")
    drop_on_rules: bool = Field(True, description="false: store signals and score only (e.g. to tune thresholds)")
    min_quality_score: float | None = Field(
        None, description="also drop documents whose composite score is below this (quality_score_too_low)")
    classifier: QualityClassifierConfig | None = Field(
        default_factory=QualityClassifierConfig,
        description="fastText quality classifier (DCLM-style): the shipped multilingual model (pipeline/train/quality.py, "
                    "docs/quality.md) or a local one; null: rule score only")
    page_score: bool = Field(
        True, description="with the classifier: rank by the page score (classifier log-odds and text statistics of "
                          "line structure, stages/quality/page_score.py) instead of the classifier's probability alone")
    page_score_weights: str | None = Field(
        None, description="page score weights (JSON, `refinery train-quality`); null: the shipped "
                          "stages/models/quality_page.json, fitted to the shipped classifier")
    lang_column: str = Field("lang", description="column with the document's language (langid stage); else default_lang")
    default_lang: str = Field("en", description="language of documents without a language column")
    stop_words: dict[str, list[str]] = Field(
        default_factory=dict, description="per-language stop word lists replacing/adding to stages/quality/stop_words.py")
    unspaced_languages: list[str] = Field(
        default_factory=lambda: list(UNSPACED_LANGUAGES), description="languages whose word rules are off (no spaces between words)")
    word_rules_for_unspaced: bool = Field(False, description="true: apply word rules to unspaced languages too")


class Quality(Stage):
    name = "quality"
    Config = QualityConfig
    default_skip_kinds = ("code", "arxiv")
    decision_keys = ("gopher_quality.*", "gopher_repetition.*", "fineweb.line_punct_thr", "fineweb.short_line_thr",
                     "fineweb.char_duplicates_ratio", "fineweb.new_line_ratio", "c4.min_num_sentences",
                     "c4.filter_lorem_ipsum", "c4.filter_curly_bracket", "drop_on_rules", "min_quality_score",
                     "classifier.min_score")
    rewrite_signals = ("c4_removed_lines",)
    threshold_signals = {
        "gopher_quality.min_doc_words": "rps_doc_word_count",
        "gopher_quality.max_doc_words": "rps_doc_word_count",
        "gopher_quality.min_avg_word_length": "rps_doc_mean_word_length",
        "gopher_quality.max_avg_word_length": "rps_doc_mean_word_length",
        "gopher_quality.max_symbol_word_ratio": "rps_doc_hash_to_word_ratio",
        "gopher_quality.max_bullet_lines_ratio": "rps_doc_frac_lines_start_with_bullet",
        "gopher_quality.max_ellipsis_lines_ratio": "rps_doc_frac_lines_end_with_ellipsis",
        "gopher_quality.min_stop_words": "rps_doc_stop_word_count",
        "gopher_repetition.dup_line_frac": "rps_doc_dup_line_frac",
        "gopher_repetition.dup_para_frac": "rps_doc_dup_para_frac",
        "gopher_repetition.dup_line_char_frac": "rps_doc_dup_line_char_frac",
        "gopher_repetition.dup_para_char_frac": "rps_doc_dup_para_char_frac",
        "fineweb.line_punct_thr": "fineweb_line_punct_ratio",
        "fineweb.short_line_thr": "fineweb_short_line_ratio",
        "fineweb.char_duplicates_ratio": "fineweb_char_dup_ratio",
        "fineweb.new_line_ratio": "fineweb_new_line_ratio",
        "c4.min_num_sentences": "c4_num_sentences",
        "min_quality_score": "quality_score",
        "classifier.min_score": "quality_classifier_score",
    }
    reasons = tuple(
        [r for cls in (GopherRepetition, GopherQuality, C4, FineWeb) for r in cls(cls.Config()).reasons()]
        + ["quality_score_too_low", "classifier_score_too_low"]
    )

    def __init__(self, config: QualityConfig | None = None, **kwargs):
        super().__init__(config, **kwargs)
        c = self.config
        self.rule_sets = [
            cls(cfg)
            for cls, cfg in (
                (GopherRepetition, c.gopher_repetition),
                (GopherQuality, c.gopher_quality),
                (C4, c.c4),
                (FineWeb, c.fineweb),
            )
            if cfg is not None
        ]
        self.classifier = QualityClassifier(c.classifier) if c.classifier else None
        self.page = bool(self.classifier and c.page_score)
        self._page_score: PageScore | None = None
        self._stops = dict(STOP_WORD_SETS)
        self._stops.update({normalize_lang(k): frozenset(v) for k, v in c.stop_words.items()})
        self._unspaced = {normalize_lang(x) for x in c.unspaced_languages}
        self._lang_rules: dict[str | None, LangRules] = {}
        langs = c.classifier.languages if c.classifier else None
        self._classifier_langs = {normalize_lang(x) for x in langs or ()}
        self._tokenizer = None
        self.reasons = self._reasons()  # this config's reasons (the class lists every possible one)

    def _reasons(self) -> tuple[str, ...]:
        r = [x for rs in self.rule_sets for x in rs.reasons()]
        if self.config.min_quality_score is not None:
            r.append("quality_score_too_low")
        if self.classifier and self.config.classifier.min_score is not None:
            r.append("classifier_score_too_low")
        return tuple(r)

    def signal_fields(self) -> list[pa.Field]:
        f = [x for rs in self.rule_sets for x in rs.fields()]
        f += [pa.field("quality_failed_rules", pa.string()), pa.field("quality_score", pa.float32())]
        if self.classifier:
            f += [pa.field("quality_rule_score", pa.float32()), pa.field("quality_classifier_score", pa.float32())]
        if self.page:
            f += [pa.field("quality_page_score", pa.float32())]
        return f

    def signal_descriptions(self) -> dict[str, str]:
        out = {k: v for rs in self.rule_sets for k, v in rs.descriptions().items()}
        out["quality_failed_rules"] = "every failed rule's reason, comma-separated, in order"
        out["quality_score"] = "composite score in [0, 1]: mean over the applied rules (docs/quality.md)"
        out["quality_classifier_score"] = "the classifier's probability of its label"
        out["quality_rule_score"] = "the rules' composite score, before the classifier's is averaged in"
        out["quality_page_score"] = ("how much the text reads like a page's main content: a logistic model over the "
                                     "classifier's log-odds and line-structure statistics (docs/quality.md)")
        ranked = "page score" if self.page else "classifier score"
        out["quality_score"] = f"ranking score in [0, 1]: mean of the rule score and the {ranked} (docs/quality.md)"
        return out

    def reason_signals(self) -> dict[str, str]:
        """Each rule's reason -> the signal it thresholds (as declared by its `Rule`), and the
        score rules' reasons -> their scores."""
        out = {b.reason: b.signal for rs in self.rule_sets for b in rs.bound}
        if "quality_score_too_low" in self.reasons:
            out["quality_score_too_low"] = "quality_score"
        if "classifier_score_too_low" in self.reasons:
            out["classifier_score_too_low"] = "quality_classifier_score"
        return out

    def flagged_span(self, row: dict) -> tuple[int, int] | None:
        """The span the failed rule's family points at (`RuleSet.flagged_span`: repeated lines and
        paragraphs, C4's lorem ipsum and curly bracket); None for the whole-text rules."""
        reason, text = row.get("drop_reason"), row.get("text")
        if not reason or not text:
            return None
        def stats(t: str) -> DocStats:  # the tokenizer loaded only by a rule that splits words
            if self._tokenizer is None:
                from stages.quality.word_tokenizer import shared_tokenizer

                self._tokenizer = shared_tokenizer()
            return DocStats(t, self._tokenizer)

        for rs in self.rule_sets:
            if reason in rs.reasons():
                return rs.flagged_span(reason, text, self.lang_rules(row.get(self.config.lang_column)), stats)
        return None

    def setup(self) -> None:
        from stages.quality.word_tokenizer import shared_tokenizer

        self._tokenizer = shared_tokenizer()
        if self.classifier:
            self.classifier.setup()
        if self.page:
            self._page_score = PageScore.load(self.config.page_score_weights)

    def lang_rules(self, lang: str | None) -> LangRules:
        code = normalize_lang(lang) or normalize_lang(self.config.default_lang)
        if code not in self._lang_rules:
            self._lang_rules[code] = LangRules(
                word_rules=self.config.word_rules_for_unspaced or code not in self._unspaced,
                stop_words=self._stops.get(code),
            )
        return self._lang_rules[code]

    def __getstate__(self) -> dict:
        """Picklable for shipping to workers: the tokenizer and model are rebuilt by setup()."""
        state = self.__dict__.copy()
        state["_tokenizer"] = None
        state["_page_score"] = None
        state["_ready"] = False
        return state

    def score_text(self, text: str | None, lang: str | None = None) -> dict:
        """All signals of one document, plus its failed rules and composite score."""
        return self.evaluate(text, lang)[0]

    def evaluate(self, text: str | None, lang: str | None = None) -> tuple[dict, str | None]:
        """Signals, failed rules and score of one document, and the text it is kept with if C4
        rewrote it (None: unchanged). As in datatrove's chain, the rules after C4 (FineWeb) and
        the classifier see C4's text only if every earlier rule passed; otherwise the document
        never reaches them in datatrove and they measure the original text."""
        if self._tokenizer is None:
            self.ensure_setup()
        rules = self.lang_rules(lang)
        st = DocStats(text or "", self._tokenizer)
        out: dict = {}
        failed: list[str] = []
        scores: list[float] = []
        chain_text = None
        for rs in self.rule_sets:
            sig, cleaned = rs.run(st, rules)
            out.update(sig)
            for chk in rs.checks(sig, rules):
                scores.append(chk.score)
                if not chk.passed:
                    failed.append(chk.reason)
            if cleaned is not None and not failed:
                chain_text = cleaned
                st = DocStats(cleaned, self._tokenizer)  # words of C4's lines are memo hits
        out["quality_failed_rules"] = ",".join(failed)
        out["quality_score"] = mean_of(scores)
        return out, chain_text

    def annotate(self, batch: pa.Table) -> pa.Table:
        self.ensure_setup()
        texts = batch.column("text").to_pylist()
        col = self.config.lang_column
        langs = batch.column(col).to_pylist() if col in batch.column_names else [None] * len(texts)
        evaluated = [self.evaluate(t, lang) for t, lang in zip(texts, langs)]
        rows = [r for r, _ in evaluated]
        chain = [t if c is None else c for t, (_, c) in zip(texts, evaluated)]
        if self.classifier:
            wanted = self.classifier.config.languages
            todo = [i for i, lang in enumerate(langs) if wanted is None or (normalize_lang(lang) or normalize_lang(self.config.default_lang)) in self._classifier_langs]
            cls = self.classifier.scores([chain[i] or "" for i in todo], [langs[i] for i in todo]) if todo else []
            for i, s in zip(todo, cls):  # rounded as stored, so a retune's rescore combines the same value
                rows[i]["quality_classifier_score"] = float(pa.scalar(s, pa.float32()).as_py())
            ranked = "quality_classifier_score"
            if self.page and todo:
                page = self._page_score.scores([chain[i] or "" for i in todo], cls,
                                               [langs[i] or self.config.default_lang for i in todo])
                for i, s in zip(todo, page):
                    rows[i]["quality_page_score"] = float(pa.scalar(s, pa.float32()).as_py())
                ranked = "quality_page_score"
            for r in rows:
                r["quality_rule_score"] = r["quality_score"]
                r["quality_score"] = combined_score(r["quality_score"], r.get(ranked))
        for field in self.signal_fields():
            values = [r.get(field.name) for r in rows]
            arr = pa.array(values, type=field.type)
            batch = set_column(batch, field.name, arr)
        if any(c is not None for _, c in evaluated):
            # kept documents carry C4's text; rejected ones keep the original, for auditing
            # (decided from the stored columns, so annotate and decide agree to the last bit)
            new = [t if c is None or d is not None else c for t, (_, c), d in zip(texts, evaluated, self.decide(batch))]
            batch = set_column(batch, "text", pa.array(new, type=batch.schema.field("text").type))
        return batch

    def rescore(self, batch: pa.Table) -> tuple[pa.Table, list[bool]]:
        """Failed rules and scores re-derived from the stored measurements under this config
        (`refinery retune`, the report's yield): no text is read, and the rules are checked column
        by column (`RuleSet.check_arrays`, the same arithmetic as `checks`). Also says, per row,
        whether the C4 chain changed: C4 rewrote the document and the rules up to C4 now pass where
        they failed (or the reverse), so the FineWeb signals and the classifier score were measured
        on the other text."""
        col = self.config.lang_column
        n = batch.num_rows
        langs = batch.column(col).to_pylist() if col in batch.column_names else [None] * n
        word = {lang: self.lang_rules(lang).word_rules for lang in set(langs)}
        word_rules = np.array([word[lang] for lang in langs], bool)
        total = np.zeros(n)  # added in the order `evaluate` adds (mean_of)
        count = np.zeros(n, np.int64)
        failed: list[list[str]] = [[] for _ in range(n)]
        for rs in self.rule_sets:
            for reason, applies, passed, score in rs.check_arrays(batch, word_rules):
                total = total + np.where(applies, score, 0.0)
                count += applies
                for i in np.flatnonzero(applies & ~passed).tolist():
                    failed[i].append(reason)
        rule_col = [float(t / c) if c else None for t, c in zip(total.tolist(), count.tolist())]
        failed_col = [",".join(f) for f in failed]
        pre = self._reasons_up_to_c4()
        changed = [False] * n
        if pre and "c4_removed_lines" in batch.column_names:
            removed = batch.column("c4_removed_lines").to_pylist()
            old_failed = batch.column("quality_failed_rules").to_pylist()
            for i, (rem, now, was) in enumerate(zip(removed, failed, old_failed)):
                if rem:
                    now_pre = not any(f in pre for f in now)
                    was_pre = not any(f in pre for f in (was or "").split(",") if f)
                    changed[i] = now_pre != was_pre
        batch = set_column(batch, "quality_failed_rules", pa.array(failed_col, pa.string()))
        if self.classifier:
            ranked = "quality_page_score" if self.page and "quality_page_score" in batch.column_names else "quality_classifier_score"
            cls = batch.column(ranked).to_pylist()
            batch = set_column(batch, "quality_rule_score", pa.array(rule_col, pa.float32()))
            score = [combined_score(r, c) for r, c in zip(rule_col, cls)]
        else:
            score = rule_col
        batch = set_column(batch, "quality_score", pa.array(score, pa.float32()))
        return batch, changed

    def measures_cleaned(self, failed: str | None) -> bool:
        """Do the rules after C4 (and the classifier) measure C4's cleaned text for a document that
        fails these rules (`quality_failed_rules`)? Only if no rule up to C4 fails (`evaluate`)."""
        pre = self._reasons_up_to_c4()
        return bool(pre) and not any(f in pre for f in (failed or "").split(",") if f)

    def measure_context(self, batch: pa.Table) -> list[bytes]:
        """Besides the text: which text the rules after C4 see (`measures_cleaned`) and the language."""
        col = self.config.lang_column
        langs = batch.column(col).to_pylist() if col in batch.column_names else [None] * batch.num_rows
        return [b"%d\x1f%s" % (int(self.measures_cleaned(f)), (lang or "").encode("utf-8"))
                for f, lang in zip(batch.column("quality_failed_rules").to_pylist(), langs)]

    def can_free(self, key: str, batch: pa.Table) -> list[int] | None:
        """Those that fail one of the rules setting `key` thresholds (in the stored
        `quality_failed_rules`). A rule a document passes still passes when it is relaxed or turned
        off, and every other rule, the rules' mean score and the text the rules after C4 see
        (`measures_cleaned`) stay as they were, so its decision cannot change. The reasons a setting
        thresholds are those that go when it is turned off."""
        if "quality_failed_rules" not in batch.column_names:
            return None
        mine = None
        base = self.config.model_dump()
        *path, last = key.split(".")
        for off in (None, 0, []):
            cfg = node = dict(base)  # the dicts on the key's path copied, the rest shared
            for k in path:
                node[k] = dict(node[k])
                node = node[k]
            node[last] = off
            try:
                gone = set(self.reasons) - set(type(self)(self.Config.model_validate(cfg)).reasons)
            except Exception:
                continue
            mine = gone if mine is None else mine | gone
        if not mine or mine & {"quality_score_too_low", "classifier_score_too_low"}:
            return None  # a score threshold: any document may move
        failed = batch.column("quality_failed_rules").to_pylist()
        return [i for i, f in enumerate(failed) if f and not mine.isdisjoint(f.split(","))]

    def threshold_marks(self) -> list[tuple[str, str, float]]:
        """Besides `threshold_signals`: each n-gram's threshold of the repetition rules, and the
        symbol ratio's second column (the ellipsis rule shares the hash rule's key, as in datatrove)."""
        out = super().threshold_marks()
        rep, gq = self.config.gopher_repetition, self.config.gopher_quality
        for kind in ("top", "dup"):
            for n, t in (getattr(rep, f"{kind}_n_grams") or []) if rep is not None else []:
                out.append((f"rps_doc_{kind}_{n}gram_frac", f"gopher_repetition.{kind}_n_grams[{n}]", float(t)))
        if gq is not None and gq.max_symbol_word_ratio is not None:
            out.append(("rps_doc_ellipsis_to_word_ratio", "gopher_quality.max_symbol_word_ratio",
                        float(gq.max_symbol_word_ratio)))
        return out

    def _reasons_up_to_c4(self) -> set[str]:
        """The reasons of the rule sets up to and including C4 (which rewrites the text the later
        ones measure); empty when the recipe has no C4."""
        pre: set[str] = set()
        for rs in self.rule_sets:
            pre.update(rs.reasons())
            if isinstance(rs, C4):
                return pre
        return set()

    def decide(self, batch: pa.Table) -> Sequence[str | None]:
        failed = batch.column("quality_failed_rules").to_pylist()
        score = batch.column("quality_score").to_pylist()
        cls = batch.column("quality_classifier_score").to_pylist() if self.classifier else [None] * len(failed)
        return [self._reason(f, s, q) for f, s, q in zip(failed, score, cls)]

    def _reason(self, failed: str | None, score: float | None, cls: float | None) -> str | None:
        c = self.config
        if c.drop_on_rules and failed:
            return failed.split(",", 1)[0]
        if c.min_quality_score is not None and score is not None and score < c.min_quality_score:
            return "quality_score_too_low"
        if cls is not None and c.classifier.min_score is not None and cls < c.classifier.min_score:
            return "classifier_score_too_low"
        return None



def mean_of(scores: list[float]) -> float | None:
    """The mean of the checks' scores, added left to right from 0.0, as `rescore` adds its columns
    (not `sum`, whose rounding differs between Python versions)."""
    if not scores:
        return None
    total = 0.0
    for x in scores:
        total += x
    return total / len(scores)
