"""pipeline/sources/http_body.py: bodies that lie about their coding, bombs and hostile shapes
cost at most the cap in memory and time linear in the body."""
import gzip
import subprocess
import sys
import time
import zlib

import pytest

from pipeline.sources.http_body import BodyError, BodyTooLarge, decode_body

HTML = b"<html><body><p>" + b"A paragraph of the page. " * 40 + b"</p></body></html>"


@pytest.mark.parametrize("tail", [b"junk", b"0\r\n\r\n", b" ", b"\0\0\r\n"])
def test_bytes_after_a_complete_gzip_body_are_ignored(tail):
    body = decode_body(gzip.compress(HTML) + tail, "gzip", 8 << 20)
    assert body.data == HTML and body.how is None


def test_members_are_followed_and_a_cut_member_is_flagged():
    two = gzip.compress(HTML[:100]) + gzip.compress(HTML[100:])
    assert decode_body(two, "gzip", 8 << 20).data == HTML
    import random

    rnd = random.Random(0)
    page = HTML + " ".join(f"w{rnd.randrange(10**9)}" for _ in range(2000)).encode()
    cut = decode_body(gzip.compress(page)[:3000], "gzip", 8 << 20)
    assert cut.how == "truncated" and page.startswith(cut.data) and len(cut.data) > 1000


def test_a_body_of_thousands_of_empty_members_is_linear():
    body = gzip.compress(b"") * 160_000  # 3.2 MB: 52 CPU-s when every member re-sliced the rest
    t = time.process_time()
    assert decode_body(body, "gzip", 8 << 20).data == b""
    assert time.process_time() - t < 10  # far above the ~0.05 s it takes: a bound, not a margin


def test_raw_deflate_labelled_gzip_and_garbage():
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    assert decode_body(raw.compress(HTML) + raw.flush(), "gzip", 8 << 20).how == "mislabelled:deflate"
    with pytest.raises(BodyError):
        decode_body(bytes(range(256)) * 10, "gzip", 8 << 20)


def test_a_brotli_bomb_is_refused_without_being_held():
    """1.6 kB of br that inflates to 1 GiB: refused at the cap, in a process whose peak memory stays
    near the cap (it held 2 GB when br was inflated whole first)."""
    prog = (
        "import brotli, resource\n"
        "from pipeline.sources.http_body import BodyTooLarge, decode_body\n"
        "bomb = brotli.compress(b'\\0' * (1 << 30), quality=1)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    decode_body(bomb, 'br', 8 << 20)\nexcept BodyTooLarge:\n    print('refused')\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    refused, grew_mb = out.stdout.split()
    assert refused == "refused" and int(grew_mb) < 200, out.stdout


def test_brotli_bodies_decode():
    import brotli

    assert decode_body(brotli.compress(HTML), "br", 8 << 20).data == HTML
    with pytest.raises(BodyTooLarge):
        decode_body(brotli.compress(HTML * 1000), "br", 10_000)
