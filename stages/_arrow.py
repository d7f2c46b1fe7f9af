"""Small Arrow helpers shared by stages."""
from __future__ import annotations

import pyarrow as pa


def set_column(batch: pa.Table, name: str, column: pa.Array) -> pa.Table:
    """Replace column `name` if present (a stage run twice), else append it."""
    i = batch.schema.get_field_index(name)
    if i >= 0:
        return batch.set_column(i, name, column)
    return batch.append_column(name, column)


def null_columns(batch: pa.Table, names: list[str]) -> pa.Table:
    """The columns `names` that `batch` has, all null (signals of a stage that did not see the rows)."""
    for name in (n for n in names if n in batch.column_names):
        batch = set_column(batch, name, pa.nulls(batch.num_rows, batch.schema.field(name).type))
    return batch


def flat(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array (a chunked array of no chunks: an empty one of its type)."""
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    return col
