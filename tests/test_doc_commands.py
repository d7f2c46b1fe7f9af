"""The commands README.md and docs/walkthrough.md show are run as shown, and print what the docs
quote (the sample recipe, in a scratch directory with the repository's mixtures/ and samples/).

How a doc is read: a ```sh/```bash block holds commands, one a line (`# comment` after a command
is not run). A plain ``` block right after it is the quoted output: every non-empty line of it
must be printed, in that order, by the block's commands (stdout and stderr; runs of spaces count
as one; `...` in a quoted line stands for any text). A comment `# N documents read, M kept` is
checked against the run's ledger table. A ```yaml block whose first line is `# PATH` is written to
PATH before the next commands run. A failure names the doc's line and shows what the command
prints now: when the sample recipe or a stage changes, update the doc to it.

Commands that cannot run here are listed in NOT_RUN with the reason; any other command a doc
gains is run (or fails this test until it is listed).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Commands (by prefix, after placeholders are filled) not run here, with the reason.
NOT_RUN = {
    "python3 -m venv": "the install itself (this test runs in the installed environment)",
    "pip install": "the install itself",
    ". .venv/bin/activate": "the install itself",
    "python -m pytest": "the test suite itself",
    "refinery train-toxicity": "retrains and overwrites the shipped toxicity model (tests/test_toxicity.py trains it)",
    "refinery train-quality": "needs positive and negative corpora (tests/test_train_quality.py runs it)",
    "refinery run mixtures/sample.yaml --out s3://": "needs an S3 bucket (tests/test_object_storage.py runs it on moto)",
    "refinery report s3://": "needs an S3 bucket (tests/test_object_storage.py)",
    "ray start": "starts a Ray cluster (tests/test_object_storage.py runs a job on one)",
    "ray job submit": "needs a Ray cluster (tests/test_object_storage.py)",
    "refinery run mixtures/sample.yaml --out s3": "needs an S3 bucket",
}
# Sections whose commands are not run (by heading), with the reason.
NOT_RUN_SECTIONS = {
    "On 50 MB of real pages": "benchmarks on 50 MB of real pages, and commands on their run: minutes of CPU",
}

# README's synopsis uses placeholders; they are filled with the sample's files.
PLACEHOLDERS = {"RECIPE": "mixtures/sample.yaml", "RUN_DIR": "out/sample", "RUN2": "out/readme-retuned",
                "RUN": "out/sample"}


@dataclass
class Block:
    doc: str
    line: int  # 1-based line of the block's first command
    commands: list[tuple[int, str, str]]  # (line, command, comment)
    output: list[tuple[int, str]] = field(default_factory=list)  # quoted lines
    files: list[tuple[str, str]] = field(default_factory=list)  # yaml written before the commands


def read_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks: list[Block] = []
    pending: list[tuple[str, str]] = []
    i, skip = 0, None
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            if lines[i].startswith("#"):
                skip = NOT_RUN_SECTIONS.get(lines[i].lstrip("#").strip())
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = list(enumerate(lines[start:j], start + 1))
        if lang in ("sh", "bash"):
            cmds, joined, first = [], "", None
            for n, text in body:
                if text.rstrip().endswith("\\"):
                    joined += text.rstrip()[:-1] + " "
                    first = first or n
                    continue
                text, joined = joined + text, ""
                cmd, _, comment = text.partition(" # ") if not text.lstrip().startswith("#") else ("", "", "")
                if cmd.strip() and not skip:
                    cmds.append((first or n, " ".join(cmd.split()), comment.strip()))
                first = None
            blocks.append(Block(name, start + 1, cmds, files=pending))
            pending = []
        elif lang == "" and blocks and blocks[-1].commands and not blocks[-1].output and _follows(lines, blocks[-1], start):
            blocks[-1].output = [(n, t) for n, t in body if t.strip()]
        elif lang == "" and body and not skip and all(t.startswith("refinery ") for _, t in body if t.strip()):
            blocks.append(Block(name, start + 1,  # a synopsis: one command a line
                                [(n, t.partition(" # ")[0].strip(), t.partition(" # ")[2].strip())
                                 for n, t in body if t.strip()], files=pending))
            pending = []
        elif lang == "yaml" and body and re.match(r"^# (\S+\.ya?ml)\b", body[0][1]):
            pending.append((re.match(r"^# (\S+)", body[0][1]).group(1), "\n".join(t for _, t in body) + "\n"))
        i = j + 1
    return blocks


def _follows(lines: list[str], block: Block, start: int) -> bool:
    """The output block opens on the line right after the command block closes."""
    close = start - 2
    return close >= 0 and lines[close].startswith("```") and close > block.line - 1


def expand(cmd: str) -> list[str]:
    """A synopsis line as commands: optional `[...]` dropped, `a | b` alternatives not expanded,
    placeholders filled; an install line's `&&` parts split."""
    out = []
    for part in cmd.split(" && "):
        part = re.sub(r"\s*\[[^\]]*\]", "", part).strip()
        for k, v in PLACEHOLDERS.items():
            part = re.sub(rf"\b{k}\b", v, part)
        out.append(part)
    return out


def not_run(cmd: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if cmd.startswith(prefix) or cmd.startswith(prefix.strip())), None)


def quoted_pattern(text: str) -> re.Pattern:
    """`...` is any text; runs of spaces are one."""
    return re.compile(".*".join(re.escape(" ".join(p.split())) for p in text.strip().split("...")))


