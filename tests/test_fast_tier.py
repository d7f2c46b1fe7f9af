"""The fast tier (`python -m pytest -m "not slow"`) touches every module under pipeline/ and stages/.

Read from the source, not by running the tier: the imports of every test that is not marked slow
(and of the module-level code, fixtures and helpers of its file), followed through the package's
own imports (module level and inside functions), must reach every module. The stage registry and
`source_kinds()` import their packages' modules by walking them, so reaching those two counts as
reaching what they walk; a string constant that is a module's dotted name (a table of modules
imported by name) counts as importing it.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "stages")


def _is_slow(node: ast.AST) -> bool:
    """A `pytest.mark.slow` decorator or `pytestmark = pytest.mark.slow` value."""
    return isinstance(node, (ast.Attribute, ast.Call)) and "mark.slow" in ast.unparse(node)


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(nodes, here: str) -> set[str]:
    """Dotted names imported anywhere in `nodes` (relative imports resolved against `here`)."""
    out = set()
    for tree in nodes:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = here.split(".")[: len(here.split(".")) - node.level + (1 if here in _PACKAGE_INITS else 0)]
                    base = ".".join([*pkg, base] if base else pkg)
                out.add(base)
                out |= {f"{base}.{a.name}" for a in node.names}
    return out


_PACKAGE_INITS: set[str] = set()


def fast_test_imports() -> set[str]:
    """What the non-slow tests of every test file import (with their files' shared code)."""
    out: set[str] = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
               and _is_slow(n.value) for n in tree.body):
            continue
        reached = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                if not any(_is_slow(d) for d in node.decorator_list):
                    reached.append(node)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                if not any(_is_slow(d) for d in node.decorator_list):
                    reached += [n for n in node.body if not any(_is_slow(d) for d in getattr(n, "decorator_list", []))]
            else:  # imports, fixtures, helpers
                reached.append(node)
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_") for n in reached) \
                or path.name in ("conftest.py", "helpers.py"):
            out |= _imports(reached, f"tests.{path.stem}")
    return out


def reached_modules() -> set[str]:
    modules = all_modules()
    _PACKAGE_INITS.update(n for n, p in modules.items() if p.name == "__init__.py")
    walked = {"stages.registry": [n for n in modules if n.startswith("stages.")],
              "pipeline.sources.base": [n for n in modules if n.startswith("pipeline.sources.")]}
    todo = [n for n in fast_test_imports() if n.split(".")[0] in PACKAGES]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        while name and name not in modules:  # `from pkg.mod import func` names pkg.mod.func
            name = name.rpartition(".")[0]
        if not name or name in seen:
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]  # importing a.b.c imports a and a.b
        if parent:
            todo.append(parent)
        todo += walked.get(name, [])
        tree = ast.parse(modules[name].read_text(encoding="utf-8"))
        todo += [n for n in _imports([tree], name) if n.split(".")[0] in PACKAGES]
        todo += [n.value for n in ast.walk(tree)  # a module imported by its name (a backend table)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in modules]
    return seen


def test_every_module_is_imported_by_the_fast_tier():
    missing = sorted(set(all_modules()) - reached_modules())
    assert not missing, f"no test outside the slow tier imports (even indirectly): {missing}"


def test_the_check_sees_slow_marks(tmp_path):
    tree = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a():\n    import pipeline.cli\n")
    assert _is_slow(tree.body[1].decorator_list[0])
    assert not _is_slow(ast.parse("x = pytest.mark.parametrize('a', [1])").body[0].value)
