"""Hostile folders: links out of the tree, pipes, unlistable sub-folders, link loops, folder globs.

Every reader that walks folders (code repos, arXiv folder submissions, folder inputs of the
file kinds) must never read a file whose real path is outside its input root, never follow a
directory link, never block on a non-regular file, and book everything it could not read."""
from __future__ import annotations

import json
import os
import threading

import pytest

from tests.helpers import read_source, write_recipe

SECRET = "TOP SECRET password=hunter2\n"
MAIN = "\\documentclass{article}\n\\begin{document}\nHello world.\n\\input{secret}\n\\end{document}\n"


def _secret(tmp_path):
    s = tmp_path / "secret.txt"
    s.write_text(SECRET)
    return s


def test_code_repo_symlinks_out_of_the_repo_are_rejected_not_read(tmp_path):
    secret = _secret(tmp_path)
    repo = tmp_path / "repos" / "r1"
    repo.mkdir(parents=True)
    (repo / "app.py").write_text("def f():\n    return 1\n")
    (repo / "users.txt").symlink_to("/etc/passwd")
    (tmp_path / "repos" / "secret.txt").write_text(SECRET)
    (repo / "settings.py").symlink_to("../secret.txt")   # inside the input folder, outside the repo
    (repo / "abs.py").symlink_to(secret)
    (repo / "inner.py").symlink_to("app.py")             # inside the repo: fine
    rows = read_source("code", tmp_path / "repos")
    got = {r["file"]: r["drop_reason"] for r in rows}
    assert got["r1/users.txt"] == got["r1/settings.py"] == got["r1/abs.py"] == "outside_root"
    assert got["r1/app.py"] is None and got["r1/inner.py"] is None
    in_repo = [r for r in rows if r["file"].startswith("r1/")]  # repos/secret.txt is a top-level file
    assert not any(SECRET.strip() in (r["text"] or "") or "root:" in (r["text"] or "") for r in in_repo)
    assert all(r["drop_detail"] for r in rows if r["drop_reason"])


def test_glob_matched_repo_that_is_a_link_out_is_refused(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.py").write_text("x = 1\n")
    (tmp_path / "repos").mkdir()
    (tmp_path / "repos" / "evil").symlink_to(outside)
    rows = read_source("code", str(tmp_path / "repos") + "/*")
    assert [(r["file"], r["drop_reason"]) for r in rows] == [("evil", "outside_root")]


@pytest.mark.parametrize("pattern", ["**/*.jsonl", "*/*.jsonl"])
def test_a_glob_through_a_link_to_a_folder_outside_is_refused(tmp_path, pattern):
    """`**` and `*/` in a glob go through links to folders: a file below in/link (-> elsewhere)
    was read and kept, though its real path is outside the input root."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "s.jsonl").write_text('{"text": "hunter2"}\n')
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "a.jsonl").write_text('{"text": "inside"}\n')
    (tmp_path / "in" / "link").symlink_to(outside)
    (tmp_path / "in" / "near").symlink_to(tmp_path / "in" / "sub")  # a link that stays inside: read
    rows = read_source("jsonl", f"{tmp_path}/in/{pattern}")
    assert [(r["file"], r["drop_reason"], r["text"]) for r in rows] == [
        ("link/s.jsonl", "outside_root", None), ("near/a.jsonl", None, "inside"), ("sub/a.jsonl", None, "inside")]
    assert "reached through a link to a folder" in rows[0]["drop_detail"]


def test_a_repo_glob_through_a_link_to_a_folder_outside_is_refused(tmp_path):
    outside = tmp_path / "elsewhere" / "repo"
    outside.mkdir(parents=True)
    (outside / "x.py").write_text("x = 1\n")
    (tmp_path / "orgs").mkdir()
    (tmp_path / "orgs" / "evil").symlink_to(tmp_path / "elsewhere")
    rows = read_source("code", str(tmp_path / "orgs") + "/*/*")
    assert [(r["file"], r["drop_reason"]) for r in rows] == [("evil/repo", "outside_root")]


def test_arxiv_input_of_a_symlink_is_not_inlined(tmp_path):
    secret = _secret(tmp_path)
    d = tmp_path / "subs" / "2101.00001"
    d.mkdir(parents=True)
    (d / "main.tex").write_text(MAIN)
    (d / "secret.tex").symlink_to(secret)
    (r,) = read_source("arxiv", tmp_path / "subs")
    assert "hunter2" not in (r["text"] or "")
    meta = json.loads(r["metadata"])
    assert meta["skipped_files"] == [["secret.tex", "outside_root"]]


def test_jsonl_folder_symlink_out_is_a_reject_row(tmp_path):
    (tmp_path / "secret.jsonl").write_text(json.dumps({"text": SECRET}) + "\n")
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").write_text(json.dumps({"text": "fine"}) + "\n")
    (d / "b.jsonl").symlink_to(tmp_path / "secret.jsonl")
    rows = read_source("jsonl", d)
    got = sorted((r["file"], r["drop_reason"]) for r in rows)
    assert got == [("a.jsonl", None), ("b.jsonl", "outside_root")]
    assert not any("hunter2" in (r["text"] or "") for r in rows)


@pytest.mark.parametrize("pattern", ["*.jsonl", "**/*.jsonl", "*"])
def test_files_a_glob_names_that_are_links_to_shared_storage_are_read(tmp_path, pattern):
    """Datasets linked in from shared storage: each link the user's glob matches is read (they were
    each rejected as outside_root and the run kept nothing); a link met inside a folder the glob
    matched, and a link to a folder, stay refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "a.jsonl").write_text('{"text": "linked in"}\n')
    (shared / "dir").mkdir()
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").symlink_to(shared / "a.jsonl")
    (d / "b.jsonl").write_text('{"text": "local"}\n')
    (d / "folder").symlink_to(shared / "dir")
    rows = read_source("jsonl", f"{d}/{pattern}")
    got = sorted((r["file"], r["drop_reason"], r["text"]) for r in rows)
    if pattern == "*":  # the glob matches the link to a folder too: refused, not walked
        assert got == [("a.jsonl", None, "linked in"), ("b.jsonl", None, "local"), ("folder", "outside_root", None)]
    else:
        assert got == [("a.jsonl", None, "linked in"), ("b.jsonl", None, "local")]


