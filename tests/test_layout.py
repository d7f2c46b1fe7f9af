"""The house rules, checked on the source tree: no import circles, stages never import Ray or
pipeline, the report reads only a run's outputs (no engine internals, no sources),
pipeline/ keeps at most 12 loose modules, docs/architecture.md's map names every engine module,
and the engine and the report stay within their line budgets."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "stages")


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for all the checks."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module `path` imports, at module level or inside functions."""
    out: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {i for i in _imports(p, mods) if i in mods and i != m} for m, p in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_stages_never_import_ray_or_pipeline():
    mods = _modules()
    for name, path in mods.items():
        if name.startswith("stages"):
            bad = {i for i in _imports(path, mods) if i.split(".")[0] in ("ray", "pipeline")}
            assert not bad, f"{name} imports {bad}"


def test_the_report_reads_only_what_a_run_wrote():
    """No arrow from the report to the runner, the worker, the run state or the source readers."""
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith("pipeline.report"):
            bad = {d for d in deps if d.startswith(("pipeline.sources", "pipeline.engine.runner",
                                                     "pipeline.engine.worker", "pipeline.engine.state"))}
            assert not bad, f"{name} imports {bad}"


def test_the_engine_does_not_call_up_into_report_or_mixture_builder():
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith("pipeline.engine"):
            bad = {d for d in deps if d.startswith(("pipeline.report", "pipeline.mixture.build", "pipeline.cli"))}
            assert not bad, f"{name} imports {bad}"


def test_pipeline_has_at_most_twelve_loose_modules():
    loose = sorted(p.name for p in (ROOT / "pipeline").glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 12, loose


def _string_constants(path: Path) -> set[str]:
    return {n.value for n in ast.walk(_tree(path))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_the_engine_and_the_report_never_name_a_stage():
    """Stage knowledge lives in the stages (stages/base.py: decision_keys, rewrite_signals,
    threshold_signals, rescore, group_keys, ranks_by, ...): no registered stage name, alone or as
    the head of a dotted setting, is a string in the engine or the report."""
    from stages import registry

    names = set(registry.available())
    for pkg in ("engine", "report"):
        for path in (ROOT / "pipeline" / pkg).rglob("*.py"):
            bad = {s for s in _string_constants(path) if s in names or s.split(".")[0] in names and "." in s}
            assert not bad, f"{path.relative_to(ROOT)} names stages {sorted(bad)}"


def test_ray_is_imported_only_by_its_backend():
    """One executor contract (pipeline/engine/pool.py), one module per backend: Ray is the ray
    backend's (ray_pool; the mixture's tokenizer runs on that backend's pool)."""
    mods = _modules()
    users = {name for name, path in mods.items() if name.startswith("pipeline")
             and any(i.split(".")[0] == "ray" for i in _imports(path, mods))}
    assert users <= {"pipeline.engine.ray_pool", "pipeline.mixture.tokenize"}, users


# Lines of pipeline/engine/*.py and pipeline/report/*.py: they may shrink (lower the budget with
# them), never grow; a change that needs more lines takes them from elsewhere in the same package.
ENGINE_LINES = 3720
REPORT_LINES = 2307


def _lines(pkg: str) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "pipeline" / pkg).glob("*.py"))


def test_the_engine_and_the_report_stay_within_their_line_budgets():
    assert _lines("engine") <= ENGINE_LINES, f"pipeline/engine: {_lines('engine')} lines, budget {ENGINE_LINES}"
    assert _lines("report") <= REPORT_LINES, f"pipeline/report: {_lines('report')} lines, budget {REPORT_LINES}"


def test_the_architecture_map_names_every_engine_module():
    """Every module of pipeline/engine/ is named in the engine paragraph of docs/architecture.md's map."""
    import re

    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc[doc.index("## The map"):]
    block = block[block.index("  engine/"):block.index("  sources/")]
    named = set(re.findall(r"\b([a-z_]+)\b", block))
    modules = {p.stem for p in (ROOT / "pipeline" / "engine").glob("*.py") if p.stem != "__init__"}
    assert modules <= named, f"not in the map: {sorted(modules - named)}"


def test_every_benchmark_runs_as_a_script_without_pythonpath():
    """A benchmark run as a script has benchmarks/ on sys.path, not the project root; a script that
    imports `benchmarks.*` must put the root there first (CI runs the memory benchmarks that way)."""
    offenders = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = _tree(path)
        inserts = [n.lineno for n in tree.body if isinstance(n, ast.Expr) and ast.unparse(n).startswith("sys.path.insert(0")]
        uses = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in {"benchmarks", "_memory", "_timing"}]
        top = [n.lineno for n in tree.body if isinstance(n, ast.ImportFrom) and n.lineno in uses]
        if uses and (not inserts or (top and min(inserts) > min(top))):
            offenders.append(path.name)
    assert not offenders, f"import benchmarks.* before putting the project root on sys.path: {offenders}"
