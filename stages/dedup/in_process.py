"""Deduplicate a list of texts in this process with the pipeline's own global-stage code.

Why: the API and tests need "texts -> clusters, kept indices" without a recipe or Ray, and it must
be the same code path as a pipeline run (annotate, spill files, resolve, decision files), so the
two can never disagree. Ids are the texts' indices written as 32 hex digits, so "lowest id" means
"lowest index".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from stages.base import Executor, GlobalStage, LocalExecutor
from stages.dedup import io


@dataclass
class Duplicates:
    """Result of deduplicating a list of texts: indices into that list."""

    kept: list[int]  # indices of the kept texts, ascending
    keeper: list[int]  # per text: itself if kept, else the kept text it duplicates
    cluster: list[int]  # per text: its cluster's best text (itself when not in a cluster)
    cluster_size: list[int]


BIG_TEXT = 1 << 20  # characters: a longer text becomes its own chunk of `text_column`


def text_column(texts: Sequence[str | None]) -> pa.ChunkedArray:
    """The texts as an Arrow string column in about one copy of their bytes. `pa.array`'s builder
    grows its buffer as it appends, so it peaks at several times the texts (measured: 3.7 bytes
    per byte for three 8 MB texts, 5.7 for one); each text over `BIG_TEXT` characters is its own
    chunk, made from its UTF-8 bytes without a builder, the others go through `pa.array` between."""
    chunks, run = [], []
    for s in texts:
        if s is not None and len(s) > BIG_TEXT:
            if run:
                chunks.append(pa.array(run, pa.string()))
                run = []
            data = s.encode()
            chunks.append(pa.StringArray.from_buffers(1, pa.py_buffer(np.array([0, len(data)], np.int32)), pa.py_buffer(data)))
            del data
        else:
            run.append(s)
    if run or not chunks:
        chunks.append(pa.array(run, pa.string()))
    return pa.chunked_array(chunks, pa.string())


def run_in_process(stage: GlobalStage, texts: Sequence[str | None], executor: Executor | None,
                   work_dir: str | None, shard_size: int, cluster_col: str | None, size_col: str,
                   quality: Sequence[float] | None = None) -> Duplicates:
    """annotate -> spill files -> resolve (LocalExecutor unless given) -> indices."""
    import shutil
    import tempfile

    tmp = None
    if work_dir is None:
        tmp = work_dir = tempfile.mkdtemp(prefix=f"refinery-{stage.name}-")
    try:
        work = io.Work(work_dir)
        paths = []
        for s, start in enumerate(range(0, max(len(texts), 1), shard_size)):
            chunk = list(texts[start : start + shard_size])
            cols = {"id": [f"{k:032x}" for k in range(start, start + len(chunk))], "text": text_column(chunk)}
            if quality is not None:
                cols["quality_score"] = pa.array(quality[start : start + shard_size], pa.float64())
            path = f"{work.root}/spill/part-{s:05d}.parquet"
            table = stage.annotate(pa.table(cols))
            work.write_table(path, table, bounds=io.text_groups(table.column("text")), options=io.spill_options(table.schema))
            del table
            del cols, chunk  # the Arrow copy of the texts is in the spill file now; not held through resolve
            paths.append(work.fs.unstrip_protocol(path) if "://" in work_dir else path)
        io.release_memory()  # what annotate and the writes freed, before the global step's waves
        files = stage.resolve(paths, executor or LocalExecutor())
        n = len(texts)
        keeper, cluster, size = list(range(n)), list(range(n)), [1] * n
        for f in files:
            t = io.read_columns(f, ["id", "drop_detail", size_col] + ([cluster_col] if cluster_col else [])).to_pylist()
            for r in t:
                k = int(r["id"], 16)
                if r["drop_detail"] is not None:
                    keeper[k] = int(r["drop_detail"], 16)
                if cluster_col:
                    cluster[k] = int(r[cluster_col], 16)
                size[k] = r[size_col]
        if not cluster_col:  # exact duplicates: the cluster is the survivor
            cluster = list(keeper)
        return Duplicates([k for k in range(n) if keeper[k] == k], keeper, cluster, size)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
