"""Whole pipeline, refinery vs datatrove 0.10, on the same machine and the same WARC input.

(a) `refinery run` of a recipe written to the work directory (commoncrawl source with our default
extractor, written out explicitly and printed: resiliparse's fast path plus the trafilatura fallback
for short pages; `--extract-fallback none` for the fast path alone, `--extractor trafilatura`;
langid, quality = Gopher repetition + Gopher quality + C4 + FineWeb, minhash_dedup, exact_dedup;
ray.num_workers = W) against (b) benchmarks/datatrove_pipeline.py, the same steps under datatrove's
LocalPipelineExecutor and under its RayPipelineExecutor (`--datatrove-executors local ray`, both by
default; tasks = shards, workers = W). The tools alternate, `--rounds` times each (order rotated),
or with `--concurrent` run at the same time (on a machine shared with other jobs every tool then
meets the same load). Each runs as a subprocess whose whole process tree (Ray's raylet and workers,
refinery's extraction sandbox, datatrove's pool) is sampled from /proc: CPU seconds and peak RSS per
process. Prints documents/s and MB/s per core end to end (wall x workers, and per CPU-second),
medians and ratios ours/datatrove, the load average before and after each run, CPU seconds per
stage (refinery: its ledger; datatrove: its stats.json timers), and how far the kept sets agree
(documents matched by WARC-Record-ID; per stage and in the end).

Options add: Ray scaling (1 and 2 workers, repeated, with an embedded Ray per run and attached to a
running Ray; a 2-node ray.cluster_utils.Cluster on this machine), peak memory per worker at 1x and
4x input, and a cProfile of one shard.

    PYTHONPATH=. python benchmarks/pipeline_vs_datatrove.py --mb 50 --workers 2 --rounds 2
    PYTHONPATH=. python benchmarks/pipeline_vs_datatrove.py --mb 50 --workers 2 --concurrent --ours-rounds 2 \
        --also-no-fallback --no-one-shard       # the 2026-11-24 run on the shared machine
    PYTHONPATH=. python benchmarks/pipeline_vs_datatrove.py --mb 5            # quick check
    PYTHONPATH=. python benchmarks/pipeline_vs_datatrove.py --mb 5 --scaling --memory --profile
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import gzip
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import make_pipeline_input as mpi  # noqa: E402

PY = sys.executable
CLK = os.sysconf("SC_CLK_TCK")
WANTED_STAGES = ("langid", "quality", "minhash_dedup", "exact_dedup")
FIXED_MB = 0.05  # the fixed-cost input: 13 pages, one shard
# our stage label -> datatrove steps (removed/STEP) that play its part
STAGE_MAP = {
    "read": ["extract"],
    "langid": ["langid"],
    "quality": ["gopher_repetition", "gopher_quality", "c4", "fineweb"],
    "minhash_dedup": ["minhash_dedup"],
    "exact_dedup": ["exact_dedup"],
}


# -- process-tree sampling ----------------------------------------------------------------------
class ProcMonitor(threading.Thread):
    """Samples every descendant of `root` from /proc: CPU seconds (utime+stime, last seen) and peak
    RSS (VmHWM) per process, with its command line. Processes living < `interval` can be missed.
    Every 0.5 s: the sampling takes a few percent of a core from the run it measures."""

    def __init__(self, root: int, interval: float = 0.5, include_root: bool = True):
        super().__init__(daemon=True)
        self.root, self.interval, self.include_root = root, interval, include_root
        self.cpu: dict[int, float] = {}
        self.hwm: dict[int, int] = {}
        self.cmd: dict[int, str] = {}
        self._halt = threading.Event()

    def _snapshot(self) -> None:
        parent: dict[int, int] = {}
        stat: dict[int, list[str]] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as fh:
                    s = fh.read()
            except OSError:
                continue
            rest = s[s.rfind(")") + 2:].split()
            parent[int(d)] = int(rest[1])
            stat[int(d)] = rest
        for pid in parent:
            p, seen = pid, 0
            while p > 1 and p != self.root and seen < 64:
                p, seen = parent.get(p, 0), seen + 1
            if p != self.root or (pid == self.root and not self.include_root):
                continue
            rest = stat[pid]
            self.cpu[pid] = (int(rest[11]) + int(rest[12])) / CLK
            try:
                if pid not in self.cmd:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        self.cmd[pid] = fh.read(300).replace(b"\0", b" ").decode("utf-8", "replace").strip()
                with open(f"/proc/{pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            self.hwm[pid] = max(self.hwm.get(pid, 0), int(line.split()[1]) * 1024)
                            break
                # Ray renames its workers as they take tasks (ray::IDLE -> ray::ShardWorker...).
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    c = fh.read(300).replace(b"\0", b" ").decode("utf-8", "replace").strip()
                if c.startswith("ray::") and "IDLE" not in c:
                    self.cmd[pid] = c
            except OSError:
                pass

    def run(self) -> None:
        while not self._halt.is_set():
            self._snapshot()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        try:
            self._snapshot()
        except Exception:
            pass

    @property
    def cpu_seconds(self) -> float:
        return sum(self.cpu.values())

    def peak_rss(self, match) -> int:
        vals = [v for p, v in self.hwm.items() if match(self.cmd.get(p, ""))]
        return max(vals) if vals else 0

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds of our run by process kind: shard workers, the driver, Ray's own processes."""
        out = {"workers": 0.0, "extraction sandbox": 0.0, "stages child": 0.0, "driver": 0.0, "ray system": 0.0}
        for pid, sec in self.cpu.items():
            cmd = self.cmd.get(pid, "")
            kind = ("workers" if cmd.startswith("ray::ShardWorker") or cmd.endswith("refinery-worker") else
                    "stages child" if "pipeline.sources.sandbox" in cmd and cmd.endswith("refinery-stages") else
                    "extraction sandbox" if "pipeline.sources.sandbox" in cmd else
                    "driver" if "pipeline.cli" in cmd else "ray system")
            out[kind] += sec
        return {k: round(v, 2) for k, v in out.items()}


@dataclass
class RunStats:
    tool: str
    workers: int
    wall: float
    cpu: float
    ok: bool
    peak_rss_worker: int = 0  # bytes, largest per-document worker process
    peak_rss_task: int = 0  # bytes, largest other worker process (global stage tasks / datatrove steps)
    peak_rss_driver: int = 0
    note: str = ""
    extra: dict = field(default_factory=dict)


def run_monitored(cmd: list[str], log_path: str, env: dict | None = None, root: int | None = None,
                  include_root: bool = True) -> tuple[float, ProcMonitor, int]:
    with open(log_path, "w") as log:
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO))
        mon = ProcMonitor(root if root is not None else proc.pid, include_root=include_root)
        mon.start()
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
    return wall, mon, rc


# -- our pipeline -------------------------------------------------------------------------------
def available_stages(wanted=WANTED_STAGES) -> list[str]:
    from stages import registry

    have = registry.available()
    missing = [s for s in wanted if s not in have]
    if missing:
        print(f"note: stages not available here, left out of our recipe: {missing}", flush=True)
    return [s for s in wanted if s in have]


