"""arXiv reader: every distribution shape, and every real submission gives text or a reason."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from functools import partial
from pathlib import Path

import pytest

from pipeline.sources.arxiv import ArxivSource
from pipeline.sources.base import source_kinds
from tests.helpers import read_source

MAIN = "\\documentclass{article}\n\\newcommand{\\R}{\\mathbb{R}}\n\\begin{document}\nHello $\\R$ world.\n\\input{sec/one}\n\\bibliography{refs}\n\\end{document}\n"
ONE = "Section one text.\n"


def tar_bytes(members: dict[str, bytes], compress: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if compress else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


read_all = partial(read_source, "arxiv")

def test_registered():
    assert source_kinds()["arxiv"] is ArxivSource


def test_submission_tarball_with_macos_junk(tmp_path):
    (tmp_path / "2101.00001.tar.gz").write_bytes(tar_bytes({
        "./main.tex": MAIN.encode(), "./sec/one.tex": ONE.encode(),
        "./._main.tex": b"\x00\x05\x16\x07 mac resource fork", "__MACOSX/._x.tex": b"\x00junk",
        "./fig.pdf": b"%PDF-1.4 ...",
    }))
    (r,) = read_all(tmp_path / "2101.00001.tar.gz")
    assert r["drop_reason"] is None
    assert r["text"] == "Hello $\\mathbb{R}$ world.\n\nSection one text."
    m = json.loads(r["metadata"])
    assert m["arxiv_id"] == "2101.00001" and m["main_file"] == "main.tex"
    assert m["files_used"] == ["main.tex", "sec/one.tex"] and m["missing_inputs"] == []


def test_gzipped_single_tex_and_plain_tex(tmp_path):
    (tmp_path / "2101.00002.gz").write_bytes(gzip.compress(MAIN.replace("\\input{sec/one}", "").encode()))
    (tmp_path / "paper.tex").write_text(MAIN)
    rows = read_all(tmp_path / "2101.00002.gz", tmp_path / "paper.tex")
    assert [r["drop_reason"] for r in rows] == [None, None]
    assert json.loads(rows[0]["metadata"])["arxiv_id"] == "2101.00002"
    assert json.loads(rows[1]["metadata"])["missing_inputs"] == ["sec/one"]


def test_directory_is_one_submission(tmp_path):
    d = tmp_path / "subs" / "2101.00003"
    (d / "sec").mkdir(parents=True)
    (d / "main.tex").write_text(MAIN)
    (d / "sec" / "one.tex").write_text(ONE)
    (d / "._main.tex").write_bytes(b"\x00mac")
    (tmp_path / "subs" / "README.md").write_text("not a submission")
    rows = read_all(tmp_path / "subs")
    assert len(rows) == 1 and rows[0]["file"] == "2101.00003"
    assert "Section one text." in rows[0]["text"]


def test_bulk_tar_many_submissions(tmp_path):
    inner_tar = tar_bytes({"main.tex": MAIN.encode(), "sec/one.tex": ONE.encode()})
    bulk = tar_bytes({
        "2101/2101.00010.gz": inner_tar,  # a gzipped tar, as arXiv ships multi-file sources
        "2101/2101.00011.gz": gzip.compress(MAIN.replace("\\input{sec/one}", "Only file.").encode()),
        "2101/2101.00012.pdf": b"%PDF-1.5 pdf only",
        "2101/2101.00013.gz": b"\x1f\x8b\x08\x00broken",
    }, compress=False)
    (tmp_path / "arXiv_src_2101_001.tar").write_bytes(bulk)
    rows = read_all(tmp_path / "arXiv_src_2101_001.tar")
    got = [(json.loads(r["metadata"]).get("arxiv_id"), r["drop_reason"]) for r in rows]
    assert got == [("2101.00010", None), ("2101.00011", None), ("2101.00012", "no_tex_source"), (None, "unreadable")]
    assert "2101.00013" in rows[3]["drop_detail"]
    assert len({r["id"] for r in rows}) == 4 and len({r["offset"] for r in rows}) == 4
    assert "Only file." in rows[1]["text"]


def test_corrupt_and_pdf_only(tmp_path):
    (tmp_path / "bad.tar.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + b"x" * 600)
    (tmp_path / "p.tar.gz").write_bytes(tar_bytes({"paper.pdf": b"%PDF-1.4"}))
    (tmp_path / "w.tar.gz").write_bytes(tar_bytes({"main.tex": b"\\documentclass{article}\\usepackage{pdfpages}\\begin{document}\\includepdf{a.pdf}\\end{document}", "a.pdf": b"%PDF"}))
    rows = read_all(tmp_path / "bad.tar.gz", tmp_path / "p.tar.gz", tmp_path / "w.tar.gz")
    assert [(r["file"], r["drop_reason"]) for r in rows] == [
        ("bad.tar.gz", "unreadable"), ("p.tar.gz", "no_tex_source"), ("w.tar.gz", "no_tex_source")]
    assert ".pdf" in rows[1]["drop_detail"]


def test_latin1_source_decoded(tmp_path):
    body = "\\documentclass{article}\\begin{document}Gr\u00fc\u00dfe aus M\u00fcnchen, sch\u00f6ne Stra\u00dfe.\\end{document}"
    (tmp_path / "x.tex").write_bytes(body.encode("latin-1"))
    (r,) = read_all(tmp_path / "x.tex")
    assert "Grüße aus München" in r["text"]


def test_drop_appendix_option(tmp_path):
    (tmp_path / "a.tex").write_text("\\documentclass{article}\\begin{document}Body.\n\\appendix\nExtra.\\end{document}")
    assert "Extra." in read_all(tmp_path / "a.tex")[0]["text"]
    assert "Extra." not in read_all(tmp_path / "a.tex", drop_appendix=True)[0]["text"]


# -- real data: 17 submissions, expected outcome for each -----------------------------------------
EXPECTED = {
    "arxiv-compiler_1602.00123.tar": None,
    "arxiv-filemanager_1801.03879-1.tar.gz": None,  # with ._ files, .bbl, .cls
    "arxiv-filemanager_2211696.tar.gz": "no_tex_source",  # \includepdf wrappers
    "arxiv-filemanager_2223445.tar.gz": "no_tex_source",
    "arxiv-filemanager_2226238.tar.gz": "no_tex_source",
    "arxiv-filemanager_2229143.tar.gz": "no_tex_source",
    "arxiv-filemanager_2230466.tar.gz": "no_tex_source",
    "arxiv-filemanager_2260340.tar.gz": "no_tex_source",
    "arxiv-filemanager_sampleA_ps.tar.gz": None,
    "arxiv-filemanager_source_with_dir.tar.gz": None,  # nested source/ folder
    "arxiv-filemanager_upload2.tar.gz": None,
    "arxiv-filemanager_upload6.tgz": None,
    "engrafo_1707.08043": None,  # plain folders
    "engrafo_1708.00137": None,
    "engrafo_1803.07574": None,
    "s2orc-doc2json_1911.02782.tar.gz": None,
    "s2orc-doc2json_2004.14974.tar.gz": None,  # 28 files via \input, macOS ._ files
}


@pytest.mark.slow
def test_real_submissions_each_give_text_or_reason(corpora):
    rows = read_all(corpora / "arxiv" / "*")
    got = {r["file"]: r["drop_reason"] for r in rows}
    assert got == EXPECTED
    for r in rows:
        if r["drop_reason"] is None:
            t = r["text"]
            assert len(t) > 5000 and "\\documentclass" not in t and "\\begin{thebibliography}" not in t
            assert "\\begin{document}" not in t and "\\bibitem" not in t
        else:
            assert r["drop_detail"]


@pytest.mark.slow
def test_real_multifile_inlined(corpora):
    (r,) = read_all(corpora / "arxiv" / "s2orc-doc2json_2004.14974.tar.gz")
    m = json.loads(r["metadata"])
    assert m["main_file"] == "emnlp2020.tex" and len(m["files_used"]) > 10
    assert not any("._" in f for f in m["files_used"])
    assert "\\input{" not in r["text"] and "scientific claim verification" in r["text"]
    (r,) = read_all(corpora / "arxiv" / "arxiv-filemanager_source_with_dir.tar.gz")
    assert json.loads(r["metadata"])["main_file"] == "source/draft.tex"


def test_a_bulk_member_bomb_is_too_large_within_the_memory_cap(tmp_path):
    import tracemalloc

    cap = 2 << 20
    bomb = gzip.compress(b"%" * (48 << 20), mtime=0)  # ~50 kB that inflate to 48 MiB
    bulk = tar_bytes({"2101/2101.00020.gz": bomb,
                      "2101/2101.00021.gz": gzip.compress(MAIN.replace("\\input{sec/one}", "Fine.").encode())},
                     compress=False)
    (tmp_path / "arXiv_src_2101_002.tar").write_bytes(bulk)
    read_all(tmp_path / "arXiv_src_2101_002.tar", max_submission_bytes=cap)  # warm imports
    tracemalloc.start()
    try:
        rows = read_all(tmp_path / "arXiv_src_2101_002.tar", max_submission_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r["drop_reason"] for r in rows] == ["too_large", None]
    assert "max_submission_bytes" in rows[0]["drop_detail"]
    assert peak < 2 * cap + (2 << 20), peak


def _peak(fn):
    import tracemalloc

    fn()  # warm imports
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_single_submission_bomb_streams_with_the_cap_applied_while_inflating(tmp_path):
    # A .tar.gz and a .gz of ~100 kB that inflate to 96 MiB: rejected as too_large, never held.
    cap = 16 << 20
    (tmp_path / "2101.00030.tar.gz").write_bytes(tar_bytes({"main.tex": MAIN.encode(), "data.bin": bytes(96 << 20)}))
    (tmp_path / "2101.00031.tex.gz").write_bytes(gzip.compress(b"%" * (96 << 20), compresslevel=1))
    for name in ("2101.00030.tar.gz", "2101.00031.tex.gz"):
        rows, peak = _peak(lambda: read_all(tmp_path / name, max_submission_bytes=cap))
        assert [r["drop_reason"] for r in rows] == ["too_large"], (name, rows[0]["drop_detail"])
        assert peak < cap, (name, peak)  # the goal is 2x the cap; streaming holds one 8 MiB file at most


def test_a_plain_bulk_tar_larger_than_the_cap_is_read_member_by_member(tmp_path):
    cap = 1 << 20
    import random

    rnd = random.Random(0)
    members = {f"2101/2101.{40 + i:05d}.gz": gzip.compress(MAIN.replace("\\input{sec/one}", rnd.randbytes(300 << 10).hex()).encode())
               for i in range(8)}  # ~2.4 MB of members, each inflating to 0.6 MB
    (tmp_path / "arXiv_src_2101_003.tar").write_bytes(tar_bytes(members, compress=False))
    rows = read_all(tmp_path / "arXiv_src_2101_003.tar", max_submission_bytes=cap)
    assert [r["drop_reason"] for r in rows] == [None] * 8


def test_a_latex_file_too_large_to_read_is_too_large_not_no_tex(tmp_path):
    big = ("\\documentclass{article}\\begin{document}\n" + "Words in a paper. " * (500 << 10) + "\\end{document}\n").encode()
    assert len(big) > 8 << 20
    (tmp_path / "2101.00050.tar.gz").write_bytes(tar_bytes({"main.tex": big}))
    (tmp_path / "2101.00051.gz").write_bytes(gzip.compress(big, compresslevel=1))
    for name in ("2101.00050.tar.gz", "2101.00051.gz"):
        (r,) = read_all(tmp_path / name)
        assert r["drop_reason"] == "too_large", (name, r["drop_reason"], r["drop_detail"])

