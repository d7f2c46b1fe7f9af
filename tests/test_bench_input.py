"""Smoke test of the benchmark input builder (benchmarks/make_pipeline_input.py) on the real corpora:
a tiny build is deterministic, Common Crawl-shaped, and its copies are what the manifest says."""
from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import make_pipeline_input as mpi  # noqa: E402


@pytest.fixture(scope="module")
def pages(corpora):
    # dolma + resiliparse WARCs and HPLT only (the trafilatura tarball takes seconds to unpack)
    return mpi.load_base_pages(corpora, limit=40, with_eval_set=False)


def _digest(d: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(d.iterdir()):  # input.json holds the build time
        if f.name == "input.json":
            continue
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


@pytest.mark.slow
def test_edits_change_text_as_labelled(pages):
    rng = random.Random(3)
    page = max(pages, key=lambda p: len(mpi._text_spans(p.html)))
    assert mpi.edit(rng, page, "exact", []) == page.html
    boiler = mpi.edit(rng, page, "boilerplate", [])
    assert b"<nav" in boiler and b"<footer>" in boiler and len(boiler) > len(page.html)
    words = lambda b: set(mpi._WORD.findall(b))  # noqa: E731
    near = mpi.edit(random.Random(1), page, "near", [b"An added sentence about nothing in particular."])
    far = mpi.edit(random.Random(1), page, "far", [b"An added sentence about nothing in particular."])
    assert near != page.html and far != page.html
    base = words(page.html)
    jac = lambda a: len(a & base) / len(a | base)  # noqa: E731
    assert jac(words(far)) < jac(words(near))


@pytest.mark.slow
def test_build_is_deterministic_and_warc_shaped(corpora, tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    a, b = tmp_path / "a", tmp_path / "b"
    kw = dict(corpora=corpora, quiet=True, limit=60, with_eval_set=False)
    info = mpi.build(str(a), 0.3, 2, seed=5, **kw)
    mpi.build(str(b), 0.3, 2, seed=5, **kw)
    assert _digest(a) == _digest(b)
    assert info["documents"] > info["base_pages"]  # copies were added
    manifest = [json.loads(l) for l in (a / "manifest.jsonl").read_text().splitlines()]
    assert len(manifest) == info["documents"]
    types, responses = [], {}
    for f in sorted(a.glob("*.warc.gz")):
        for rec in ArchiveIterator(open(f, "rb")):
            types.append(rec.rec_type)
            if rec.rec_type == "response":
                assert rec.rec_headers.get_header("WARC-Identified-Payload-Type") == "text/html"
                assert rec.http_headers.get_statuscode() == "200"
                responses[rec.rec_headers.get_header("WARC-Record-ID")] = rec.content_stream().read()
    assert types[0] == "warcinfo" and types.count("request") == types.count("response") == types.count("metadata")
    assert set(responses) == {m["record_id"] for m in manifest}
    by_base: dict[int, bytes] = {m["base"]: responses[m["record_id"]] for m in manifest if m["kind"] == "original"}
    for m in manifest:
        if m["kind"] == "exact":
            assert responses[m["record_id"]] == by_base[m["base"]]
        elif m["kind"] != "original":
            assert responses[m["record_id"]] != by_base[m["base"]]
