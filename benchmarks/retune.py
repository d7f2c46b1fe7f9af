"""`refinery retune` against a full rerun with the same settings, on real pages.

    PYTHONPATH=. python benchmarks/make_pipeline_input.py --mb 50 --shards 8 --out /tmp/refinery-bench/input
    PYTHONPATH=. python benchmarks/retune.py --input /tmp/refinery-bench/input --work /tmp/refinery-bench/retune

1. `refinery run` of the sample's stages (langid, quality, toxicity, exact and MinHash dedup, PII)
   on the input: the run to retune;
2. then, alternating, `--rounds` times: `refinery retune RUN --set ...` and `refinery run` of the
   recipe with the same settings (a full rerun), each timed as a command (wall seconds, including
   start-up, report and everything a user waits for);
3. the retuned run and the full rerun compared: kept ids, text bytes of every document (kept and
   rejected), ledger counts.
Prints a JSON summary with the per-round ratio full / retune and their median.
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
SETS = ["langid.min_score=0.5", "quality.gopher_quality.min_stop_words=1", "quality.gopher_repetition.top_n_grams=[[2, 0.25], [3, 0.2], [4, 0.2]]"]


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


def timed(cmd: list[str], ray_tmp: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_TMPDIR": ray_tmp}  # a Ray of its own, not /tmp/ray
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO))
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return time.time() - t0


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

    da, db = docs(a), docs(b)
    kept_a = {k for k, v in da.items() if v[0] == "kept"}
    kept_b = {k for k, v in db.items() if v[0] == "kept"}
    return {
        "documents": len(da),
        "kept": len(kept_a),
        "same_kept_ids": kept_a == kept_b,
        "same_fate_and_text_bytes": da == db,
        "same_ledger_counts": Ledger.read(f"{a}/ledger.json").to_dict(times=False) == Ledger.read(f"{b}/ledger.json").to_dict(times=False),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", default="/tmp/refinery-bench/input")
    ap.add_argument("--work", default="/tmp/refinery-bench/retune")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--set", action="append", help="the settings to retune (default: %s)" % SETS)
    args = ap.parse_args()
    sets = args.set or SETS
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    base_out, full_out, re_out = str(work / "run"), str(work / "full"), str(work / "retuned")
    base = write(work / "base.yaml", recipe(args.input, base_out, []))
    new = write(work / "new.yaml", recipe(args.input, full_out, sets))
    py = sys.executable
    ray_tmp = tempfile.mkdtemp(prefix="rt-ray-")
    t_base = timed([py, "-m", "pipeline.cli", "run", base, "--overwrite", "--quiet"], ray_tmp)
    rounds = []
    for _ in range(args.rounds):
        t_re = timed([py, "-m", "pipeline.cli", "retune", base_out, "--out", re_out, "--overwrite",
                      *sum([["--set", s] for s in sets], [])], ray_tmp)
        t_full = timed([py, "-m", "pipeline.cli", "run", new, "--overwrite", "--quiet"], ray_tmp)
        rounds.append({"retune_s": round(t_re, 2), "full_rerun_s": round(t_full, 2), "ratio": round(t_full / t_re, 1)})
    with open(f"{re_out}/retune.json", encoding="utf-8") as fh:
        info = json.load(fh)
    print(json.dumps({
        "input_mb": round(sum(p.stat().st_size for p in Path(args.input).glob("*.warc.gz")) / 1e6, 1),
        "set": sets, "first_run_s": round(t_base, 2), "rounds": rounds,
        "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "changed_documents": info["changed_documents"], "recomputed_documents": info["recomputed_documents"],
        "retune_internal_s": info["seconds"], "comparison": compare(full_out, re_out),
    }, indent=2))


if __name__ == "__main__":
    main()