def write_recipe(path: str, input_dir: str, out: str, workers: int, args) -> list[str]:
    stages = available_stages(tuple(args.stages))
    lines = [
        "name: bench",
        f"output: {out}",
        f"ray: {{num_workers: {workers}}}",
        "sources:",
        "  web:",
        "    kind: commoncrawl",
        f"    paths: [\"{input_dir}/*.warc.gz\"]",
        f"    extractor: {args.extractor}",
        *([f"    extract_fallback: {args.extract_fallback}"] if args.extractor == "resiliparse" else []),
        "stages:",
    ]
    for s in stages:
        lines.append(f"  - stage: {s}")
        if s == "langid":
            lines += [f"    languages: [{', '.join(args.languages)}]", "    min_score: 0.65"]
        if s == "minhash_dedup":
            lines += [f"    bands: {args.bands}", f"    rows: {args.rows}", f"    ngram: {args.ngram}"]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return stages


def run_ours(input_dir: str, work: str, workers: int, args, address: str | None = None,
             monitor_root: int | None = None, tag: str = "", force_ray: bool = False,
             processes: bool = False) -> RunStats:
    out = os.path.join(work, f"ours{tag}")
    recipe = os.path.join(work, f"ours{tag}.yaml")
    stages = write_recipe(recipe, input_dir, out, workers, args)
    cmd = [PY, "-m", "pipeline.cli", "run", recipe, "--overwrite", "--quiet", "--workers", str(workers)]
    if address:
        cmd += ["--address", address]
    if force_ray:  # else an input under 4 MiB runs in-process
        cmd.append("--ray")
    if processes:  # the workers as local processes, without Ray
        cmd.append("--processes")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RAY_ADDRESS", None)
    wall, mon, rc = run_monitored(cmd, out + ".log", env, root=monitor_root, include_root=monitor_root is None)
    st = RunStats("refinery", workers, wall, mon.cpu_seconds, rc == 0,
                  peak_rss_worker=mon.peak_rss(lambda c: c.startswith("ray::ShardWorker") or c.endswith("refinery-worker")),
                  peak_rss_task=mon.peak_rss(lambda c: c.startswith("ray::_call")),
                  peak_rss_driver=mon.peak_rss(lambda c: "pipeline.cli" in c))
    st.extra["stages"] = stages
    st.extra["out"] = out
    st.extra["cpu_by_kind"] = mon.cpu_by_kind()
    # every process seen: [pid, command line, CPU-s] (benchmarks/scaling.py splits it by role)
    st.extra["cpu_by_process"] = [[pid, mon.cmd.get(pid, ""), round(c, 3)] for pid, c in mon.cpu.items()]
    st.extra["input"] = _input_info(input_dir)
    if rc != 0:
        st.note = f"exit {rc}; see {out}.log"
    return st


def ledger_counts(out: str) -> dict:
    with open(os.path.join(out, "ledger.json")) as fh:
        led = json.load(fh)
    return {s["stage"]: s["total"] for s in led["stages"]}


def _loadavg() -> str:
    """The 1/5/15-minute load averages (the machine is shared: every number is shown next to it)."""
    try:
        return "/".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def ledger_time_table(st: RunStats) -> dict:
    """Where our CPU time went, from the run's own ledger ('Time per stage' in the report): CPU
    seconds per stage on the workers, the global steps, and what the ledger does not see, the rest
    of the process tree's CPU (the extraction sandbox process the reader feeds pages to, Ray's own
    processes, the driver: start-up, planning, the report)."""
    with open(os.path.join(st.extra["out"], "ledger.json")) as fh:
        led = json.load(fh)
    rows = []
    for s in led["stages"]:
        t = s["total"]
        cpu = t.get("cpu_seconds", 0.0)
        rows.append({"stage": s["stage"], "docs_in": t.get("docs_in", 0), "cpu_seconds": cpu,
                     "docs_per_cpu_s": t.get("docs_in", 0) / cpu if cpu else None})
    glob_cpu = sum(v.get("cpu_seconds", 0.0) for v in led.get("global_steps", {}).values())
    for name, v in led.get("global_steps", {}).items():
        rows.append({"stage": f"{name} (global step)", "docs_in": None, "cpu_seconds": v.get("cpu_seconds", 0.0),
                     "docs_per_cpu_s": None})
    work = led.get("shard_work", {}).get("cpu_seconds", 0.0)
    staged = sum(r["cpu_seconds"] for r in rows if "(global step)" not in r["stage"])
    kinds = st.extra.get("cpu_by_kind", {})
    outside = st.cpu - work - glob_cpu
    rows.append({"stage": "shard work not booked to a stage (writing, spills)", "docs_in": None,
                 "cpu_seconds": work - staged, "docs_per_cpu_s": None})
    sandbox = kinds.get("extraction sandbox", 0.0)
    if sandbox:
        rows.append({"stage": "extraction (sandbox process, outside the ledger)", "docs_in": None,
                     "cpu_seconds": sandbox, "docs_per_cpu_s": None})
    rows.append({"stage": "outside the ledger: " + ("Ray + driver + start-ups" if sandbox else
                                                     "extraction sandbox + Ray + driver + start-ups"),
                 "docs_in": None, "cpu_seconds": outside - sandbox, "docs_per_cpu_s": None})
    print(f"\n== refinery: time per stage (its ledger: process CPU seconds on the workers; total process tree "
          f"{st.cpu:.1f} CPU-s: {_kinds(st)}) ==")
    print(fmt_table([[r["stage"], r["docs_in"] if r["docs_in"] is not None else "", f"{r['cpu_seconds']:.1f}",
                      f"{r['cpu_seconds'] / st.cpu:.0%}" if st.cpu else "-", _f(r["docs_per_cpu_s"], 0)]
                     for r in rows], ["stage", "docs in", "CPU s", "share", "docs/CPU-s"]))
    print("('read' runs the WARC reader; the extractor itself runs in a sandbox child process whose CPU the "
          "ledger does not count: it is in the 'outside the ledger' row)")
    return {"rows": rows, "process_tree_cpu": st.cpu, "cpu_by_kind": kinds}


def datatrove_time_table(steps: list[dict], st: RunStats) -> dict:
    """datatrove's own per-step timers (stats.json, wall seconds inside each task), grouped like
    our stages, with each group's share of their sum."""
    groups = [("read (WarcReader)", ("Warc",)), ("extract (Trafilatura)", ("Trafilatura",)),
              ("langid", ("Language ID",)),
              ("quality (4 rule sets)", ("Gopher Repetition", "Gopher Quality", "C4 Quality", "FineWeb Quality")),
              ("minhash (4 stages)", ("MinHash stage",)), ("exact dedup (3 stages)", ("exact-deduplication",)),
              ("readers and writers", ("Jsonl",))]
    total = sum(s["seconds"] for s in steps)
    rows = []
    for name, keys in groups:
        sec = sum(s["seconds"] for s in steps if any(k in s["name"] for k in keys))
        rows.append({"group": name, "seconds": sec, "share": sec / total if total else 0.0})
    print(f"\n== {st.tool}: time per step group (its stats.json timers, summed over tasks: {total:.1f}s; "
          f"process tree {st.cpu:.1f} CPU-s) ==")
    print(fmt_table([[r["group"], f"{r['seconds']:.1f}", f"{r['share']:.0%}"] for r in rows],
                    ["steps", "seconds", "share"]))
    return {"rows": rows, "timers_total": total, "process_tree_cpu": st.cpu}


