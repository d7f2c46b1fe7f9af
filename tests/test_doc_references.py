"""Section references to BENCHMARKS.md in code and docs name sections that exist.

BENCHMARKS.md is folded and rewritten as measurements move; a docstring or doc citing
`BENCHMARKS.md, "Some section"` must still lead a reader to that section (a heading starting
with the cited words). Citations of an old version (`git show REV:BENCHMARKS.md`) are exempt."""
from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITE = re.compile(r'(git show \S*)?BENCHMARKS\.md`?,?\s+"([^"]+)"')


def _headings() -> list[str]:
    return [re.sub(r"^#+\s*", "", l).strip() for l in (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8").splitlines()
            if l.startswith("#")]


def _files() -> list[Path]:
    """The repository's Python and Markdown files (git's list; without git, the project's folders)."""
    try:
        out = subprocess.run(["git", "ls-files", "*.py", "*.md"], cwd=ROOT, capture_output=True, text=True)
        names = out.stdout.split() if out.returncode == 0 else []
    except OSError:
        names = []
    paths = [ROOT / n for n in names] or [p for d in ("pipeline", "stages", "docs", "benchmarks", "tests")
                                          for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md")]
    paths += [] if names else [ROOT / "README.md"]
    return [p for p in paths if p.name not in ("BENCHMARKS.md", Path(__file__).name) and p.is_file()]


def cited_sections(text: str) -> list[str]:
    """The sections of the current BENCHMARKS.md a text cites (whitespace folded)."""
    return [" ".join(m.group(2).split()) for m in CITE.finditer(text) if not m.group(1)]


def test_cited_sections_are_found_in_text():
    text = 'see (BENCHMARKS.md, "Start-up") and BENCHMARKS.md "Retune\n  against"; `git show 1a2b:BENCHMARKS.md`, "Old"'
    assert cited_sections(text) == ["Start-up", "Retune against"]


def test_every_cited_benchmarks_section_exists():
    headings = _headings()
    files = _files()
    assert files, "git ls-files listed nothing"
    missing = [f"{f.relative_to(ROOT)}: {s!r}" for f in files if "measurements" not in f.parts  # the dated log
               for s in cited_sections(f.read_text(encoding="utf-8"))  # cites BENCHMARKS.md as it was that day
               if not any(h.startswith(s) for h in headings)]
    assert not missing, "BENCHMARKS.md has no section for: " + "; ".join(missing)


DOC_PATH = re.compile(r"(?<![\w/.-])((?:docs|benchmarks|tests|stages|pipeline|mixtures|samples)/[\w/.-]+\.(?:md|py|yaml|json|txt|tsv))")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@functools.lru_cache(maxsize=None)
def _text(f: Path) -> str:
    """A file's text as the checks read it: a Python file's docstrings and comments (string literals
    are data: colours, LaTeX, phone-number test cases), a Markdown file whole. Read once for all checks."""
    text = f.read_text(encoding="utf-8", errors="replace")
    return _prose_of(text) if f.suffix == ".py" else text


def _prose_of(source: str) -> str:
    """A Python file's docstrings and comments."""
    import ast
    import io
    import tokenize

    out = []
    try:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(ast.get_docstring(node) or "")
        out += [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError):
        return source
    return "\n".join(out)


def test_every_cited_file_and_markdown_link_exists():
    """A doc or docstring that names docs/X.md (or a module, a benchmark, a recipe) names a file that
    exists; a relative Markdown link resolves from the file that holds it."""
    missing = []
    for f in _files():
        if f.suffix not in (".md", ".py") or not f.exists() or "measurements" in f.parts:
            continue  # the dated measurement log cites files as they were that day
        if f.suffix == ".py" and not DOC_PATH.search(f.read_text(encoding="utf-8", errors="replace")):
            continue  # nothing cited anywhere in the file: no need to separate its prose
        text = _text(f)
        for m in DOC_PATH.finditer(text):
            path = m.group(1).rstrip(".")
            if "*" in path or "{" in path:
                continue
            if not (ROOT / path).exists():
                missing.append(f"{f.relative_to(ROOT)}: {path}")
        if f.suffix == ".md":
            for m in MD_LINK.finditer(text):
                target = m.group(1)
                if "://" in target or target.startswith(("mailto:", "data:")):
                    continue
                if not (f.parent / target).exists() and not (ROOT / target).exists():
                    missing.append(f"{f.relative_to(ROOT)}: link {target}")
    assert not missing, "cited files that do not exist:\n" + "\n".join(sorted(set(missing)))


# An issue tracker's number ("issue N", "#N", "#N.M", "(#N item M)") says nothing to a reader
# without the tracker: code and reference docs name the behaviour instead. Measurement history, which
# may cite them, lives in docs/measurements/.
ISSUE_REF = re.compile(
    r"\b(?:issues?|pull requests?|PRs?)[\s-]*#?\d+"  # the word, an optional hash, a number
    r"|(?<![\w&#\\{/\"'=:-])#\d{1,4}(?:\.\d+)?(?![\w#])",  # a hash and a number; not an entity, LaTeX, a colour
    re.IGNORECASE)
REFERENCE_DOCS = ("README.md", "BENCHMARKS.md", "docs/*.md")  # docs/measurements/ is the dated log
CODE_DIRS = ("pipeline", "stages", "mixtures", "tests", "benchmarks")


def issue_refs(text: str) -> list[str]:
    """The issue-tracker references in a text (prose: a Python file's docstrings and comments)."""
    return [m.group(0) for m in ISSUE_REF.finditer(text)]


def test_issue_refs_detector():
    found = ["issue #18", "Issue 19", "#15.6", "#20", "issues 15", "#17", "#7"]
    text = ("the stage before issue #18; BENCHMARKS.md, \"Issue 19\"; Many small files (#15.6);\n"
            "(#20 item 6) and issues 15-17; # -- #17: one run per output; see #7.")
    assert issue_refs(text) == found
    for fine in ("color:#1f77b4", 'fill="#333"', "stroke='#c44e52'", "&#8593; &#160;", "C# and F#, 3#4",
                 "\\def\\d#1{#1}", "[link](#toc) and [x](docs/a.md#part-2)", "# 1. a comment", "#!/usr/bin/env",
                 "page#12", "tissue 4 and reissue 5", "the issue's example", "a #hashtag", "x = 1  # 12 bytes"):
        assert issue_refs(fine) == [], fine


def _reference_files() -> list[Path]:
    files = [p for pattern in REFERENCE_DOCS for p in ROOT.glob(pattern)]
    files += [p for d in CODE_DIRS for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts]
    return sorted(set(files))


def test_no_issue_numbers_in_code_or_reference_docs():
    found = []
    for f in _reference_files():
        rel = f.relative_to(ROOT).as_posix()
        if f.suffix == ".py" and not ISSUE_REF.search(f.read_text(encoding="utf-8", errors="replace")):
            continue
        text = _text(f)
        found += [f"{rel}: {r!r}" for r in issue_refs(text)]
    assert not found, "issue numbers in code or reference docs (name the behaviour instead):\n" + "\n".join(found)
