"""How a quality rule is declared: once, as a `Rule`, from which everything else derives.

A rule set (Gopher quality, Gopher repetition, C4, FineWeb) measures a document into named signals
(`RuleSet.measure`, the only code a family writes) and declares its `signals`, `rules` and
`options`. From those declarations come the family's pydantic config (one field per rule
threshold and per option, with its default and description), its Arrow signal fields, its reasons,
datatrove's name for each reason, and its checks. Declarations are validated when the class is
created (a rule naming an undeclared signal, or two rules sharing a key with different defaults,
is an error at import), and the first document a rule set measures is checked against the
declared signals (a signal computed under a misspelt name is an error, not a column of nulls).

Each check has the drop reason, whether it passed and a score in [0, 1] for the composite quality
score: 1 if it passed; if it failed, 0.5 * (1 - relative distance beyond the threshold), floored
at 0, so a near miss scores close to 0.5 and a far miss (or a yes/no rule such as lorem ipsum)
scores 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, create_model


class RuleSetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Check:
    reason: str
    passed: bool
    score: float


@dataclass(frozen=True)
class LangRules:
    """How a document's language changes the rules: word rules off for unspaced scripts."""

    word_rules: bool
    stop_words: frozenset[str] | None


Test = Literal["at_most", "at_least", "flag", "present"]


def _falsy(threshold: Any) -> bool:
    return not threshold


@dataclass(frozen=True)
class Signal:
    """A column a rule set stores on every document. `{n}` in the name: one per n of `per_n`."""

    name: str
    type: pa.DataType
    description: str
    per_n: str | None = None  # config key holding [(n, threshold), ...]


@dataclass(frozen=True)
class Option:
    """A config key that is not a rule's threshold (e.g. how C4 splits lines)."""

    key: str
    type: Any
    default: Any
    description: str


@dataclass(frozen=True)
class Rule:
    """One rule: the document is dropped with `reason` when `signal` fails `test` against the
    value of config key `key`.

    test: "at_most" (drop when signal > threshold), "at_least" (drop when signal < threshold),
    "flag" (drop when the signal is true; the key is the rule's on/off switch), "present" (drop
    when the signal is missing, e.g. an empty document, and skip the family's other rules; no key).
    per_n: the key holds a list of (n, threshold); the rule applies once per n, `{n}` in reason,
    signal and datatrove name replaced by n.
    value: turns the signal into the compared value (None: the rule does not apply to this document).
    off: the thresholds that turn the rule off (default: None, 0 and false, as datatrove's `if self.x`).
    """

    reason: str
    signal: str
    test: Test
    key: str | None
    default: Any
    type: Any
    description: str
    datatrove: str  # datatrove's reason for the same rule, for the parity benchmarks
    word_rule: bool = False  # off for unspaced languages (zh, ja, th, ...)
    per_n: bool = False
    value: Callable[[Any, Any], Any] | None = None
    off: Callable[[Any], bool] = _falsy


@dataclass(frozen=True)
class BoundRule:
    """A rule with its threshold from the config (and n filled in for per-n rules)."""

    reason: str
    signal: str
    test: Test
    threshold: Any
    datatrove: str
    word_rule: bool
    value: Callable[[Any, Any], Any] | None


def at_most(reason: str, value: float | None, limit: float | None) -> Check | None:
    """Rule `value <= limit` (datatrove drops when value > limit). None when disabled or undefined."""
    if not limit or value is None:
        return None
    if value > limit:
        return Check(reason, False, 0.5 * max(0.0, 1.0 - (value - limit) / abs(limit)))
    return Check(reason, True, 1.0)


def at_least(reason: str, value: float | None, limit: float | None) -> Check | None:
    """Rule `value >= limit` (datatrove drops when value < limit). None when disabled or undefined."""
    if not limit or value is None:
        return None
    if value < limit:
        return Check(reason, False, 0.5 * max(0.0, 1.0 - (limit - value) / abs(limit)))
    return Check(reason, True, 1.0)


def flag(reason: str, failed: bool | None) -> Check | None:
    if failed is None:
        return None
    return Check(reason, not failed, 0.0 if failed else 1.0)


_TESTS = {"at_most": at_most, "at_least": at_least}


