"""`where:` filters of mixture sources: a quality bucket is a filtered view of a run's kept documents.

    sources:
      cc_top:  {source: cc, where: "quality_score >= 0.8", weight: 0.5, max_epochs: 4}
      cc_mid:  {source: cc, where: "quality_score >= 0.6 and quality_score < 0.8", weight: 0.3, max_epochs: 2}
      cc_rest: {source: cc, where: "quality_score < 0.6", weight: 0.2, max_epochs: 1}

A filter is one or more `COLUMN OP VALUE` conditions joined by `and`; OP is one of
>= > <= < == !=, VALUE a number or a string (quoted or bare), COLUMN any column of the kept
Parquet files (signals included). A document whose column is null matches no condition on it.
Buckets of one source are tried in the recipe's order and a document goes to the first it
matches, so overlapping buckets never count a document twice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

_COND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(.+?)\s*$")
_OPS = {">=": pc.greater_equal, ">": pc.greater, "<=": pc.less_equal, "<": pc.less, "==": pc.equal, "!=": pc.not_equal}


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: float | str


def parse_where(text: str) -> tuple[Condition, ...]:
    """Conditions of a filter; ValueError with what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected a filter such as 'quality_score >= 0.8'")
    out = []
    for part in re.split(r"\s+and\s+", text.strip()):
        m = _COND.match(part)
        if not m:
            raise ValueError(f"cannot read {part!r}: expected COLUMN OP VALUE with OP one of >= > <= < == !=")
        col, op, raw = m.groups()
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            value: float | str = raw[1:-1]
        else:
            try:
                value = float(raw)
            except ValueError:
                value = raw
        out.append(Condition(col, op, value))
    return tuple(out)


def columns(conds: tuple[Condition, ...]) -> list[str]:
    return sorted({c.column for c in conds})


def mask(table: pa.Table, conds: tuple[Condition, ...]) -> pa.Array:
    """Rows matching every condition (null never matches)."""
    result = pa.array([True] * table.num_rows, pa.bool_())
    for c in conds:
        col = table.column(c.column)
        if isinstance(c.value, float) and not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise ValueError(f"column {c.column!r} is {col.type}, not a number")
        value = pa.scalar(c.value) if isinstance(c.value, str) else pa.scalar(c.value, pa.float64())
        m = _OPS[c.op](col, value)
        result = pc.and_(result, pc.fill_null(m, False))
    return result
