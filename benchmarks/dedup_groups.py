"""What one shared pass for consecutive global stages saves (docs/dedup.md).

Input: the whole-pipeline benchmark's WARC shards (benchmarks/make_pipeline_input.py), extracted
once to Parquet (a run with no stages), so the measured runs hold only the dedup stages:
    exact_dedup, minhash_dedup, line_dedup
run in-process (`--no-ray`: all CPU is this process's) with the engine's plan (one barrier group:
one spill, one barrier read) and with one phase per global stage (`one_phase_per_global_stage`,
the plan before groups, given to the runner here), alternating,
`--rounds` times each. Reported per mode: process CPU seconds (getrusage), bytes passed to write()
(/proc/self/io wchar: spill files, work files, outputs), the spill files' size (keep_work), and
that kept ids, rejects and ledgers are identical.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 50 --shards 8 --out /tmp/dd/input
    PYTHONPATH=. python benchmarks/dedup_groups.py --input /tmp/dd/input --work /tmp/dd/groups

`--stages exact_dedup quality minhash_dedup` measures a per-document stage between global stages
(one spill and a wave over it, against one phase per global stage, which is also the plan before
per-document stages joined the group). Work files (waves' decisions and overlays, resolve
intermediates) are reported apart from the spills.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402

from pipeline.engine.ledger import Ledger  # noqa: E402
from pipeline.engine.recipe import load_recipe  # noqa: E402
from pipeline.engine import runner  # noqa: E402
from pipeline.engine.planning import Phase  # noqa: E402
from pipeline.engine.runner import run  # noqa: E402

STAGES = """
  - stage: exact_dedup
  - stage: minhash_dedup
  - stage: line_dedup
"""


def wchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def extract(inp: str, work: Path) -> Path:
    out = work / "extracted"
    if (out / "_SUCCESS").exists():
        return out
    path = work / "extract.yaml"
    path.write_text(f"""
output: {out}
sources:
  cc: {{kind: commoncrawl, paths: ["{inp}/*.warc.gz"]}}
stages: []
""")
    run(load_recipe(str(path)), executor="local", progress=False, overwrite=True)
    return out


def one_phase_per_global_stage(stages) -> list[Phase]:
    """The plan without barrier groups: phases cut at every global stage, each its own group."""
    phases = [Phase(0)]
    for i, st in enumerate(stages):
        if st.needs_all_documents:
            phases[-1].group.append(i)
            phases.append(Phase(len(phases)))
        else:
            phases[-1].stages.append(i)
    return phases


def one(extracted: Path, work: Path, group: bool, stages: str = STAGES) -> dict:
    out = work / f"out-{'grouped' if group else 'phases'}"
    path = work / f"{out.name}.yaml"
    path.write_text(f"""
output: {out}
keep_work: true
sources:
  web: {{kind: parquet, paths: ["{extracted}/kept/*.parquet"]}}
