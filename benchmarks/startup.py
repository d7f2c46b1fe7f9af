"""What a refinery run costs before and around its work: CPU seconds of the whole process tree on
a 3-document JSONL input, where nearly everything is start-up (interpreter, imports, recipe,
models, Ray) and shut-down (report).

Runs, alternated `--repeat` times (medians): `refinery run --no-ray` (in-process), `refinery run`
as users type it (a small local input runs in-process: pool.small_local_input), `refinery run
--ray` with 1 and 2 workers on an embedded Ray; plus `python -c "import ray; ray.init(); ray.shutdown()"`
(Ray's own start and stop, the floor of any embedded-Ray run) and the CLI's imports alone.
With `--profile`, the in-process run's own CPU by import (`-X importtime`) is printed too.

    PYTHONPATH=. python benchmarks/startup.py [--repeat 3] [--profile]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from pipeline_vs_datatrove import run_monitored  # noqa: E402

PY = sys.executable
STAGES = ("langid", "quality", "minhash_dedup", "exact_dedup")
TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 20,
    "Refinery turns web crawls into clean text for training language models. " * 15,
    "A third document, short.",
]


def write_input(work: str, workers: int | None) -> str:
    data = os.path.join(work, "in")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(data, "docs.jsonl"), "w") as fh:
        for t in TEXTS:
            fh.write(json.dumps({"text": t}) + "\n")
    recipe = os.path.join(work, f"recipe-{workers}.yaml")
    lines = ["name: startup", f"output: {work}/out-{workers}"]
    if workers:
        lines.append(f"ray: {{num_workers: {workers}}}")
    lines += ["sources:", "  docs:", "    kind: jsonl", f"    paths: [\"{data}/*.jsonl\"]", "stages:"]
    lines += [f"  - stage: {s}" for s in STAGES]
    with open(recipe, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return recipe


def measure(cmd: list[str], work: str, tag: str) -> tuple[float, float, bool, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RAY_ADDRESS", None)
    wall, mon, rc = run_monitored(cmd, os.path.join(work, f"{tag}.log"), env)
    by = {}
    for pid, sec in mon.cpu.items():
        c = mon.cmd.get(pid) or "?"
        name = ("driver" if "pipeline.cli" in c or c.startswith(PY + " -c") else
                c.split()[0].rsplit("/", 1)[-1] if not c.startswith("ray::") else c.split()[0])
        by[name] = by.get(name, 0.0) + sec
    return mon.cpu_seconds, wall, rc == 0, by


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="refinery-startup-")
    runs = {
        "imports of `refinery` (python -c 'import pipeline.cli')": [PY, "-c", "import pipeline.cli"],
        "refinery run --no-ray": [PY, "-m", "pipeline.cli", "run", write_input(work, None), "--no-ray",
                                  "--overwrite", "--quiet"],
        "refinery run (default: a small local input runs in-process)": [
            PY, "-m", "pipeline.cli", "run", write_input(work, 0), "--overwrite", "--quiet"],
        "refinery run --ray, embedded Ray, 1 worker": [PY, "-m", "pipeline.cli", "run", write_input(work, 1),
                                                       "--ray", "--overwrite", "--quiet"],
        "refinery run --ray, embedded Ray, 2 workers": [PY, "-m", "pipeline.cli", "run", write_input(work, 2),
                                                        "--ray", "--overwrite", "--quiet"],
        "Ray alone: ray.init(); ray.shutdown()": [
            PY, "-c", "import ray, logging; ray.init(address='local', num_cpus=2, include_dashboard=False, "
                      "logging_level=logging.WARNING); ray.shutdown()"],
    }
    res: dict[str, list[tuple]] = {k: [] for k in runs}
    for r in range(args.repeat):
        for k, cmd in runs.items():
            res[k].append(measure(cmd, work, f"{r}-{list(runs).index(k)}"))
    print(f"| run | CPU-s, whole process tree (median of {args.repeat}) | runs | wall s (median) | ok | CPU-s by process (median run) |")
    print("|---|---:|---|---:|---|---|")
    for k, rows in res.items():
        cpus = [x[0] for x in rows]
        med = sorted(rows, key=lambda x: x[0])[len(rows) // 2]
        by = ", ".join(f"{n} {s:.2f}" for n, s in sorted(med[3].items(), key=lambda kv: -kv[1])[:6])
        print(f"| {k} | {statistics.median(cpus):.2f} | {', '.join(f'{c:.2f}' for c in cpus)} "
              f"| {statistics.median(x[1] for x in rows):.1f} | {all(x[2] for x in rows)} | {by} |")
    if args.profile:
        out = subprocess.run([PY, "-X", "importtime", "-m", "pipeline.cli", "run", write_input(work, None),
                              "--no-ray", "--overwrite", "--quiet"], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(REPO)))
        rows = []
        for line in out.stderr.splitlines():
            if line.startswith("import time:") and "|" in line:
                self_us, cum_us, name = [p.strip() for p in line.replace("import time:", "").split("|")]
                if self_us.isdigit():
                    rows.append((int(cum_us), name))
        top = [r for r in sorted(rows, reverse=True) if not r[1].startswith(" ")][:15]
        print("\nslowest top-level imports of the in-process run (cumulative, ms):")
        for us, name in top:
            print(f"  {us / 1000:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
