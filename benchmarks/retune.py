"""`refinery retune` against a full rerun with the same settings, on real pages.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 50 --shards 8 --out /tmp/refinery-bench/input
    PYTHONPATH=. python benchmarks/retune.py --input /tmp/refinery-bench/input --work /tmp/refinery-bench/retune

1. `refinery run` of the sample's stages (langid without CLD2's second opinion, quality with the
   shipped classifier, toxicity, exact and MinHash dedup, PII) on the input: the run to retune;
2. then, for each scenario (a set of `--set`s; by default three settings at once and one langid
   threshold, one quality rule and one dedup threshold each on its own), alternating:
   `refinery retune RUN --set ... --out R` and `refinery run` of the recipe with the same settings
   (a full rerun, 2 Ray workers), each timed as the command a user waits for (start-up, the run,
   report and mixture included): wall seconds, and CPU seconds of the command's whole process tree
   (Ray's raylet and workers, the extraction sandbox; sampled from /proc every 0.5 s, which misses
   each process's last half second, and the command's own rusage from wait4, which misses
   descendants nobody waited for: the larger of the two, for a retune, one process, its exact CPU
   time), with the load average at its start;
3. each retuned run compared with its full rerun: the same documents kept, every document (kept and
   rejected) at the same place with byte-identical text, the same ledger and per-shard ledgers
   (counts; times differ by nature).
Prints a JSON summary: per scenario the ratios full / retune (wall and CPU) and the comparison.
Exit code 1 if a comparison differs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from pipeline_vs_datatrove import ProcMonitor  # noqa: E402  (process-tree CPU from /proc)

SCENARIOS = {
    "three_settings": ["langid.min_score=0.5", "quality.gopher_quality.min_stop_words=1",
              "quality.gopher_repetition.top_n_grams=[[2, 0.25], [3, 0.2], [4, 0.2]]"],
    "langid": ["langid.min_score=0.5"],
    "quality": ["quality.gopher_quality.max_non_alpha_words_ratio=0.64"],
    "dedup": ["minhash_dedup.threshold=0.7"],
}


def recipe(input_dir: str, out: str, sets: list[str]) -> dict:
    stages = [
        # without CLD2's second opinion: it depends on the thresholds, which retune then refuses to move
        {"stage": "langid", "languages": ["en", "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja"], "min_score": 0.65,
         "second_opinion": False},
        {"stage": "quality", "c4": {"filter_no_terminal_punct": False}},
        {"stage": "toxicity", "granularity": "paragraph", "max_score": 0.8},
        {"stage": "exact_dedup"},
        {"stage": "minhash_dedup", "ngram": 5, "bands": 14, "rows": 8, "threshold": 0.8},
        {"stage": "pii"},
    ]
    import yaml

    for s in sets:
        key, value = s.split("=", 1)
        parts = key.split(".")
        node = next(st for st in stages if st["stage"] == parts[0])
        for p in parts[1:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = yaml.safe_load(value)
    return {"name": "retune-bench", "output": out, "ray": {"num_workers": 2},
            "sources": {"web": {"kind": "commoncrawl", "paths": [f"{input_dir}/*.warc.gz"]}}, "stages": stages}


def write(path: Path, raw: dict) -> str:
    import yaml

    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def loadavg() -> str:
    return "/".join(open("/proc/loadavg").read().split()[:3])


def timed(cmd: list[str], ray_tmp: str, log: str, may_fail: bool = False) -> dict | None:
    """Wall and process-tree CPU seconds of one command, and the load average when it started."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_TMPDIR": ray_tmp}  # a Ray of its own, not /tmp/ray
    env.pop("RAY_ADDRESS", None)
    load = loadavg()
    with open(log, "w") as fh:
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=str(REPO))
        mon = ProcMonitor(proc.pid)
        mon.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - t0
        mon.stop()
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        if may_fail:
            return None
        sys.exit(f"failed (exit {rc}): {' '.join(cmd)}; see {log}")
    # Both are lower bounds: the /proc samples miss each process's last half second, the
    # rusage misses descendants nobody waited for (Ray's daemons); the larger is the better one
    # (for a command of one process, such as a retune, the rusage is exact).
    waited = usage.ru_utime + usage.ru_stime
    return {"wall_s": round(wall, 2), "cpu_s": round(max(mon.cpu_seconds, waited), 2),
            "cpu_sampled_s": round(mon.cpu_seconds, 2), "cpu_waited_s": round(waited, 2), "load_at_start": load}