stages:{stages}""")
    recipe = load_recipe(str(path))
    c0, w0, t0 = cpu(), wchar(), time.perf_counter()
    plan = runner.plan_phases
    runner.plan_phases = plan if group else one_phase_per_global_stage
    try:
        run(recipe, executor="local", progress=False, overwrite=True)
    finally:
        runner.plan_phases = plan
    c1, w1, t1 = cpu(), wchar(), time.perf_counter()
    spills = [p for p in (out / "_work").glob("*/part-*.parquet")]
    waves = [p for p in (out / "_work").glob("*/wave-*/*.parquet")]
    kept = sorted(i for f in sorted(out.glob("kept/*.parquet")) for i in pq.read_table(f, columns=["id"]).column(0).to_pylist())
    rejects = {d.name: sorted(i for f in d.glob("*.parquet") for i in pq.read_table(f, columns=["id"]).column(0).to_pylist())
               for d in sorted((out / "rejects").iterdir())}
    led = Ledger.read(str(out / "ledger.json"))
    stats = [json.loads(line.split("global step took")[1].split("s ", 1)[1])
             for line in (out / "run.log").read_text().splitlines() if "minhash_dedup: global step took" in line]
    return {
        "minhash_stats": stats[-1] if stats else {},
        "minhash_global_cpu": led.to_dict()["global_steps"].get("minhash_dedup", {}),
        "cpu": c1 - c0, "wall": t1 - t0, "written": w1 - w0,
        "spill_bytes": sum(p.stat().st_size for p in spills), "spill_files": len(spills),
        "wave_bytes": sum(p.stat().st_size for p in waves), "wave_files": len(waves),
        "kept": kept, "rejects": rejects, "ledger": led.to_dict(times=False),
        "docs_in": led.total(led.stage_order[1]).docs_in, "kept_docs": len(kept),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default="/tmp/dd/input", help="make_pipeline_input.py's output folder")
    ap.add_argument("--work", default="/tmp/dd/groups")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stages", nargs="*", default=None,
                    help="the recipe's stages in order (default: exact_dedup minhash_dedup line_dedup)")
    ap.add_argument("--fn-weights", type=float, nargs="*", default=None,
                    help="instead: grouped runs with minhash_dedup's false_negative_weight set to each value "
                         "(the LSH cost on real text: candidates, Jaccard checks, global-step CPU)")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    extracted = extract(a.input, work)
    stages = "".join(f"\n  - stage: {x}" for x in a.stages) + "\n" if a.stages else STAGES
    if a.fn_weights:
        for w in a.fn_weights:
            st = STAGES.replace("- stage: minhash_dedup", f"- stage: minhash_dedup\n    false_negative_weight: {w}")
            res = one(extracted, work, True, st)
            m = res["minhash_stats"]
            print(f"false_negative_weight {w}: cpu {res['cpu']:.1f}s, minhash global step {res['minhash_global_cpu']}, "
                  f"dropped {m.get('dropped')}, candidates {m.get('candidate_documents')}, checks {m.get('jaccard_checks')}, "
                  f"band entries {m.get('band_entries')}; load {os.getloadavg()[0]:.1f}", flush=True)
        return
    results: dict[bool, list[dict]] = {True: [], False: []}
    for r in range(a.rounds):
        for group in ((False, True) if r % 2 == 0 else (True, False)):
            res = one(extracted, work, group, stages)
            results[group].append(res)
            print(f"round {r} {'grouped' if group else 'one phase per stage'}: cpu {res['cpu']:.1f}s wall {res['wall']:.1f}s "
                  f"written {res['written'] / 1e6:.1f} MB spills {res['spill_bytes'] / 1e6:.1f} MB in {res['spill_files']} files, "
                  f"wave files {res['wave_bytes'] / 1e6:.1f} MB in {res['wave_files']}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    g, p = results[True], results[False]
    same = all(x["kept"] == p[0]["kept"] and x["rejects"] == p[0]["rejects"] and x["ledger"] == p[0]["ledger"] for x in g + p)
    med = lambda xs, k: sorted(x[k] for x in xs)[len(xs) // 2]  # noqa: E731
    print(json.dumps({
        "documents": p[0]["docs_in"], "kept": p[0]["kept_docs"], "identical_outputs": same,
        "cpu_grouped": [round(x["cpu"], 2) for x in g], "cpu_phases": [round(x["cpu"], 2) for x in p],
        "cpu_ratio_phases_over_grouped": round(med(p, "cpu") / med(g, "cpu"), 3),
        "written_MB_grouped": round(med(g, "written") / 1e6, 1), "written_MB_phases": round(med(p, "written") / 1e6, 1),
        "spill_MB_grouped": round(g[0]["spill_bytes"] / 1e6, 1), "spill_MB_phases": round(p[0]["spill_bytes"] / 1e6, 1),
        "spill_files_grouped": g[0]["spill_files"], "spill_files_phases": p[0]["spill_files"],
        "wave_MB_grouped": round(g[0]["wave_bytes"] / 1e6, 1), "wave_files_grouped": g[0]["wave_files"],
        "load_average": os.getloadavg(),
    }, indent=1))
    if not a.work.startswith("/tmp"):
        return
    for d in work.glob("out-*"):
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