def config_model(name: str, module: str, rules: tuple[Rule, ...], options: tuple[Option, ...]) -> type[RuleSetConfig]:
    """The family's pydantic config: one field per rule key and per option, in declaration order."""
    fields: dict[str, tuple[Any, Any]] = {}
    described: dict[str, list[str]] = {}
    for r in rules:
        if r.key is None:
            continue
        if r.key in fields:
            if fields[r.key][1].default != r.default:
                raise TypeError(f"{name}: rules sharing key {r.key!r} declare different defaults")
        # a limit below zero would reject every document: no measure here is negative
        bound = {"ge": 0} if r.test in _TESTS and not r.per_n else {}
        fields[r.key] = (r.type, Field(default=r.default, **bound))
        described.setdefault(r.key, []).append(f"{r.reason} when {r.description}")
    for o in options:
        if o.key in fields:
            raise TypeError(f"{name}: option {o.key!r} is also a rule's key")
        fields[o.key] = (o.type, Field(default=o.default))
        described[o.key] = [o.description]
    for key, (typ, field) in fields.items():
        fields[key] = (typ, Field(default=field.default, description="; ".join(described[key]),
                                  **{"ge": 0} if any(getattr(m, "ge", None) == 0 for m in field.metadata) else {}))
    return create_model(name, __base__=RuleSetConfig, __module__=module, **fields)