def run_log_phases(out: str) -> list[dict]:
    """Per phase, from run.log: first and last shard completion time, and `work`, the sum of the
    seconds each shard took on its worker (the same work in every run, so it grows with workers
    only if the workers slow each other down)."""
    import re
    from datetime import datetime

    times: dict[int, list[float]] = {}
    work: dict[int, float] = {}
    with open(os.path.join(out, "run.log")) as fh:
        for line in fh:
            m = re.match(r"(\S+ \S+) INFO phase (\d+): shard .*, ([0-9.]+)s of work", line)
            if m:
                k = int(m.group(2))
                times.setdefault(k, []).append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
                work[k] = work.get(k, 0.0) + float(m.group(3))
    return [{"phase": k, "first": min(v), "last": max(v), "shards": len(v), "work": work[k]}
            for k, v in sorted(times.items())]


def ceiling(t1: float, fixed: float, workers: int) -> float:
    """The best efficiency with `workers` for a run of `t1` seconds with 1 worker, `fixed` of which
    do not shrink with workers: T1 = F + P, TW = F + P/W, so T1 / (W TW) = T1 / (T1 + (W - 1) F);
    at 2 workers, T1 / (T1 + F)."""
    return t1 / (t1 + (workers - 1) * fixed)


def _record_id(meta: str | None) -> str | None:
    if not meta:
        return None
    try:
        return json.loads(meta).get("warc_record_id")
    except ValueError:
        return None


def ours_sets(out: str) -> dict[str, set[str]]:
    """kept ids and rejected ids per stage label (by WARC-Record-ID)."""
    import pyarrow.parquet as pq

    def ids(files: list[str]) -> set[str]:
        s: set[str] = set()
        for f in files:
            for m in pq.read_table(f, columns=["metadata"]).column("metadata").to_pylist():
                rid = _record_id(m)
                if rid:
                    s.add(rid)
        return s

    sets = {"kept": ids(sorted(glob.glob(os.path.join(out, "kept", "*.parquet"))))}
    for d in sorted(glob.glob(os.path.join(out, "rejects", "*"))):
        sets[os.path.basename(d)] = ids(sorted(glob.glob(os.path.join(d, "*.parquet"))))
    return sets


# -- datatrove ----------------------------------------------------------------------------------
def run_datatrove(input_dir: str, work: str, workers: int, shards: int, args, tag: str = "",
                  executor: str = "local") -> RunStats:
    out = os.path.join(work, f"datatrove{'' if executor == 'local' else '-' + executor}{tag}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PY, str(REPO / "benchmarks" / "datatrove_pipeline.py"), "--input", input_dir, "--work", out,
           "--workers", str(workers), "--tasks", str(shards), "--bands", str(args.bands), "--rows", str(args.rows),
           "--ngram", str(args.ngram), "--executor", executor, "--languages", *args.languages]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RAY_ADDRESS", None)
    wall, mon, rc = run_monitored(cmd, out + ".log", env)
    st = RunStats("datatrove" if executor == "local" else f"datatrove {executor}", workers, wall, mon.cpu_seconds,
                  rc == 0,
                  peak_rss_worker=mon.peak_rss(lambda c: "multiprocess" in c or "forkserver" in c
                                               or (c.startswith("ray::") and "IDLE" not in c)),
                  peak_rss_driver=mon.peak_rss(lambda c: "datatrove_pipeline.py" in c))
    st.extra["out"] = out
    st.extra["input"] = _input_info(input_dir)
    if rc != 0:
        st.note = f"exit {rc}; see {out}.log"
    return st


def _input_info(d: str) -> dict:
    with open(os.path.join(d, "input.json")) as fh:
        return json.load(fh)


def _jsonl_ids(pattern: str) -> set[str]:
    s: set[str] = set()
    for f in sorted(glob.glob(pattern)):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                s.add(json.loads(line)["id"])
    return s


def datatrove_sets(out: str, all_ids: set[str]) -> dict[str, set[str]]:
    sets = {"kept": _jsonl_ids(os.path.join(out, "final", "*.jsonl.gz"))}
    reached = set(sets["kept"])
    for step in ("exact_dedup", "minhash_dedup", "fineweb", "c4", "gopher_quality", "gopher_repetition", "langid"):
        sets[step] = _jsonl_ids(os.path.join(out, "removed", step, "*.jsonl.gz"))
        reached |= sets[step]
    sets["extract"] = all_ids - reached  # the extractor drops silently (empty text, timeout, error)
    return sets


def datatrove_step_stats(out: str) -> list[dict]:
    """Per step, summed over tasks: name, documents in, seconds (datatrove's own timers)."""
    rows = []
    for d in sorted(glob.glob(os.path.join(out, "logs", "*"))):
        with open(os.path.join(d, "stats.json")) as fh:
            steps = json.load(fh)
        prev_len = None
        num = lambda v: v.get("total", 0) if isinstance(v, dict) else (v or 0)  # noqa: E731
        for s in steps:
            st = s.get("stats", {})
            t = s.get("time_stats", {}).get("total", 0.0)
            dl = st.get("doc_len", {})
            rows.append({"executor": os.path.basename(d), "name": s["name"], "docs_in": num(st.get("total", st.get("documents", 0))),
                         "chars_in": prev_len, "chars_out": dl.get("total") if isinstance(dl, dict) else None,
                         "seconds": t})
            prev_len = dl.get("total") if isinstance(dl, dict) else prev_len
    return rows


# -- agreement ----------------------------------------------------------------------------------
def survivors(sets: dict[str, set[str]], order: list[list[str]], all_ids: set[str]) -> list[set[str]]:
    """Documents still alive after each stage group."""
    alive = set(all_ids)
    out = []
    for group in order:
        for step in group:
            alive -= sets.get(step, set())
        out.append(set(alive))
    return out


def agreement(ours: dict[str, set[str]], dt: dict[str, set[str]], all_ids: set[str], labels: list[str]) -> list[dict]:
    a = survivors(ours, [[l] for l in labels], all_ids)
    b = survivors(dt, [STAGE_MAP[l] for l in labels], all_ids)
    rows = []
    prev_a, prev_b = set(all_ids), set(all_ids)
    for l, sa, sb in zip(labels, a, b):
        both_in = prev_a & prev_b
        same = sum(1 for x in both_in if (x in sa) == (x in sb))
        union = sa | sb
        rows.append({
            "stage": l, "ours_alive": len(sa), "datatrove_alive": len(sb),
            "jaccard": len(sa & sb) / len(union) if union else 1.0,
            "decisions_agree": sum(1 for x in all_ids if (x in sa) == (x in sb)) / len(all_ids),
            "stage_agree_on_common_input": same / len(both_in) if both_in else 1.0,
        })
        prev_a, prev_b = sa, sb
    return rows


