"""A per-document stage's own drop details (`Stage.drop_details`), merged with the runner's.

The runner gives a detail of its own only to a document it stopped (`time_limit_exceeded`); every
other rejected row takes the detail its stage derives from the row's signals (the URL filter names
the list and the domain). Used by the worker and by `refinery retune` alike.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from stages.base import Stage


def stage_details(stage: Stage, annotated: pa.Table, reasons: pa.Array,
                  runner_details: pa.Array | None) -> pa.Array | None:
    """One detail per row: the runner's where it has one, else the stage's; None when neither has any."""
    ours = stage.drop_details(annotated, reasons.to_pylist()) if reasons.null_count < len(reasons) else None
    if ours is None:
        return runner_details
    ours = pa.array(ours, pa.string())
    if runner_details is None:
        return ours
    return pc.if_else(pc.is_valid(runner_details), runner_details, ours)
