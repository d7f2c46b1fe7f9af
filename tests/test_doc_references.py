"""Section references to BENCHMARKS.md in code and docs name sections that exist.

BENCHMARKS.md is folded and rewritten as measurements move; a docstring or doc citing
`BENCHMARKS.md, "Some section"` must still lead a reader to that section (a heading starting
with the cited words). Citations of an old version (`git show REV:BENCHMARKS.md`) are exempt."""
from __future__ import annotations

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
    text = 'see (BENCHMARKS.md, "Start-up") and BENCHMARKS.md "Issue\n  19"; `git show 1a2b:BENCHMARKS.md`, "Old"'
    assert cited_sections(text) == ["Start-up", "Issue 19"]


def test_every_cited_benchmarks_section_exists():
    headings = _headings()
    files = _files()
    assert files, "git ls-files listed nothing"
    missing = [f"{f.relative_to(ROOT)}: {s!r}" for f in files for s in cited_sections(f.read_text(encoding="utf-8"))
               if not any(h.startswith(s) for h in headings)]
    assert not missing, "BENCHMARKS.md has no section for: " + "; ".join(missing)


DOC_PATH = re.compile(r"(?<![\w/.-])((?:docs|benchmarks|tests|stages|pipeline|mixtures|samples)/[\w/.-]+\.(?:md|py|yaml|json|txt|tsv))")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


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
        text = f.read_text(encoding="utf-8", errors="replace")
        if f.suffix == ".py":
            text = _prose_of(text)  # docstrings and comments cite files; string literals are data
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