def agreement_report(ours: RunStats, dtx: RunStats, all_ids: set[str], manifest: list[dict], key: str) -> dict:
    """Kept-set and per-stage agreement of our run with one datatrove run (results keys end in `key`)."""
    results: dict = {}
    dt = dtx
    o_sets = ours_sets(ours.extra["out"])
    d_sets = datatrove_sets(dt.extra["out"], all_ids)
    labels = ["read"] + [l for l in ours.extra["stages"] if l in STAGE_MAP]
    rows = agreement(o_sets, d_sets, all_ids, labels)
    results["agreement" + key] = rows
    ko, kd = o_sets["kept"], d_sets["kept"]
    inter = len(ko & kd)
    results["kept" + key] = {"ours": len(ko), "datatrove": len(kd), "both": inter,
                       "jaccard": inter / len(ko | kd) if ko | kd else 1.0,
                       "overlap": inter / min(len(ko), len(kd)) if ko and kd else 1.0,
                       "decisions_agree": sum(1 for x in all_ids if (x in ko) == (x in kd)) / len(all_ids)}
    base_of = {m["record_id"]: m["base"] for m in manifest}
    bo, bd = {base_of[x] for x in ko}, {base_of[x] for x in kd}
    results["kept" + key]["base_pages_jaccard"] = len(bo & bd) / len(bo | bd) if bo | bd else 1.0
    # Copies of one page are interchangeable survivors: compare kept counts per base page.
    from collections import Counter

    co, cd = Counter(base_of[x] for x in ko), Counter(base_of[x] for x in kd)
    results["kept" + key]["per_page_count_overlap"] = (sum((co & cd).values()) / max(len(ko), len(kd))
                                                 if ko or kd else 1.0)
    print(f"\n== agreement with {dtx.tool} (WARC-Record-ID; 'alive' = not dropped by this or an earlier stage) ==")
    print(fmt_table([[r["stage"], r["ours_alive"], r["datatrove_alive"], f"{r['jaccard']:.3f}",
                      f"{r['decisions_agree']:.3f}", f"{r['stage_agree_on_common_input']:.3f}"] for r in rows],
                    ["stage", "ours alive", "dt alive", "Jaccard", "same fate (all docs)",
                     "same decision (common input)"]))
    k = results["kept" + key]
    print(f"kept: ours {k['ours']}, datatrove {k['datatrove']}, both {k['both']}; Jaccard {k['jaccard']:.3f}, "
          f"overlap {k['overlap']:.3f}, same fate for {k['decisions_agree']:.1%} of input documents; "
          f"kept base pages Jaccard {k['base_pages_jaccard']:.3f}; kept copies per page overlap "
          f"{k['per_page_count_overlap']:.3f} (which copy of a page survives dedup is arbitrary)")

    return results


