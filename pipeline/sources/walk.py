"""Walking input folders without leaving them, blocking, looping or losing track.

Input folders are supplied by users and sometimes by strangers (a repository, an arXiv folder).
A walk here never follows a directory link (so no loops and no reading a tree twice), never
yields a file whose real path is outside the walk's root (a link to /etc/passwd or to ../secret),
never yields a non-regular file (opening a named pipe blocks forever, a device never ends),
stops at a depth and an entry count, and reports every entry it did not yield with a reason,
so a reader can book it instead of losing it silently. `os.walk` does none of the reporting
(it drops unlistable folders unless given `onerror`) and yields links to files as files.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Callable, Iterator

# Reasons for an entry a walk does not yield as a file.
OUTSIDE_ROOT = "outside_root"
NOT_A_FILE = "not_a_file"
LINKED_DIR = "linked_dir"
WALK_LIMIT = "walk_limit"
UNREADABLE = "unreadable"
PRUNED = "pruned"

MAX_DEPTH = 64
MAX_ENTRIES = 1_000_000


@dataclass(frozen=True)
class Entry:
    """A file (`reason` None, `path` is what to open) or something not read (`reason` set)."""

    rel: str  # relative to the walk's top, "/"-separated
    path: str  # the path to open: the link's target for a link inside the root
    reason: str | None = None
    detail: str | None = None
    size: int = 0


def inside(root_real: str, path_real: str) -> bool:
    return path_real == root_real or path_real.startswith(root_real.rstrip(os.sep) + os.sep)


def classify(path: str, root: str) -> tuple[str | None, str | None, str]:
    """(reason, detail, real path) for one path found below `root`: reason None for a regular file
    (or a link to one) inside the root, or a directory that is not a link."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return UNREADABLE, f"{exc.strerror or exc}", path
    real = path
    if stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(path)
        if not inside(os.path.realpath(root), real):
            return OUTSIDE_ROOT, f"link to {real}, outside the input root {root}", real
        try:
            st = os.stat(real)
        except OSError as exc:
            return UNREADABLE, f"broken link: {exc.strerror or exc}", real
        if stat.S_ISDIR(st.st_mode):
            return LINKED_DIR, "link to a folder, not followed", real
    elif not inside(os.path.realpath(root), os.path.realpath(path)):  # a glob's `*/` or `**` went through
        real = os.path.realpath(path)  # a link to a folder outside the root
        return OUTSIDE_ROOT, f"reached through a link to a folder: {real}, outside the input root {root}", real
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return None, None, real
    return NOT_A_FILE, f"not a regular file ({kind_of(st.st_mode)})", real


def walk(top: str, root: str | None = None, *, limit: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH,
         prune: Callable[[str], bool] | None = None) -> Iterator[Entry]:
    """Files below `top` in sorted order, and an Entry with a reason for everything else met.

    `root` (default: `top`) is the tree nothing may leave. `prune(rel)` True for a folder yields it
    as a PRUNED entry without entering it."""
    root = root or top
    root_real = os.path.realpath(root)
    count = 0
    stack: list[tuple[str, str, int]] = [(top, "", 0)]
    while stack:
        d, rel_d, depth = stack.pop()
        if depth > max_depth:
            yield Entry(rel_d, d, WALK_LIMIT, f"deeper than {max_depth} folders, not entered")
            continue
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Entry(rel_d, d, UNREADABLE, f"{rel_d or d}/: cannot list: {exc.strerror or exc}")
            continue
        subdirs = []
        for e in entries:
            count += 1
            if count > limit:
                yield Entry(rel_d, d, WALK_LIMIT, f"stopped after {limit} entries")
                return
            rel = f"{rel_d}/{e.name}" if rel_d else e.name
            try:
                is_link = e.is_symlink()
                is_dir = not is_link and e.is_dir(follow_symlinks=False)
            except OSError as exc:
                yield Entry(rel, e.path, UNREADABLE, f"{exc.strerror or exc}")
                continue
            if is_dir:
                if prune is not None and prune(rel):
                    yield Entry(rel, e.path, PRUNED)
                else:
                    subdirs.append((e.path, rel, depth + 1))
                continue
            reason, detail, real = classify(e.path, root)
            if reason is not None:
                yield Entry(rel, real, reason, detail)
                continue
            try:
                size = os.stat(real).st_size
            except OSError as exc:
                yield Entry(rel, real, UNREADABLE, f"{exc.strerror or exc}")
                continue
            yield Entry(rel, real, size=size)
        stack.extend(reversed(subdirs))  # sorted order: first sub-folder is walked first


def read_regular(path: str, limit: int) -> bytes:
    """At most `limit` bytes of a regular file, never following a final link and never blocking
    on something that turned into a pipe or device since it was listed."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file ({kind_of(st.st_mode)})")
        chunks = []
        left = limit
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "named pipe"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return "special file"
