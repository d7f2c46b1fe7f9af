"""Small Arrow helpers shared by stages."""
from __future__ import annotations

import pyarrow as pa


def set_column(batch: pa.Table, name: str, column: pa.Array) -> pa.Table:
    """Replace column `name` if present (a stage run twice), else append it."""
    i = batch.schema.get_field_index(name)
    if i >= 0:
        return batch.set_column(i, name, column)
    return batch.append_column(name, column)