# -- per-stage timing of ours on one shard (in-process, no Ray) ---------------------------------
def time_stages_one_shard(recipe_path: str, shard_index: int, profile_out: str | None) -> dict:
    """Run one shard through the source and every stage's annotate/decide in this process; for
    global stages only their per-document `annotate` (keys). Returns seconds and docs/bytes per stage."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.engine.recipe import load_recipe
    from pipeline.engine.runner import plan_shards
    from pipeline.schema import text_bytes

    recipe = load_recipe(recipe_path)
    shard = plan_shards(recipe)[shard_index]
    source = recipe.sources[shard.source]
    stages = [(spec.label, spec.build()) for spec in recipe.stages]
    for _, st in stages:
        st.ensure_setup()
    prof = cProfile.Profile() if profile_out else None
    res = {l: {"seconds": 0.0, "docs": 0, "bytes": 0} for l in ["read"] + [l for l, _ in stages]}
    res["read"]["warc_gz_bytes"] = os.path.getsize(shard.url)
    res["read"]["html_bytes"] = _html_bytes(shard.url)
    it = source.read(shard.url, shard.id_path)
    if prof:
        prof.enable()
    while True:
        t0 = time.perf_counter()
        try:
            table = next(it)
        except StopIteration:
            res["read"]["seconds"] += time.perf_counter() - t0
            break
        res["read"]["seconds"] += time.perf_counter() - t0
        res["read"]["docs"] += table.num_rows
        live = table.filter(pc.is_null(table.column("drop_reason"))).drop_columns(["drop_reason", "drop_detail"])
        res["read"]["bytes"] += text_bytes(live)
        for label, st in stages:
            if live.num_rows == 0:
                break
            r = res[label]
            r["docs"] += live.num_rows
            r["bytes"] += text_bytes(live)
            t0 = time.perf_counter()
            ann = st.annotate(live)
            if not st.needs_all_documents:
                reasons = pa.array(list(st.decide(ann)), pa.string())
                ann = ann.filter(pc.is_null(reasons))
            r["seconds"] += time.perf_counter() - t0
            live = ann
    if prof:
        prof.disable()
        prof.dump_stats(profile_out)
    return res


def _html_bytes(path: str) -> int:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    n = 0
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            n += len(rec.reader.read())
    return n


def print_profile(path: str, n: int = 18) -> str:
    buf = io.StringIO()
    p = pstats.Stats(path, stream=buf)
    p.sort_stats("tottime").print_stats(n)
    text = buf.getvalue()
    start = text.find("   ncalls")
    return text[start:] if start >= 0 else text


# -- reporting ----------------------------------------------------------------------------------
def _f(v, nd: int) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def stage_comparison(ours_t: dict, phases: list[dict], ledger: dict, dt_steps: list[dict], workers: int) -> list[dict]:
    """Rows aligned on our stages: documents in, docs/s and MB/s per core for each tool."""
    def dt(pred) -> tuple[int, float, float]:
        sel = [s for s in dt_steps if pred(s["name"])]
        if not sel:
            return 0, 0.0, 0.0
        return sel[0]["docs_in"], sum(s["seconds"] for s in sel), float(sel[0]["chars_in"] or 0)

    # datatrove times MinhashDedupSignature around its whole input loop: subtract the steps before it.
    a_steps = [s for s in dt_steps if s["executor"].startswith("A_")]
    sig = next((s for s in a_steps if "MinHash stage 1" in s["name"]), None)
    sig_own = sig["seconds"] - sum(s["seconds"] for s in a_steps if s is not sig) if sig else 0.0

    rows = []

    def add(stage, o_docs, o_sec, o_bytes, d_docs, d_sec, d_chars, note=""):
        ours_rate = o_docs / o_sec if o_sec else None
        dt_rate = d_docs / d_sec if d_sec else None
        rows.append({"stage": stage + note, "ours_docs": o_docs, "ours_docs_s": ours_rate,
                     "ours_mb_s": o_bytes / 1e6 / o_sec if o_sec and o_bytes else None, "dt_docs": d_docs, "dt_docs_s": dt_rate,
                     "dt_mb_s": d_chars / 1e6 / d_sec if d_sec and d_chars else None,
                     "ratio": ours_rate / dt_rate if ours_rate and dt_rate else None})

    r = ours_t.get("read", {})
    d_docs, d_sec, _ = dt(lambda n: "Warc" in n or "Trafilatura" in n)
    html_chars = next((s["chars_out"] for s in dt_steps if "Warc" in s["name"]), 0) or 0
    add("read+extract", r.get("docs", 0), r.get("seconds", 0), r.get("html_bytes", 0), d_docs, d_sec, html_chars)
    if "langid" in ours_t:
        o = ours_t["langid"]
        add("langid", o["docs"], o["seconds"], o["bytes"], *dt(lambda n: "Language ID" in n))
    if "quality" in ours_t:
        o = ours_t["quality"]
        names = ("Gopher Repetition", "Gopher Quality", "C4 Quality", "FineWeb Quality")
        d_docs, d_sec, d_chars = dt(lambda n: "Gopher Repetition" in n)
        d_sec = sum(s["seconds"] for s in dt_steps if any(x in s["name"] for x in names))
        add("quality (4 rule sets)", o["docs"], o["seconds"], o["bytes"], d_docs, d_sec, d_chars)
    gaps = [phases[i + 1]["first"] - phases[i]["last"] for i in range(len(phases) - 1)]
    globals_ = [l for l in ("minhash_dedup", "exact_dedup") if l in ours_t]
    for i, label in enumerate(globals_):
        o = ours_t[label]
        if label == "minhash_dedup":
            add("minhash signatures", o["docs"], o["seconds"], o["bytes"],
                sig["docs_in"] if sig else 0, sig_own, float(sig["chars_in"] or 0) if sig else 0, " (dt: + untracked reading)")
            d_docs, d_sec, d_chars = dt(lambda n: "MinHash stage 2" in n or "MinHash stage 3" in n or "MinHash stage 4" in n)
            d_docs = next((s["docs_in"] for s in dt_steps if "MinHash stage 4" in s["name"]), 0)
        else:
            add("exact hashes", o["docs"], o["seconds"], o["bytes"], *dt(lambda n: "exact-deduplication stage 1" in n))
            d_docs = next((s["docs_in"] for s in dt_steps if "exact-deduplication stage 3" in s["name"]), 0)
            d_sec = sum(s["seconds"] for s in dt_steps if "exact-deduplication stage 2" in s["name"]
                        or "exact-deduplication stage 3" in s["name"])
            d_chars = 0.0
        led = ledger.get(label, {})
        gap = gaps[i] if i < len(gaps) else None
        add(f"{label} resolve+apply", led.get("docs_in", 0), gap * workers if gap else 0, led.get("bytes_in", 0),
            d_docs, d_sec, d_chars, " (ours: wall x W)")
    return rows


def fmt_table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)) for r in cells]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


def e2e_row(st: RunStats) -> list:
    docs, mb = st.extra["input"]["documents"], st.extra["input"]["html_mb"]
    core_s = st.wall * st.workers
    return [f"{st.tool} (W={st.workers})", f"{st.wall:.1f}", f"{st.cpu:.1f}", f"{docs / core_s:.2f}",
            f"{mb / core_s:.3f}", f"{docs / st.cpu:.2f}" if st.cpu else "-", f"{mb / st.cpu:.3f}" if st.cpu else "-",
            f"{st.peak_rss_worker / 2**20:.0f}", "ok" if st.ok else st.note]


E2E_HEADER = ["run", "wall s", "CPU s", "docs/s/core", "MB/s/core", "docs/CPU-s", "MB/CPU-s", "peak RSS/worker MiB", "status"]


def ensure_input(args, mb: float) -> tuple[str, dict]:
    d = args.input or f"/tmp/refinery-bench/input-{mb:g}mb-{args.shards}s-seed{args.seed}"
    info_path = os.path.join(d, "input.json")
    if os.path.exists(info_path):
        with open(info_path) as fh:
            info = json.load(fh)
        if info.get("mb_target") == mb and info.get("shards") == args.shards and info.get("seed") == args.seed:
            return d, info
        if args.input:  # never rebuild (delete) an input someone gave us: it may be another run's
            raise SystemExit(f"{d}: its input.json says --mb {info.get('mb_target')} --shards {info.get('shards')} "
                             f"--seed {info.get('seed')}; pass those (asked: {mb:g}, {args.shards}, {args.seed})")
    print(f"building input: {mb:g} MB of text, {args.shards} shards -> {d}", flush=True)
    return d, mpi.build(d, mb, args.shards, args.seed, quiet=True)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="refinery vs datatrove, whole pipeline")
    ap.add_argument("--mb", type=float, default=50.0, help="MB of main-content text in the input")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input", help="existing input directory (default: built under /tmp/refinery-bench)")
    ap.add_argument("--work", default="/tmp/refinery-bench/run", help="outputs of both tools (replaced)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--extractor", default="resiliparse", choices=["trafilatura", "resiliparse"],
                    help="ours (default: refinery's default, resiliparse with its fallback); datatrove always uses "
                         "trafilatura")
    ap.add_argument("--extract-fallback", default=None, choices=["trafilatura", "none"],
                    help="with --extractor resiliparse: refinery's fallback (default: the source's default, "
                         "written into the recipe explicitly)")
    ap.add_argument("--datatrove-executors", nargs="+", default=["local", "ray"], choices=["local", "ray"],
                    help="datatrove's LocalPipelineExecutor and/or RayPipelineExecutor (same steps and workers)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="end-to-end runs of each tool, alternating (order rotated each round); medians")
    ap.add_argument("--concurrent", action="store_true",
                    help="run the tools at the same time (each its own process tree) instead of alternating")
    ap.add_argument("--stagger", type=float, default=0.0,
                    help="with --concurrent: seconds between the tools' starts (Ray gives a node 30 s to start; "
                         "several Ray heads starting at once on a loaded machine can miss that)")
    ap.add_argument("--ours-rounds", type=int, default=0,
                    help="with --concurrent: runs of refinery (default --rounds), while datatrove runs --rounds")
    ap.add_argument("--ours-processes", action="store_true",
                    help="also run refinery with --processes (its workers as local processes, no Ray), alternating")
    ap.add_argument("--also-no-fallback", action="store_true",
                    help="also run refinery with extract_fallback: none (the fast path alone), for the trade-off")
    ap.add_argument("--no-one-shard", action="store_true",
                    help="skip the in-process one-shard stage timing (per stage: the ledger's CPU seconds only)")
    ap.add_argument("--languages", nargs="+", default=["en"])
    ap.add_argument("--bands", type=int, default=14)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--stages", nargs="+", default=list(WANTED_STAGES), help="our stages, in order")
    ap.add_argument("--skip-datatrove", action="store_true")
    ap.add_argument("--skip-ours", action="store_true")
    ap.add_argument("--reuse-datatrove", metavar="RESULTS_JSON",
                    help="take the datatrove run (numbers and outputs) from an earlier results.json")
    ap.add_argument("--scaling", action="store_true",
                    help="also: ours with 1 and W workers (embedded and attached Ray), and on a 2-node Ray cluster")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each scaling configuration (medians)")
    ap.add_argument("--no-control", action="store_true",
                    help="with --scaling: skip datatrove's 1-worker run and fixed-cost run (the control)")
    ap.add_argument("--memory", action="store_true", help="also: peak worker RSS at 4x the input")
    ap.add_argument("--profile", action="store_true", help="per-stage timing + cProfile of one shard (in-process)")
    ap.add_argument("--results", help="write all numbers as JSON here (default WORK/results.json)")
    return ap


def main_defaults() -> argparse.Namespace:
    """This benchmark's recipe settings with every option at its default (for benchmarks/scaling.py)."""
    args = build_parser().parse_args([])
    _resolve_fallback(args)
    return args