def compare(a: str, b: str) -> dict:
    import pyarrow.parquet as pq

    from pipeline.engine.ledger import Ledger

    def docs(out: str) -> dict:
        d = {}
        for f in sorted(Path(out).glob("kept/*.parquet")) + sorted(Path(out).glob("rejects/*/*.parquet")):
            t = pq.read_table(f, columns=["id", "text"])
            for i, text in zip(t.column("id").to_pylist(), t.column("text").to_pylist()):
                d[i] = (f.parent.name, (text or "").encode())
        return d

    def shard_ledgers(out: str) -> list:
        with open(f"{out}/shards.jsonl", encoding="utf-8") as fh:
            return [Ledger.from_dict(json.loads(x)["ledger"]).to_dict(times=False) for x in fh if x.strip()]

    da, db = docs(a), docs(b)
    kept_a = {k for k, v in da.items() if v[0] == "kept"}
    kept_b = {k for k, v in db.items() if v[0] == "kept"}
    moved = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
    return {
        "documents": len(da),
        "kept": len(kept_a),
        "kept_text_bytes": sum(len(v[1]) for k, v in da.items() if k in kept_a),
        "same_kept_ids": kept_a == kept_b,
        "same_place_and_text_bytes": not moved,
        "documents_that_differ": moved[:10],
        "same_ledger_counts": Ledger.read(f"{a}/ledger.json").to_dict(times=False) == Ledger.read(f"{b}/ledger.json").to_dict(times=False),
        "same_shard_ledgers": shard_ledgers(a) == shard_ledgers(b),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", default="/tmp/refinery-bench/input")
    ap.add_argument("--work", default="/tmp/refinery-bench/retune")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                    help="scenarios to run (default: all: %s)" % json.dumps(SCENARIOS))
    ap.add_argument("--set", action="append", help="one scenario of your own instead: the settings to retune")
    ap.add_argument("--reuse-run", action="store_true",
                    help="keep WORK/run if it is a finished run of the same recipe (its report, whose caches a "
                         "retune's report reuses, should come from the same code: `refinery report WORK/run`)")
    args = ap.parse_args()
    scenarios = {"custom": args.set} if args.set else {k: SCENARIOS[k] for k in (args.scenario or SCENARIOS)}
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    base_out = str(work / "run")
    base = write(work / "base.yaml", recipe(args.input, base_out, []))
    py = sys.executable
    ray_tmp = tempfile.mkdtemp(prefix="rt-ray-")
    summary: dict = {"input_mb": round(sum(p.stat().st_size for p in Path(args.input).glob("*.warc.gz")) / 1e6, 1),
                     "cores": os.cpu_count(), "scenarios": {}}
    if args.reuse_run and (Path(base_out) / "_SUCCESS").exists() and \
            json.loads((Path(base_out) / "recipe.json").read_text())["stages"] == recipe(args.input, base_out, [])["stages"]:
        summary["first_run"] = "reused"
    else:
        summary["first_run"] = timed([py, "-m", "pipeline.cli", "run", base, "--overwrite", "--quiet"], ray_tmp,
                                     str(work / "run.log"))
    print(json.dumps({"first_run": summary["first_run"]}), flush=True)
    failed = False
    for name, sets in scenarios.items():
        full_out, re_out = str(work / f"full-{name}"), str(work / f"retuned-{name}")
        new = write(work / f"full-{name}.yaml", recipe(args.input, full_out, sets))
        cmd = [py, "-m", "pipeline.cli", "retune", base_out, "--out", re_out, "--overwrite", *sum([["--set", s] for s in sets], [])]
        t_re = timed(cmd, ray_tmp, str(work / f"retuned-{name}.log"), may_fail=True)
        refused = None
        if t_re is None:  # refused (exit 2): documents it cannot re-decide exactly; said, then written anyway
            refused = (work / f"retuned-{name}.log").read_text().strip().splitlines()[-1]
            t_re = timed(cmd + ["--allow-inexact"], ray_tmp, str(work / f"retuned-{name}.log"))
        t_full = timed([py, "-m", "pipeline.cli", "run", new, "--overwrite", "--quiet"], ray_tmp,
                       str(work / f"full-{name}.log"))
        with open(f"{re_out}/retune.json", encoding="utf-8") as fh:
            info = json.load(fh)
        cmp = compare(full_out, re_out)
        same = all(cmp[k] for k in ("same_kept_ids", "same_place_and_text_bytes", "same_ledger_counts", "same_shard_ledgers"))
        failed = failed or not same
        summary["scenarios"][name] = row = {
            "set": sets, "retune": t_re, "full_rerun": t_full,
            "ratio_wall": round(t_full["wall_s"] / t_re["wall_s"], 1),
            "ratio_cpu": round(t_full["cpu_s"] / max(t_re["cpu_s"], 1e-9), 1),
            "retune_internal_s": info["seconds"], "changed_documents": info["changed_documents"],
            "recomputed_documents": info["recomputed_documents"],
            "reresolved_documents": info.get("reresolved_documents"), "inexact": len(info["inexact"]),
            "refused_without_allow_inexact": refused,
            "identical_to_full_rerun": same, "comparison": cmp,
        }
        print(json.dumps({name: row}), flush=True)
    rows = summary["scenarios"].values()
    summary["median_ratio_wall"] = statistics.median(r["ratio_wall"] for r in rows)
    summary["median_ratio_cpu"] = statistics.median(r["ratio_cpu"] for r in rows)
    summary["all_identical"] = not failed
    print(json.dumps(summary, indent=2))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
