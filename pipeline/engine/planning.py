"""Planning a run: input files (shards) -> parts -> phases. No I/O beyond listing and stamping inputs.

    plan_shards        the recipe's sources -> numbered shards (one input file each), checked apart from the output
    input_stamps       each shard's size and mtime (ETag on object stores), for the resume fingerprint
    split_shards       a file its source can cut (a large WARC) -> one shard per byte span (Source.split)
    plan_parts         consecutive shards of one source joined into parts up to a byte target (part_limits)
    plan_phases        the stages cut into phases at global stages; consecutive global stages (and the
                       per-document stages between them) form one barrier group (pipeline/engine/barrier.py)

The per-part work is pipeline/engine/worker.py; running phases over parts on a WorkerPool is
pipeline/engine/runner.py.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Sequence

from pipeline import storage
from pipeline.engine.recipe import Recipe
from pipeline.errors import ConfigError
from pipeline.sources.base import file_spans
from stages.base import Stage


@dataclass(frozen=True)
class Shard:
    index: int
    source: str
    kind: str
    url: str
    id_path: str
    size: int = 0  # input bytes when known (from the run's input stamps), for planning parts
    # [start, end) bytes of the file when it is read in several shards (split_shards); None: whole
    span: tuple[int, int] | None = None

    @property
    def part(self) -> str:
        return f"part-{self.index:05d}.parquet"


@dataclass(frozen=True)
class Part:
    """A unit of work and of output: consecutive input shards of one source, read in order and
    written as one set of files named after its first shard (`part-N`), with one commit record
    that lists the shards it covers. Why: a task, a Parquet writer, a record and a file per stage
    cost milliseconds each, which dominate when input files are small (a crawl of 90,000 files);
    a part keeps that cost per part, and a killed part is redone whole. A part of one shard is
    exactly the shard."""
    shards: tuple[Shard, ...]

    @property
    def index(self) -> int:
        return self.shards[0].index

    @property
    def source(self) -> str:
        return self.shards[0].source

    @property
    def kind(self) -> str:
        return self.shards[0].kind

    @property
    def part(self) -> str:
        return self.shards[0].part

    def describe(self) -> str:
        """For the run log: the shard and its file, or the first file and how many more."""
        first = self.shards[0]
        more = f" and {len(self.shards) - 1} more" if len(self.shards) > 1 else ""
        at = f" bytes {first.span[0]}-{first.span[1]}" if first.span else ""
        return f"shard {first.index} ({first.source} {first.id_path}{at}{more})"


@dataclass
class Phase:
    index: int
    stages: list[int] = field(default_factory=list)  # per-document stages, by recipe position
    # The global stages that end this phase (a barrier group), by recipe position: one spill per
    # shard with every member's keys; they resolve in order, each on the earlier ones' survivors.
    group: list[int] = field(default_factory=list)

    @property
    def barrier(self) -> int | None:
        """The group's first stage: its label names the spill (`_work/LABEL/...`)."""
        return self.group[0] if self.group else None


def plan_shards(recipe: Recipe) -> list[Shard]:
    """Every input file, in sorted order, as a shard. Files inside the output are never inputs
    (an output below an input glob's root is not read back on a rerun)."""
    shards: list[Shard] = []
    out = recipe.output
    for name, source in recipe.sources.items():
        seen: dict[str, str] = {}
        for url, id_path in source.files():
            if storage.inside(url, out):
                continue
            if id_path in seen:  # document ids and the `file` column come from id_path: they must differ
                if _same_file(seen[id_path], url):  # one file named twice (a.jsonl, ./a.jsonl): read once
                    continue
                raise ConfigError(
                    f"{recipe.path}: sources.{name}.paths: {seen[id_path]!r} and {url!r} are both {id_path!r} "
                    "below their input roots, so their documents would share ids; name a folder above both "
                    "(a directory or glob) so their paths below it differ, or put them in two sources")
            seen[id_path] = url
            shards.append(Shard(len(shards), name, source.kind, url, id_path))
    if not shards:
        raise ConfigError(f"{recipe.path}: sources: no input files")
    return shards


def split_shards(recipe: Recipe, shards: Sequence[Shard]) -> list[Shard]:
    """Shards renumbered, every file its source cuts (`Source.split`, pipeline/sources/base.py
    `file_spans`) one shard per span; the same inputs (stamped in the resume fingerprint) give the same."""
    out: list[Shard] = []
    for s, spans in zip(shards, file_spans([(recipe.sources[s.source], s.url, s.size) for s in shards])):
        for span in spans or [None]:
            out.append(replace(s, index=len(out), **({"size": span[1] - span[0], "span": span} if span else {})))
    return out


def _same_file(a: str, b: str) -> bool:
    if storage.is_url(a) or storage.is_url(b):
        return storage.normalize(a) == storage.normalize(b)
    return os.path.realpath(a) == os.path.realpath(b)


def _glob_root(pattern: str) -> str:
    """The directory before a pattern's first glob character (the pattern itself when it has none)."""
    if not any(c in pattern for c in "*?["):
        return pattern
    head = pattern[: min(pattern.index(c) for c in "*?[" if c in pattern)]
    return head.rsplit("/", 1)[0] if "/" in head else "."


