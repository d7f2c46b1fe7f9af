import gzip
import io
import zlib

from pipeline.sources.gzip_members import END, gzip_members, member_pieces


def members(data: bytes, chunk: int = 7):
    return list(gzip_members(io.BytesIO(data), chunk=chunk))


def test_members_and_their_offsets():
    parts = [gzip.compress(f"record {i}\n".encode() * (i + 1), mtime=0) for i in range(4)]
    data = b"".join(parts)
    got = members(data)
    offsets = [sum(len(p) for p in parts[:i]) for i in range(4)]
    assert [o for o, _ in got] == offsets
    assert [m for _, m in got] == [f"record {i}\n".encode() * (i + 1) for i in range(4)]


def test_corrupt_member_is_reported_and_reading_resumes():
    good = gzip.compress(b"one", mtime=0)
    data = good + b"\x1f\x8b\x08\xff garbage" + good + good[: len(good) // 2]
    got = members(data, chunk=3)
    assert [o for o, _ in got] == [0, len(good), len(good) + 12, 2 * len(good) + 12]
    assert got[0][1] == b"one" and got[2][1] == b"one"
    assert isinstance(got[1][1], zlib.error)
    assert isinstance(got[3][1], EOFError)  # truncated last member


def test_empty_and_not_gzip():
    assert members(b"") == []
    got = members(b"plain text, no gzip at all")
    assert len(got) == 1 and isinstance(got[0][1], Exception)


def test_zlib_ng_inflates_exactly_as_zlib(monkeypatch):
    """Members inflate with zlib-ng (a dependency, for speed): the same bytes, offsets, and errors
    (as zlib.error, with zlib's message) as with zlib itself, for good, corrupt and truncated members."""
    import random

    import pipeline.sources.gzip_members as gm

    assert gm._inflate.__name__ == "zlib_ng.zlib_ng"
    rng = random.Random(3)
    good = [gzip.compress(bytes(rng.randrange(40, 120) for _ in range(5000 * (i + 1))), mtime=0) for i in range(3)]
    data = good[0] + b"\x1f\x8b\x08\xff garbage" + good[1] + good[2] + good[0][:-5]

    def seen():
        return [(o, type(p).__name__, p if isinstance(p, bytes) else str(p)) for o, p in members(data, chunk=512)]

    with_ng = seen()
    monkeypatch.setattr(gm, "_inflate", zlib)
    assert seen() == with_ng
    assert [kind for _, kind, _ in with_ng] == ["bytes", "error", "bytes", "bytes", "EOFError"]


def test_a_member_larger_than_one_piece_leaves_the_next_offsets_true():
    """A member that inflates to more than one piece (`out`) and ends in the call that hit the
    limit: zlib then holds the bytes after it in both unconsumed_tail and unused_data; counting
    both put every later member's offset too low (a 200 MB crawl's offsets drifted by 5 MB)."""
    import os
    import random

    two_bits = bytes(range(256)).translate(bytes(i & 3 for i in range(256)))  # byte -> byte & 3
    blobs = [b"small", os.urandom(10) + random.Random(0).randbytes(3_000_000).translate(two_bits), b"after", b"x" * 10]
    members = [gzip.compress(b, compresslevel=1, mtime=0) for b in blobs]
    data = b"".join(members)
    starts = [sum(map(len, members[:i])) for i in range(len(members))]
    got = [off for off, piece in member_pieces(io.BytesIO(data), chunk=1 << 16, out=1 << 16) if piece is END]
    assert got == starts
    got = [off for off, piece in member_pieces(io.BytesIO(data)) if piece is END]
    assert got == starts