class RuleSet:
    """One family of rules, declared by `signals`, `rules` and `options`; `measure` computes signals.

    Subclasses set `name` (the family's key in the quality stage's config), the declarations and
    `config_name`; `Config` is built from them when the class is created.
    """

    name: ClassVar[str] = ""
    config_name: ClassVar[str] = ""
    signals_declared: ClassVar[tuple[Signal, ...]] = ()
    rules: ClassVar[tuple[Rule, ...]] = ()
    options: ClassVar[tuple[Option, ...]] = ()
    Config: ClassVar[type[RuleSetConfig]] = RuleSetConfig

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.rules:
            return
        if not cls.config_name:
            raise TypeError(f"{cls.__name__}: set config_name (and export the Config under that name, for pickling)")
        names = {s.name for s in cls.signals_declared}
        keys = {r.key for r in cls.rules} | {o.key for o in cls.options}
        for r in cls.rules:
            if r.signal not in names:
                raise TypeError(f"{cls.__name__}: rule {r.reason!r} reads undeclared signal {r.signal!r}")
            if (r.key is None) != (r.test == "present"):
                raise TypeError(f"{cls.__name__}: rule {r.reason!r}: only a 'present' rule has no config key")
            if r.per_n != ("{n}" in r.reason):
                raise TypeError(f"{cls.__name__}: per-n rule {r.reason!r} must have {{n}} in its reason (and only it)")
        if any(r.test == "present" for r in cls.rules[1:]):
            raise TypeError(f"{cls.__name__}: a 'present' rule gates the family and must come first")
        for s in cls.signals_declared:
            if s.per_n is not None and s.per_n not in keys:
                raise TypeError(f"{cls.__name__}: signal {s.name!r} repeats over unknown key {s.per_n!r}")
        cls.Config = config_model(cls.config_name, cls.__module__, cls.rules, cls.options)

    def __init__(self, config: RuleSetConfig | None = None):
        self.config = config if config is not None else self.Config()
        if not isinstance(self.config, self.Config):
            raise TypeError(f"{type(self).__name__} needs a {self.Config.__name__}, got {type(self.config).__name__}")
        self.bound = self._bind()
        self._fields = self._signal_fields()
        self._names = frozenset(f.name for f in self._fields)
        self._verified = False

    def __getstate__(self) -> dict:
        """Picklable for shipping to workers: bound rules may hold lambdas; rebuilt on load."""
        return {k: v for k, v in self.__dict__.items() if k != "bound"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.bound = self._bind()

    # -- derived from the declarations ------------------------------------------------------
    def _ns(self, key: str) -> list[int]:
        return [n for n, _ in getattr(self.config, key)]

    def _bind(self) -> list[BoundRule]:
        out = []
        for r in self.rules:
            if r.per_n:
                pairs = getattr(self.config, r.key)
            else:
                pairs = [(None, getattr(self.config, r.key) if r.key else None)]
            for n, t in pairs:
                if r.key is not None and r.off(t):
                    continue
                fill = (lambda s: s.replace("{n}", str(n))) if r.per_n else (lambda s: s)
                out.append(BoundRule(fill(r.reason), fill(r.signal), r.test, t, fill(r.datatrove), r.word_rule, r.value))
        return out

    def _signal_fields(self) -> list[pa.Field]:
        out = []
        for s in self.signals_declared:
            names = [s.name.replace("{n}", str(n)) for n in self._ns(s.per_n)] if s.per_n else [s.name]
            out += [pa.field(x, s.type) for x in names]
        return out

    def fields(self) -> list[pa.Field]:
        """The signal columns of this config, in declaration order."""
        return list(self._fields)

    def reasons(self) -> list[str]:
        """This config's reasons (rules turned off by their threshold have none)."""
        return [b.reason for b in self.bound]

    def datatrove_reasons(self) -> dict[str, str]:
        """Each reason of ours -> the reason datatrove's filter gives for the same rule."""
        return {b.reason: b.datatrove for b in self.bound}

    def descriptions(self) -> dict[str, str]:
        """Signal name -> what it measures (names with {n} as declared)."""
        return {s.name: s.description for s in self.signals_declared}

    # -- what a family writes ---------------------------------------------------------------
    def measure(self, st: Any, lang: LangRules) -> dict[str, Any]:
        """Every declared signal of one document (DocStats) by name."""
        raise NotImplementedError

    def scan(self, st: Any, lang: LangRules) -> tuple[dict[str, Any], str | None]:
        """Signals and the text the family leaves (None: unchanged). Only C4 rewrites."""
        return self.measure(st, lang), None

    def flagged_span(self, reason: str, text: str, lang: LangRules, stats: Callable[[str], Any]) -> tuple[int, int] | None:
        """Where in `text` this family's `reason` applies, as (start, end) character offsets; None
        when the rule is about the whole text (stages/quality/spans.py). `stats`: text -> DocStats."""
        return None

    # -- what the quality stage calls -------------------------------------------------------
    def run(self, st: Any, lang: LangRules) -> tuple[dict[str, Any], str | None]:
        sig, cleaned = self.scan(st, lang)
        return self.verified(sig), cleaned

    def signals(self, st: Any, lang: LangRules) -> dict[str, Any]:
        return self.run(st, lang)[0]

    def verified(self, sig: dict[str, Any]) -> dict[str, Any]:
        """The first document's signals must be exactly the declared ones (then trusted)."""
        if not self._verified:
            if set(sig) != self._names:
                missing, extra = sorted(self._names - set(sig)), sorted(set(sig) - self._names)
                raise KeyError(f"{type(self).__name__} measured signals that differ from its declaration: "
                               f"missing {missing}, undeclared {extra}")
            self._verified = True
        return sig

    def check_arrays(self, table: pa.Table, word_rules: np.ndarray) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
        """`checks` for every row of `table` (its signal columns) at once, with the same float
        arithmetic: per bound rule in order, (reason, applies, passed, score) arrays. `word_rules`:
        per row, does the document's language get the word rules (`LangRules.word_rules`)."""
        n = table.num_rows
        out = []
        gone = np.zeros(n, bool)  # rows whose family stopped at a failed 'present' rule
        for b in self.bound:
            col = table.column(b.signal)
            valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
            if b.test == "present":
                out.append((b.reason, ~valid, np.zeros(n, bool), np.zeros(n)))
                gone |= ~valid
                continue
            live = ~gone & word_rules if b.word_rule else ~gone
            if b.test != "flag" and not b.threshold:
                continue
            if b.value is not None:
                vals = [b.value(v, self.config) if ok and v is not None else None
                        for v, ok in zip(col.to_pylist(), live)]
                valid = np.array([v is not None for v in vals], bool)
                v = np.array([0.0 if x is None else x for x in vals], dtype=float)
            else:
                v = pc.fill_null(col, False if pa.types.is_boolean(col.type) else 0).to_numpy(zero_copy_only=False)
            applies = live & valid
            if b.test == "flag":
                bad = v.astype(bool)
                out.append((b.reason, applies, ~bad, np.where(bad, 0.0, 1.0)))
                continue
            v = v.astype(float)
            limit = float(b.threshold)
            with np.errstate(invalid="ignore"):
                bad = v > limit if b.test == "at_most" else v < limit
                dist = (v - limit) if b.test == "at_most" else (limit - v)
                score = np.where(bad, 0.5 * np.maximum(0.0, 1.0 - dist / abs(limit)), 1.0)
            out.append((b.reason, applies, ~bad, score))
        return out

    def checks(self, sig: dict[str, Any], lang: LangRules) -> list[Check]:
        out = []
        for b in self.bound:
            if b.word_rule and not lang.word_rules:
                continue
            v = sig[b.signal]
            if b.test == "present":
                if v is None:
                    return [Check(b.reason, False, 0.0)]
                continue
            if b.value is not None and v is not None:
                v = b.value(v, self.config)
            if b.test == "flag":
                chk = flag(b.reason, v)
            else:
                chk = _TESTS[b.test](b.reason, v, b.threshold)
            if chk is not None:
                out.append(chk)
        return out