def check_output_apart(recipe: Recipe) -> None:
    """Refuse an output that is, contains or lies inside an input (a directory walked as input, or
    an input file or glob root): writing there would mix outputs into inputs, and --overwrite would
    delete inputs. (An output below a glob's root is allowed: its files are never inputs.)"""
    out = recipe.output
    for name, source in recipe.sources.items():
        for j, pattern in enumerate(source.config.paths):
            where = f"sources.{name}.paths[{j}] ({pattern!r})"
            if storage.inside(_glob_root(pattern), out):
                raise ConfigError(f"{recipe.path}: output: {out!r} contains the input {where}; "
                                  "choose an output outside the inputs")
            if _glob_root(pattern) == pattern and storage.inside(out, pattern):
                raise ConfigError(f"{recipe.path}: output: {out!r} is inside the input {where}; "
                                  "choose an output outside the inputs")


def input_stamps(shards: Sequence[Shard]) -> dict[str, str]:
    """source:file -> size and mtime (ETag on object stores), for the resume fingerprint."""
    out = {}
    for s in shards:
        try:
            out[f"{s.source}:{s.id_path}"] = storage.stamp(s.url)
        except (OSError, ValueError):
            out[f"{s.source}:{s.id_path}"] = "unreadable"
    return out


def stamp_size(stamp: str) -> int:
    """The size in an input stamp (0 when unknown)."""
    m = re.match(r"size=(\d+)", stamp)
    return int(m.group(1)) if m else 0


def plan_parts(shards: Sequence[Shard], sizes: Sequence[int], target_bytes: int, most_shards: int) -> list[Part]:
    """Consecutive shards of one source, joined into parts of at most `target_bytes` of input and
    `most_shards` shards (a shard larger than the target is a part of its own). Why by bytes: a
    part's cost is its input plus a fixed cost (a task, its writers, its record, its files in every
    later step), so small files are joined until the fixed cost is small beside the work, while
    large files stay one part each and the work still spreads over every worker."""
    parts: list[Part] = []
    cur: list[Shard] = []
    cur_bytes = 0
    for s, b in zip(shards, sizes):
        if cur and (s.source != cur[0].source or cur_bytes + b > target_bytes or len(cur) >= most_shards):
            parts.append(Part(tuple(cur)))
            cur, cur_bytes = [], 0
        cur.append(s)
        cur_bytes += b
    if cur:
        parts.append(Part(tuple(cur)))
    return parts


PARTS_PER_WORKER = 4  # parts per worker when files are small: enough to balance, few enough to be cheap
MOST_PART_BYTES = 256 << 20  # input bytes of a part of small files: a redone part costs at most this


def part_limits(sizes: Sequence[int], workers: int) -> tuple[int, int]:
    """(target bytes, most shards) of a part for a run of these input sizes on `workers` workers:
    about PARTS_PER_WORKER parts per worker, each at most MOST_PART_BYTES; when sizes are unknown
    (0), by count alone."""
    n = max(1, workers * PARTS_PER_WORKER)
    target = min(MOST_PART_BYTES, max(1, -(-sum(sizes) // n)))
    return target, max(1, -(-len(sizes) // n))


def largest_first(shards: Sequence[Shard], sizes: Sequence[int]) -> list[Shard]:
    """Dispatch order for a phase: biggest input first (longest-processing-time-first), so a worker
    does not start a big shard while the others run out of work. Outputs are named by shard index,
    so the order changes nothing but the wall time."""
    order = sorted(range(len(shards)), key=lambda i: -sizes[i])
    return [shards[i] for i in order]


def plan_phases(stages: list[Stage]) -> list[Phase]:
    """Phases cut at global stages. A global stage joins the previous barrier group
    when it can decide on the earlier members' survivors (`accepts_dropped_before`), the group's
    last global member leaves the text as it was (not `rewrites_text`: line dedup ends a group)
    and both apply to the same shards. The per-document stages between them join the group too
    (`Phase.group` then holds them, in recipe order): they run in the wave before the next global
    member (`ShardWorker.wave`) over the group's one spill, instead of a phase that re-spills the
    text."""
    phases = [Phase(0)]
    for i, st in enumerate(stages):
        if not st.needs_all_documents:
            phases[-1].stages.append(i)
            continue
        prev = phases[-2] if len(phases) > 1 else None
        if prev is not None and _joins(stages[prev.group[0]], stages[_last_global(stages, prev.group)], st):
            prev.group.extend(phases[-1].stages + [i])
            phases[-1].stages = []
            continue
        phases[-1].group.append(i)
        phases.append(Phase(len(phases)))
    return phases


def _last_global(stages: list[Stage], group: list[int]) -> int:
    return [i for i in group if stages[i].needs_all_documents][-1]


def _joins(first: Stage, last: Stage, st: Stage) -> bool:
    return (bool(getattr(st, "accepts_dropped_before", False)) and not getattr(last, "rewrites_text", False)
            and first.config.sources == st.config.sources and first.skip_kinds() == st.skip_kinds())