def check_output(block: Block, printed: str) -> list[str]:
    """Quoted lines not printed, in order: one message per line, naming it."""
    lines = [" ".join(x.split()) for x in re.split(r"[\r\n]+", printed)]
    problems, at = [], 0
    for n, quoted in block.output:
        pat = quoted_pattern(quoted)
        hit = next((k for k in range(at, len(lines)) if pat.fullmatch(lines[k])), None)
        if hit is None:
            problems.append(f"{block.doc}:{n}: quoted output not printed: {quoted.strip()!r}")
        else:
            at = hit + 1
    if problems:
        problems.append("  the commands print:\n    " + "\n    ".join(l for l in lines if l and "it/s]" not in l
                                                                   and "shard/s" not in l))
    return problems


def ledger_rows(printed: str) -> list[tuple[str, int, int]]:
    """The ledger table `refinery run` prints: (stage, docs in, kept)."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+", printed, re.M)]


def check_comment(doc: str, line: int, comment: str, printed: str) -> list[str]:
    m = re.match(r"(\d[\d,]*) documents read, (\d[\d,]*) kept", comment)
    if not m:
        return []
    rows = ledger_rows(printed)
    if not rows:
        return [f"{doc}:{line}: no ledger table printed"]
    want = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    got = (rows[0][1], rows[-1][2])
    return [] if want == got else [f"{doc}:{line}: the doc says {want[0]} documents read, {want[1]} kept; "
                                   f"the run printed {got[0]} read, {got[1]} kept"]


def run_command(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               COLUMNS="400")
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def scratch(tmp_path: Path) -> Path:
    for name in ("mixtures", "samples", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def run_doc(path: Path, cwd: Path, sections: tuple[str, ...] | None = None) -> tuple[list[str], list[str]]:
    """Runs the doc's commands in order; returns (problems, commands run)."""
    problems, ran = [], []
    for block in read_blocks(path):
        for dest, text in block.files:
            (cwd / dest).parent.mkdir(parents=True, exist_ok=True)
            (cwd / dest).write_text(text, encoding="utf-8")
        printed = ""
        for line, cmd, comment in block.commands:
            for one in expand(cmd):
                if not_run(one):
                    continue
                res = run_command(one, cwd)
                ran.append(one)
                printed += res.stdout + "\n" + res.stderr + "\n"
                expect = 2 if any(q.strip().startswith(("error:", "refinery: error:")) for _, q in block.output) else 0
                if res.returncode != expect:
                    problems.append(f"{block.doc}:{line}: `{one}` exited {res.returncode}, not {expect}:\n"
                                    f"{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
                problems += check_comment(block.doc, line, comment, res.stdout + res.stderr)
        if block.output:
            problems += check_output(block, printed)
    return problems, ran


def test_read_blocks_finds_commands_output_and_files(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("x\n```sh\nrefinery run a.yaml --out o   # 3 documents read, 2 kept\nrefinery plan \\\n  --run o\n```\n"
                   "```\nline one\n... two\n```\n```yaml\n# out/b.yaml (a mixture)\nbudget: 1\n```\n```sh\nrefinery mix out/b.yaml\n```\n",
                   encoding="utf-8")
    blocks = read_blocks(doc)
    assert blocks[0].commands == [(3, "refinery run a.yaml --out o", "3 documents read, 2 kept"),
                                  (4, "refinery plan --run o", "")]
    assert blocks[0].output == [(8, "line one"), (9, "... two")]
    assert blocks[1].files == [("out/b.yaml", "# out/b.yaml (a mixture)\nbudget: 1\n")]
    printed = "table\nline one\nand then two\n"
    assert check_output(blocks[0], printed) == []
    assert check_output(blocks[0], "and then two\nline one\n")[0].startswith("d.md:9")  # order counts
    table = "read  3  2  1  0.1  0.1  x 1\npii  2  2  0  0.1  0.1\n"
    assert check_comment("d.md", 3, "3 documents read, 2 kept", table) == []
    assert "the run printed 3 read, 2 kept" in check_comment("d.md", 3, "3 documents read, 5 kept", table)[0]


def test_readme_synopsis_placeholders():
    assert expand("refinery run RECIPE [--out DIR] [--workers N] [--overwrite]") == ["refinery run mixtures/sample.yaml"]
    assert expand("refinery report RUN_DIR [--project 4.3TB]") == ["refinery report out/sample"]
    assert expand("refinery retune RUN --set a.b=1 --out RUN2") == ["refinery retune out/sample --set a.b=1 --out out/readme-retuned"]
    assert not_run("refinery train-toxicity") and not_run("pip install -e .") and not not_run("refinery --help")


@pytest.mark.slow
def test_readme_commands_run(tmp_path):
    problems, ran = run_doc(ROOT / "README.md", scratch(tmp_path))
    assert not problems, "\n".join(problems)
    assert "refinery run mixtures/sample.yaml" in ran and "refinery --help" in ran
    assert any(c.startswith("refinery retune out/sample") for c in ran)


@pytest.mark.slow
def test_walkthrough_commands_run_and_print_what_it_quotes(tmp_path):
    problems, ran = run_doc(ROOT / "docs" / "walkthrough.md", scratch(tmp_path))
    assert not problems, "\n".join(problems)
    assert any(c.startswith("refinery run mixtures/sample.yaml") for c in ran)
    assert any(c.startswith("refinery retune") for c in ran) and any(c.startswith("refinery mix") for c in ran)