def test_links_inside_a_folder_a_glob_matched_stay_refused(tmp_path):
    (tmp_path / "secret.jsonl").write_text(json.dumps({"text": SECRET}) + "\n")
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "b.jsonl").symlink_to(tmp_path / "secret.jsonl")
    rows = read_source("jsonl", f"{tmp_path}/in/*")
    assert [(r["file"], r["drop_reason"]) for r in rows] == [("sub/b.jsonl", "outside_root")]


def test_glob_names():
    from pipeline.sources.base import glob_names

    assert glob_names("/d/*.jsonl", "/d/a.jsonl") and not glob_names("/d/*.jsonl", "/d/s/a.jsonl")
    assert glob_names("/d/**/*.jsonl", "/d/a.jsonl") and glob_names("/d/**/*.jsonl", "/d/x/y/a.jsonl")
    assert glob_names("d/*/a.*", "./d/x/a.gz") and not glob_names("d/*", "/d/x")
    assert not glob_names("/d/*", "/d/x/y")


def test_named_pipe_in_a_repo_is_skipped_not_opened(tmp_path):
    repo = tmp_path / "repos" / "r1"
    repo.mkdir(parents=True)
    (repo / "a.py").write_text("a = 1\n")
    os.mkfifo(repo / "pipe.py")
    rows: list = []
    t = threading.Thread(target=lambda: rows.extend(read_source("code", tmp_path / "repos")), daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():  # unblock the reader so the test process can end
        fd = os.open(repo / "pipe.py", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("reading a named pipe blocked the reader")
    got = {r["file"]: r["drop_reason"] for r in rows}
    assert got == {"r1/a.py": None, "r1/pipe.py": "not_a_file"}


def test_named_pipe_in_an_arxiv_folder_and_a_jsonl_folder(tmp_path):
    d = tmp_path / "subs" / "2101.00002"
    d.mkdir(parents=True)
    (d / "main.tex").write_text(MAIN.replace("\\input{secret}", ""))
    os.mkfifo(d / "fifo.tex")
    j = tmp_path / "j"
    j.mkdir()
    os.mkfifo(j / "p.jsonl")
    out: list = []

    def go():
        out.append(read_source("arxiv", tmp_path / "subs"))
        out.append(read_source("jsonl", j))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():
        for p in (d / "fifo.tex", j / "p.jsonl"):
            os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("a named pipe blocked a reader")
    (sub,), (pipe,) = out
    assert sub["drop_reason"] is None and ["fifo.tex", "not_a_file"] in json.loads(sub["metadata"])["skipped_files"]
    assert pipe["drop_reason"] == "not_a_file"


def test_links_to_dot_do_not_loop_or_duplicate(tmp_path):
    top = tmp_path / "arx"
    d = top / "2101.00003"
    d.mkdir(parents=True)
    (d / "main.tex").write_text(MAIN.replace("\\input{secret}", ""))
    (top / "loop1").symlink_to(".")
    (top / "loop2").symlink_to(".")
    (d / "self").symlink_to(".")
    rows = read_source("arxiv", top)
    kept = [r for r in rows if r["drop_reason"] is None]
    assert len(kept) == 1 and kept[0]["file"] == "2101.00003"
    assert sorted(r["drop_reason"] for r in rows if r["drop_reason"]) == ["linked_dir", "linked_dir"]
    repo = tmp_path / "repos" / "r1"
    repo.mkdir(parents=True)
    (repo / "a.py").write_text("a = 1\n")
    (repo / "l1").symlink_to(".")
    (repo / "l2").symlink_to("..")
    got = {r["file"]: r["drop_reason"] for r in read_source("code", tmp_path / "repos")}
    assert got == {"r1/a.py": None, "r1/l1": "linked_dir", "r1/l2": "outside_root"}


def _deny(monkeypatch, denied):
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(path) == os.path.abspath(denied):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_unlistable_subfolder_is_booked_not_silent(tmp_path, monkeypatch):
    repo = tmp_path / "repos" / "r1"
    (repo / "locked").mkdir(parents=True)
    (repo / "a.py").write_text("a = 1\n")
    (repo / "locked" / "b.py").write_text("b = 1\n")
    _deny(monkeypatch, repo / "locked")
    got = {r["file"]: (r["drop_reason"], r["drop_detail"]) for r in read_source("code", tmp_path / "repos")}
    assert got["r1/a.py"][0] is None
    assert got["r1/locked"][0] == "unreadable" and "Permission denied" in got["r1/locked"][1]


def test_unlistable_subfolder_of_a_jsonl_folder_is_a_row(tmp_path, monkeypatch):
    d = tmp_path / "in"
    (d / "locked").mkdir(parents=True)
    (d / "a.jsonl").write_text(json.dumps({"text": "fine"}) + "\n")
    (d / "locked" / "b.jsonl").write_text(json.dumps({"text": "hidden"}) + "\n")
    _deny(monkeypatch, d / "locked")
    got = {r["file"]: r["drop_reason"] for r in read_source("jsonl", d)}
    assert got == {"a.jsonl": None, "locked": "unreadable"}


def test_walk_is_bounded(tmp_path):
    from pipeline.sources import walk as walk_mod

    d = tmp_path / "wide"
    d.mkdir()
    for i in range(30):
        (d / f"f{i:02d}.py").write_text("x = 1\n")
    entries = list(walk_mod.walk(str(d), limit=10))
    files = [e for e in entries if e.reason is None]
    assert len(files) == 10 and entries[-1].reason == "walk_limit"
    deep = tmp_path / "deep"
    p = deep
    for i in range(walk_mod.MAX_DEPTH + 5):
        p = p / "d"
    p.mkdir(parents=True)
    (p / "x.py").write_text("x = 1\n")
    entries = list(walk_mod.walk(str(deep)))
    assert [e.reason for e in entries] == ["walk_limit"]


def test_glob_matching_folders_is_accepted_by_the_recipe(tmp_path):
    from pipeline.engine.recipe import load_recipe

    for r in ("r1", "r2"):
        (tmp_path / "repos" / r).mkdir(parents=True)
        (tmp_path / "repos" / r / "a.py").write_text("a = 1\n")
    d = tmp_path / "arx" / "2101.00004"
    d.mkdir(parents=True)
    (d / "main.tex").write_text(MAIN.replace("\\input{secret}", ""))
    path = write_recipe(tmp_path / "r.yaml", f"""
output: {tmp_path / 'out'}
sources:
  code: {{kind: code, paths: ["{tmp_path}/repos/*"]}}
  arxiv: {{kind: arxiv, paths: ["{tmp_path}/arx/*"]}}
stages: []
""")
    recipe = load_recipe(str(path))
    assert sorted(u for u, _ in recipe.sources["code"].files()) == [str(tmp_path / "repos" / r) for r in ("r1", "r2")]
    assert [u for u, _ in recipe.sources["arxiv"].files()] == [str(d)]