def _resolve_fallback(args: argparse.Namespace) -> None:
    from pipeline.sources.commoncrawl import CommonCrawlConfig

    if args.extract_fallback is None:
        args.extract_fallback = CommonCrawlConfig.model_fields["extract_fallback"].default


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    input_dir, info = ensure_input(args, args.mb)
    work = args.work
    os.makedirs(work, exist_ok=True)
    results: dict = {"input": info, "input_dir": input_dir, "args": vars(args), "machine": machine_info()}
    with open(os.path.join(input_dir, "manifest.jsonl")) as fh:
        manifest = [json.loads(l) for l in fh]
    all_ids = {m["record_id"] for m in manifest}
    docs, html_mb = len(all_ids), info["html_mb"]
    print(f"input: {docs} documents, {html_mb} MB HTML, ~{info['text_mb_estimate']} MB text, "
          f"{info['warc_gz_mb']} MB .warc.gz in {args.shards} shards; W={args.workers}", flush=True)
    runs: list[RunStats] = []

    ours = dt = dtr = None
    from pipeline.sources.commoncrawl import CommonCrawlConfig

    fields = CommonCrawlConfig.model_fields
    _resolve_fallback(args)
    below = fields["extract_fallback_below_chars"].default
    if args.extractor == "trafilatura":
        variant = "trafilatura"
    elif args.extract_fallback == "none":
        variant = "resiliparse fast path only (extract_fallback: none)"
    else:
        variant = f"resiliparse fast path + {args.extract_fallback} fallback under {below} chars"
    if args.extractor == fields["extractor"].default and args.extract_fallback == fields["extract_fallback"].default:
        variant += " (refinery's default)"
    results["ours_extractor"] = variant
    print(f"refinery extractor: {variant}; datatrove: Trafilatura(favour_precision=True); "
          f"datatrove executors: {', '.join(args.datatrove_executors)}", flush=True)

    tools = [] if args.skip_ours else ["ours"]
    if args.reuse_datatrove:
        with open(args.reuse_datatrove) as fh:
            prev = json.load(fh)
        dt = RunStats(**next(r for r in prev["runs"] if r["tool"] == "datatrove"))
        runs.append(dt)
        print(f"datatrove (reused from {args.reuse_datatrove}): {dt.wall:.1f}s wall, {dt.cpu:.1f} CPU-s", flush=True)
    if not args.skip_datatrove:  # a reused run stands for LocalPipelineExecutor only
        tools += [e for e in dict.fromkeys(args.datatrove_executors) if not (args.reuse_datatrove and e == "local")]
    if args.also_no_fallback and not args.skip_ours and args.extractor == "resiliparse":
        tools.append("ours-nofallback")
    if args.ours_processes:
        tools.insert(1 if tools[:1] == ["ours"] else 0, "ours-processes")
    by_tool: dict[str, list[RunStats]] = {t: [] for t in tools}

    def one(t: str, rnd: int) -> None:
        load0 = _loadavg()
        tag = f"-r{rnd}" if rnd else ""
        if t == "ours":
            st = run_ours(input_dir, work, args.workers, args, tag=tag)
        elif t == "ours-processes":
            st = run_ours(input_dir, work, args.workers, args, tag="-processes" + tag, processes=True)
            st.tool = "refinery --processes"
        elif t == "ours-nofallback":
            st = run_ours(input_dir, work, args.workers,
                          argparse.Namespace(**{**vars(args), "extract_fallback": "none"}), tag="-nofallback" + tag)
            st.tool = "refinery, extract_fallback: none"
        else:
            st = run_datatrove(input_dir, work, args.workers, args.shards, args, tag=tag, executor=t)
        st.extra.update(round=rnd, loadavg_before=load0, loadavg_after=_loadavg())
        by_tool[t].append(st)
        runs.append(st)
        kinds = f" ({_kinds(st)})" if t.startswith("ours") else ""
        print(f"round {rnd + 1}, {st.tool}: {st.wall:.1f}s wall, {st.cpu:.1f} CPU-s{kinds}; load average "
              f"{load0} before, {st.extra['loadavg_after']} after {st.note}", flush=True)

    if args.concurrent:
        # All tools at once, each its own process tree (sampled apart): on a machine shared with
        # other jobs, every tool then meets the same load; each tool's rounds run one after another.
        n_runs = lambda t: args.ours_rounds if t.startswith("ours") and args.ours_rounds else args.rounds  # noqa: E731
        threads = [threading.Thread(target=lambda t=t, i=i: (time.sleep(i * args.stagger),
                                                          [one(t, r) for r in range(n_runs(t))]))
                   for i, t in enumerate(tools)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    else:
        for rnd in range(args.rounds):
            k = rnd % max(len(tools), 1)
            for t in tools[k:] + tools[:k]:  # alternate: each tool goes first in turn
                one(t, rnd)
    last_ok = lambda t: next((r for r in reversed(by_tool.get(t, [])) if r.ok), None)  # noqa: E731
    ours = last_ok("ours")
    dt = dt or last_ok("local")
    dtr = last_ok("ray")

    print("\n== end to end (input documents and MB of HTML; per core = wall x workers) ==")
    print(fmt_table([e2e_row(r) for r in runs], E2E_HEADER))
    med = {}
    for t, rs in by_tool.items():
        ok = [r for r in rs if r.ok]
        if ok:
            med[t] = {"wall": _median([r.wall for r in ok]), "cpu": _median([r.cpu for r in ok]), "runs": len(ok),
                      "walls": [round(r.wall, 1) for r in ok], "cpus": [round(r.cpu, 1) for r in ok]}
    if args.reuse_datatrove and dt:
        med["local"] = {"wall": dt.wall, "cpu": dt.cpu, "runs": 1, "walls": [dt.wall], "cpus": [dt.cpu]}
    results["medians"] = med
    for o in ("ours", "ours-nofallback", "ours-processes"):
        if o not in med:
            continue
        for t in ("local", "ray"):
            if t in med:
                rw, rc = med[t]["wall"] / med[o]["wall"], med[t]["cpu"] / med[o]["cpu"]
                key = ("" if t == "local" else "_ray") + {"ours": "", "ours-nofallback": "_nofallback",
                                                          "ours-processes": "_processes"}[o]
                results[f"ratio_wall_per_core{key}"], results[f"ratio_cpu{key}"] = rw, rc
                print(f"{o}/datatrove {t} per core (medians of {med[o]['runs']} and {med[t]['runs']} runs; "
                      f"wall {med[o]['walls']} vs {med[t]['walls']}, CPU-s {med[o]['cpus']} vs "
                      f"{med[t]['cpus']}): {rw:.2f}x (wall), {rc:.2f}x (CPU time)")

    procs = last_ok("ours-processes")
    if ours and procs and ours.ok:  # the same answer without Ray: every stage's kept and rejected sets
        same = ours_sets(ours.extra["out"]) == ours_sets(procs.extra["out"])
        results["processes_same_sets"] = same
        print(f"refinery --processes: the same kept and rejected documents per stage as on Ray: {same}")
    if ours and ours.ok:
        results["ours_ledger"] = ledger_counts(ours.extra["out"])
        results["ours_time_per_stage"] = ledger_time_table(ours)
        if last_ok("ours-nofallback"):
            results["ours_nofallback_time_per_stage"] = ledger_time_table(last_ok("ours-nofallback"))
        results["ours_phases"] = run_log_phases(ours.extra["out"])
        print("\n== refinery phases (run.log: first to last shard of each phase; gaps = global resolves) ==")
        ph = results["ours_phases"]
        for i, p in enumerate(ph):
            gap = f", then {ph[i + 1]['first'] - p['last']:.1f}s until the next phase's first shard" if i + 1 < len(ph) else ""
            print(f"phase {p['phase']}: {p['shards']} shards, {p['last'] - p['first']:.1f}s between first and last{gap}")
        if not args.no_one_shard:
            # Per stage, one shard in-process, without a profiler (a profiler distorts the timing).
            results["ours_stage_timing_one_shard"] = time_stages_one_shard(ours.extra["out"] + ".yaml", 0, None)
    for name, d in (("datatrove_steps", dt), ("datatrove_ray_steps", dtr)):
        if d and d.ok:
            results[name] = datatrove_step_stats(d.extra["out"])
            results[name + "_grouped"] = datatrove_time_table(results[name], d)
    if ours and dt and ours.ok and dt.ok and "ours_stage_timing_one_shard" in results:
        rows = stage_comparison(results["ours_stage_timing_one_shard"], results["ours_phases"],
                                results["ours_ledger"], results["datatrove_steps"], args.workers)
        results["stage_comparison"] = rows
        print("\n== per stage, per core (refinery: one shard in-process, resolves from run.log; datatrove: its "
              "stats.json over all tasks) ==")
        print(fmt_table([[r["stage"], r["ours_docs"], _f(r["ours_docs_s"], 1), _f(r["ours_mb_s"], 3),
                          r["dt_docs"], _f(r["dt_docs_s"], 1), _f(r["dt_mb_s"], 3), _f(r["ratio"], 2) + "x"]
                         for r in rows],
                        ["stage", "ours docs", "docs/s/core", "MB/s/core", "dt docs", "docs/s/core", "MB/s/core",
                         "ours/dt"]))
        print("(MB: HTML for read+extract, text after that; datatrove counts characters, refinery UTF-8 bytes)")

    for dtx, key in ((dt, ""), (dtr, "_ray")):
        if not (ours and dtx and ours.ok and dtx.ok):
            continue
        results.update(agreement_report(ours, dtx, all_ids, manifest, key))

    if args.profile and ours is not None:
        prof_path = os.path.join(work, "one_shard.prof")
        time_stages_one_shard(ours.extra["out"] + ".yaml", 0, prof_path)
        top = print_profile(prof_path)
        results["profile_top"] = top
        print("\n== cProfile of one shard (read + every stage's per-document work), top functions by own time ==")
        print(top)
    if args.scaling and not args.skip_ours:
        results["scaling"] = scaling(input_dir, work, args, runs, dt)

    if args.memory and not args.skip_ours:
        big_mb = args.mb * 4
        big_dir, big_info = ensure_input(argparse.Namespace(**{**vars(args), "input": None}), big_mb)
        big = run_ours(big_dir, work, args.workers, args, tag="-4x")
        big.tool = f"refinery, 4x input ({big_info['documents']} docs)"
        runs.append(big)
        results["memory"] = {"1x": {"mb": args.mb, "worker": ours.peak_rss_worker if ours else None,
                                    "task": ours.peak_rss_task if ours else None},
                             "4x": {"mb": big_mb, "worker": big.peak_rss_worker, "task": big.peak_rss_task,
                                    "wall": big.wall, "ok": big.ok}}
        print(f"\n== peak RSS per Ray worker: {args.mb:g} MB input "
              f"{(ours.peak_rss_worker if ours else 0) / 2**20:.0f} MiB (global-stage tasks "
              f"{(ours.peak_rss_task if ours else 0) / 2**20:.0f} MiB); {big_mb:g} MB input "
              f"{big.peak_rss_worker / 2**20:.0f} MiB (tasks {big.peak_rss_task / 2**20:.0f} MiB) {big.note}")

    if len(runs) > 2:
        print("\n== all runs ==")
        print(fmt_table([e2e_row(r) for r in runs], E2E_HEADER))
    results["runs"] = [asdict(r) for r in runs]
    path = args.results or os.path.join(work, "results.json")
    with open(path, "w") as fh:
        json.dump(results, fh, indent=2, default=str)
    print(f"\nresults: {path}")
    return 0 if all(r.ok for r in runs) else 1


def _kinds(st: RunStats) -> str:
    k = st.extra.get("cpu_by_kind") or {}
    return ", ".join(f"{name} {sec:.1f}" for name, sec in k.items())


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def scaling(input_dir: str, work: str, args, runs: list[RunStats], dt: RunStats | None) -> dict:
    """Ours with 1 and W workers, `--repeat` times each, alternating (the machine's noise hits both):
    embedded (each run starts and stops its own Ray, as `refinery run` on one machine does) and
    attached (to a Ray started once here, as a batch job on a running cluster). Then one run on a
    2-node cluster, the fixed cost of a run (1-page input), and datatrove with 1 worker (control)."""
    W = args.workers
    res: dict = {"repeat": args.repeat}
    walls: dict[str, list[float]] = {}
    works: dict[str, list[float]] = {}  # phase 0: sum of the shards' seconds of work

    def one(mode: str, w: int, rep: int, address: str | None = None) -> None:
        st = run_ours(input_dir, work, w, args, address=address, tag=f"-{mode}-w{w}-r{rep}",
                      monitor_root=os.getpid() if address else None)
        st.tool = f"refinery {mode}, {w} worker{'s' if w > 1 else ''}"
        runs.append(st)
        if st.ok:
            walls.setdefault(f"{mode} w{w}", []).append(st.wall)
            works.setdefault(f"{mode} w{w}", []).append(run_log_phases(st.extra["out"])[0]["work"])
        print(f"  {st.tool}, run {rep + 1}: {st.wall:.1f}s wall, {st.cpu:.1f} CPU-s ({_kinds(st)}) {st.note}",
              flush=True)

    print(f"\n== Ray scaling: 1 and {W} workers, {args.repeat} runs each ==", flush=True)
    for rep in range(args.repeat):
        one("embedded", 1, rep)
        one("embedded", W, rep)
    head = _start_ray_head(W)
    if head is not None:
        try:
            for rep in range(args.repeat):
                one("attached", 1, rep, head.address)
                one("attached", W, rep, head.address)
        finally:
            head.shutdown()
    for mode in ("embedded", "attached"):
        t1, tw = walls.get(f"{mode} w1"), walls.get(f"{mode} w{W}")
        if t1 and tw:
            sp = _median(t1) / _median(tw)
            k1, kw = works[f"{mode} w1"], works[f"{mode} w{W}"]
            res[mode] = {"w1_walls": t1, f"w{W}_walls": tw, "w1_median": _median(t1), f"w{W}_median": _median(tw),
                         "speedup": sp, "efficiency": sp / W, "w1_shard_work": k1, f"w{W}_shard_work": kw}
            print(f"{mode}: 1 worker {_median(t1):.1f}s, {W} workers {_median(tw):.1f}s (medians of "
                  f"{[round(x, 1) for x in t1]} and {[round(x, 1) for x in tw]}): speed-up {sp:.2f}, "
                  f"efficiency {sp / W:.2f}; phase 0 shard work {_median(k1):.1f}s with 1 worker, "
                  f"{_median(kw):.1f}s summed over {W} ({_median(kw) / _median(k1) - 1:+.1%})")

    cl = run_cluster(input_dir, work, args)
    runs.append(cl)
    if cl.ok:
        same = ours_sets(cl.extra["out"])["kept"] == ours_sets(os.path.join(work, f"ours-embedded-w1-r0"))["kept"]
        res["cluster"] = {"wall": cl.wall, "same_kept_as_single_node_1_worker": same}
        print(f"2-node cluster (1 CPU per node, {W} workers): {cl.wall:.1f}s; kept set identical to the "
              f"single-node 1-worker run: {same}")
    else:
        print(f"2-node cluster: {cl.note}")
    # Fixed cost of a run (start-up, models, barriers, report): the same recipe on a 13-page input,
    # big enough that documents reach every stage of both tools (datatrove fails on an empty stage).
    fixed_dir, _ = ensure_input(argparse.Namespace(**{**vars(args), "input": None, "shards": 1}), FIXED_MB)
    fixed = run_ours(fixed_dir, work, W, args, tag="-fixed")
    fixed.tool = "refinery, 13-page input (fixed cost)"
    runs.append(fixed)
    res["fixed_cost_wall"] = fixed.wall
    print(f"fixed cost of a run (13-page input, embedded Ray): {fixed.wall:.1f}s")
    if "embedded" in res and fixed.ok:
        c = ceiling(res["embedded"]["w1_median"], fixed.wall, W)
        res["embedded"]["ceiling"] = c
        print(f"embedded: efficiency ceiling set by that fixed cost, T1 / (T1 + (W - 1) F): {c:.2f}")
    if dt is not None and dt.ok and not args.reuse_datatrove and not args.no_control:
        dt1 = run_datatrove(input_dir, work, 1, args.shards, args, tag="-w1")
        dt1.tool = "datatrove, 1 worker"
        runs.append(dt1)
        if dt1.ok:
            dsp = dt1.wall / dt.wall
            res["datatrove"] = {"w1_wall": dt1.wall, "w2_wall": dt.wall, "speedup": dsp, "efficiency": dsp / W}
            print(f"datatrove (control, 1 run each): 1 worker {dt1.wall:.1f}s, {W} workers {dt.wall:.1f}s: "
                  f"speed-up {dsp:.2f}, efficiency {dsp / W:.2f}")
            dtf = run_datatrove(fixed_dir, work, W, 1, args, tag="-fixed")
            dtf.tool = "datatrove, 13-page input (fixed cost)"
            runs.append(dtf)
            if dtf.ok:
                res["datatrove"].update(fixed_cost_wall=dtf.wall, ceiling=ceiling(dt1.wall, dtf.wall, W))
                print(f"datatrove fixed cost (13-page input): {dtf.wall:.1f}s; its ceiling "
                      f"{res['datatrove']['ceiling']:.2f}")
    return res


def _start_ray_head(cpus: int):
    """A one-node Ray started here for the attached runs, in its own temp dir (so no other ray.init()
    on this machine finds it)."""
    from ray.cluster_utils import Cluster

    try:
        return Cluster(initialize_head=True, head_node_args={"num_cpus": cpus, "include_dashboard": False,
                                                             "temp_dir": "/tmp/rbench-ray-head"})
    except Exception as exc:
        print(f"could not start a Ray head for the attached runs: {exc}")
        return None


def run_cluster(input_dir: str, work: str, args) -> RunStats:
    """Ours on a 2-node Ray cluster started here (ray.cluster_utils.Cluster), one CPU per node."""
    from ray.cluster_utils import Cluster

    # Own temp dir: the head records its address in TEMP/ray_current_cluster, and a plain ray.init()
    # elsewhere on this machine (other users' runs) would otherwise attach to this cluster.
    tmp = "/tmp/rbench-ray"
    try:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "temp_dir": tmp})
    except Exception as exc:  # report, do not lose the other runs' numbers
        return RunStats("refinery 2-node cluster", 2, 0.0, 0.0, False, note=f"cluster start failed: {exc}",
                        extra={"input": _input_info(input_dir)})
    try:
        cluster.add_node(num_cpus=1, temp_dir=tmp)
        cluster.wait_for_nodes()
        st = run_ours(input_dir, work, 2, args, address=cluster.address, monitor_root=os.getpid(), tag="-cluster")
        st.tool = "refinery 2-node cluster"
        return st
    finally:
        cluster.shutdown()


def machine_info() -> dict:
    import platform

    info = {"nproc": os.cpu_count(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as fh:
            info["cpu"] = next(l.split(":", 1)[1].strip() for l in fh if l.startswith("model name"))
        with open("/proc/meminfo") as fh:
            info["ram_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
        info["loadavg"] = open("/proc/loadavg").read().split()[:3]
    except (OSError, StopIteration):
        pass
    from importlib.metadata import version

    for mod in ("ray", "datatrove", "trafilatura", "resiliparse", "pyarrow", "fasttext-numpy2-wheel", "spacy"):
        try:
            info[mod] = version(mod)
        except Exception:
            info[mod] = "?"
    return info


if __name__ == "__main__":
    sys.exit(main())
