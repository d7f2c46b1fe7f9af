"""Crawl scale: the default crawl recipe end to end at several input sizes, per stage and per command.

For each size (bytes of gzip WARC, as Common Crawl's files are counted) it builds an input from
the real pages in ../shared/corpora/web (benchmarks/make_pipeline_input.py's base pages and
edits: every page once, then copies that are exact, carry other navigation/footer boilerplate
shared across sites, or are edited at 0.4%, 2%, 10% or 35% of their words; copies land in any
file, so exact and near duplicates cross files), written as Common Crawl writes it (request /
response / metadata, each record its own gzip member) in files of `--file-mb` (1 GB like Common
Crawl's; a smaller input is one file), then runs, per executor (`--processes` and Ray, each on
`--workers` workers):

    refinery run RECIPE              (run, then mixture and report, as a user runs it)
    refinery report OUT              (the report alone)
    refinery mix RECIPE --out OUT    (the mixture alone)
    refinery plan --run OUT --target (4x the run's projected tokens at 4.3 TB)
    refinery retune OUT --set quality.gopher_quality.min_stop_words=1 --out OUT2

and prints, per stage (the run's ledger: CPU on the workers, global steps) and per command
(CPU of every process it started, from getrusage of the waited children, and wall), CPU-seconds
per document and per MB of input, peak RSS (VmHWM, /proc, sampled every 0.2 s) of every process
by role (driver, each worker, each worker's extraction and stages children, Ray's daemons) and
the bytes the command wrote. Results go to WORKDIR/results-SIZE-EXECUTOR.json;
`--plot docs/scale.png` draws the per-document curves of every results file in WORKDIR.

    PYTHONPATH=. nice python benchmarks/crawl_scale.py --size 50MB 200MB --executor processes ray --workers 2
    PYTHONPATH=. python benchmarks/crawl_scale.py --plot docs/scale.png

The workdir (default /tmp/refinery-crawl-scale) holds the inputs and runs; never the repository.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import make_pipeline_input as mpi  # noqa: E402
from benchmarks.worker_memory import _cmdline, _status, descendants, role  # noqa: E402

DEFAULT_WORK = "/tmp/refinery-crawl-scale"
RATES = {"near": 0.004, "edit2": 0.02, "edit10": 0.10, "far": 0.35}
KINDS = ("exact", "boilerplate", "near", "edit2", "edit10", "far")
WEIGHTS = (0.15, 0.2, 0.3, 0.1, 0.1, 0.15)
BASE_SHARE = 0.4  # of the input's bytes are base pages as themselves, while the corpora's last (to ~200 MB)

RECIPE = """# the default crawl recipe (mixtures/sample.yaml's stages on one commoncrawl source)
name: crawl-scale
output: {out}
sources:
  cc:
    kind: commoncrawl
    paths: ["{input}/*.warc.gz"]
stages:
  - stage: url_filter
    categories: [adult]
  - stage: langid
    languages: [en, de, fr, es, it, pt, nl, ru, pl, zh, ja]
  - stage: quality
    gopher_repetition: {{}}
    gopher_quality: {{}}
    c4: {{filter_no_terminal_punct: false}}
    fineweb: {{}}
  - stage: toxicity
    languages: [en, de]
    granularity: paragraph
  - stage: exact_dedup
  - stage: minhash_dedup
  - stage: pii
mixture:
  sources:
    cc: {{weight: 1.0}}
  budget: all
  max_epochs: 4
  seed: 0
  tokenizer: cl100k_base
  format: megatron
"""


# -- input ---------------------------------------------------------------------------------------
def parse_size(s: str) -> int:
    m = re.fullmatch(r"([\d.]+)\s*([KMGT]?B)", s.strip().upper())
    if not m:
        raise SystemExit(f"bad size {s!r}: say 50MB, 1GB")
    return int(float(m.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[m.group(2)])


class Pages:
    """Base pages with their text spans and vocabulary computed once (edits reuse them)."""

    def __init__(self, seed: int):
        self.pages = mpi.load_base_pages()
        mpi.measure_text(self.pages)
        self.spans = [mpi._text_spans(p.html) for p in self.pages]
        self.vocab = [[w for s, e in sp for w in mpi._WORD.findall(p.html[s:e])] or [b"lorem"]
                      for p, sp in zip(self.pages, self.spans)]
        self.donors = mpi._donor_sentences(random.Random(seed + 1), self.pages)

    def edit(self, rng: random.Random, b: int, kind: str) -> bytes:
        html, spans = self.pages[b].html, self.spans[b]
        if kind == "exact":
            return html
        if kind == "boilerplate" or not spans:
            return mpi._swap_boilerplate(rng, html)
        rate = RATES[kind]
        n_drop = 1 if rate < 0.05 else max(2, len(spans) // 3)
        n_add = 1 if rate < 0.05 else 3
        drop = set(rng.sample(range(len(spans)), min(n_drop, len(spans))))
        add = set(rng.sample(range(len(spans)), min(n_add, len(spans))))
        vocab = self.vocab[b]

        def fn(i: int, chunk: bytes) -> bytes:
            chunk = mpi._substitute(rng, chunk, rate, vocab)
            if i in drop:
                chunk = mpi._drop_sentence(rng, chunk)
            if i in add and self.donors:
                chunk = mpi._add_sentence(rng, chunk, rng.choice(self.donors))
            return chunk

        out = mpi._rewrite(html, spans, fn)
        return mpi._swap_boilerplate(rng, out) if rng.random() < 0.5 else out


def _member(head: dict[str, str], block: bytes, level: int) -> bytes:
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    rec = f"WARC/1.0\r\n{lines}Content-Length: {len(block)}\r\n\r\n".encode() + block + b"\r\n\r\n"
    return gzip.compress(rec, compresslevel=level, mtime=0)


class Writer:
    """Files of about `file_bytes`, each record its own gzip member (Common Crawl's layout)."""

    def __init__(self, out: Path, file_bytes: int, level: int, rng: random.Random):
        self.out, self.file_bytes, self.level, self.rng = out, file_bytes, level, rng
        self.n = -1
        self.fh = None
        self.size = 0
        self.total = 0
        self.t = datetime(2024, 5, 18, tzinfo=timezone.utc)

    def _next_file(self) -> None:
        if self.fh:
            self.fh.close()
        self.n += 1
        name = f"CC-SCALE-{self.n:05d}.warc.gz"
        self.fh = open(self.out / name, "wb")
        self.size = 0
        info = b"software: refinery benchmarks/crawl_scale.py\r\nformat: WARC File Format 1.1\r\n"
        self._write({"WARC-Type": "warcinfo", "WARC-Record-ID": self._rid(), "WARC-Filename": name,
                     "Content-Type": "application/warc-fields"}, info)

    def _rid(self) -> str:
        return f"<urn:uuid:{uuid.UUID(int=self.rng.getrandbits(128), version=4)}>"

    def _write(self, head: dict[str, str], block: bytes) -> None:
        data = _member(head, block, self.level)
        self.fh.write(data)
        self.size += len(data)
        self.total += len(data)

    def write(self, url: str, html: bytes, charset: str | None) -> None:
        if self.fh is None or self.size >= self.file_bytes:
            self._next_file()
        self.t += timedelta(seconds=1)
        date = self.t.strftime("%Y-%m-%dT%H:%M:%SZ")
        req, resp, meta = self._rid(), self._rid(), self._rid()
        host = re.sub(r"^https?://([^/]+).*$", r"\1", url)
        self._write({"WARC-Type": "request", "WARC-Target-URI": url, "WARC-Date": date, "WARC-Record-ID": req,
                     "WARC-Concurrent-To": resp, "Content-Type": "application/http; msgtype=request"},
                    f"GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: CCBot/2.0\r\n\r\n".encode())
        ctype = "text/html" + (f"; charset={charset}" if charset else "")
        http = f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(html)}\r\n\r\n".encode()
        self._write({"WARC-Type": "response", "WARC-Target-URI": url, "WARC-Date": date, "WARC-Record-ID": resp,
                     "WARC-Identified-Payload-Type": "text/html",
                     "Content-Type": "application/http; msgtype=response"}, http + html)
        self._write({"WARC-Type": "metadata", "WARC-Target-URI": url, "WARC-Date": date, "WARC-Record-ID": meta,
                     "WARC-Concurrent-To": resp, "Content-Type": "application/warc-fields"},
                    b"fetchTimeMs: %d\r\n" % self.rng.randrange(50, 900))

    def close(self) -> int:
        if self.fh:
            self.fh.close()
        return self.n + 1


def build(out: Path, total: int, file_bytes: int, seed: int = 0, level: int = 6, pages: Pages | None = None) -> dict:
    """An input of about `total` bytes of gzip WARC (reused when input.json says it is this one)."""
    want = {"bytes_target": total, "file_bytes": file_bytes, "seed": seed, "level": level, "version": 2}
    info_path = out / "input.json"
    if info_path.exists():
        info = json.loads(info_path.read_text())
        if all(info.get(k) == v for k, v in want.items()):
            return info
    t0 = time.time()
    pages = pages or Pages(seed)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    rng = random.Random(seed)
    w = Writer(out, file_bytes, level, random.Random(seed + 7))
    order = list(range(len(pages.pages)))
    rng.shuffle(order)
    bases: list[int] = []  # pages shown as themselves: about BASE_SHARE of the input while they last
    written = docs = 0
    counts: dict[str, int] = {}
    copies = [0] * len(pages.pages)
    while written < total:
        if len(bases) < len(order) and (written < BASE_SHARE * total or not bases):
            b, kind = order[len(bases)], "original"  # base pages first, each once
            bases.append(b)
        else:  # then copies of random base pages
            b = rng.choice(bases)
            kind = rng.choices(KINDS, WEIGHTS)[0]
        copies[b] += 1
        drng = random.Random(f"{seed}:{b}:{copies[b]}")
        page = pages.pages[b]
        html = page.html if kind == "original" else pages.edit(drng, b, kind)
        url = page.url if kind == "original" else mpi._copy_url(drng, page.url, kind, copies[b])
        w.write(url.replace(" ", "%20"), html, page.charset)
        written = w.total
        docs += 1
        counts[kind] = counts.get(kind, 0) + 1
    files = w.close()
    size = sum(f.stat().st_size for f in out.glob("*.warc.gz"))
    info = {**want, "files": files, "bytes": size, "documents": docs, "kinds": counts, "base_pages": len(bases),
            "seconds": round(time.time() - t0, 1)}
    info_path.write_text(json.dumps(info, indent=2))
    return info


# -- measuring a command ---------------------------------------------------------------------------
def _written(path: Path, since: float) -> int:
    """Bytes of the files under `path` written since `since` (what a command wrote there)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = os.stat(os.path.join(root, f))
            except OSError:
                continue
            if st.st_mtime >= since:
                total += st.st_size
    return total


def measure(cmd: list[str], cwd: str, wrote: Path | None) -> dict:
    """Run `cmd`; its wall, CPU (every waited descendant), peak RSS by role, bytes written under `wrote`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak: dict[int, int] = {}
    info: dict[int, tuple[str, int]] = {}
    cpu_seen: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    out_lines: list[str] = []
    reader = threading.Thread(target=lambda: out_lines.extend(proc.stdout), daemon=True)
    reader.start()
    while proc.poll() is None:
        for pid, ppid in descendants(proc.pid).items():
            try:
                hwm = int(_status(pid)["VmHWM"].split()[0])
                cmdline = _cmdline(pid)
                with open(f"/proc/{pid}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
                cpu_seen[pid] = (int(f[11]) + int(f[12])) / tick
            except (OSError, KeyError, ValueError, IndexError):
                continue
            peak[pid] = max(peak.get(pid, 0), hwm)
            info[pid] = (role(pid, proc.pid, cmdline), ppid)
        time.sleep(0.2)
    reader.join(5)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    roles: dict[str, list[int]] = {}
    for pid, kb in peak.items():
        roles.setdefault(info[pid][0], []).append(kb >> 10)
    per_worker = []
    for pid, (r, _) in info.items():
        if r == "worker":
            kids = [c for c, (rr, pp) in info.items() if pp == pid and rr.startswith("refinery-")]
            per_worker.append((peak[pid] + sum(peak[c] for c in kids)) >> 10)
    return {"cmd": " ".join(cmd[2:]), "rc": proc.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(max(cpu, sum(cpu_seen.values())), 1),
            "peak_rss_mib": {r: sorted(v) for r, v in sorted(roles.items())},
            "per_worker_all_mib": sorted(per_worker),
            "bytes_written": _written(wrote, t0 - 1) if wrote and wrote.exists() else 0,
            "tail": "".join(out_lines[-15:]) if proc.returncode else ""}


def stage_cpu(out: Path) -> dict:
    """Per stage of the run's ledger: documents in, CPU-s on the workers, plus global steps."""
    led = json.loads((out / "ledger.json").read_text())
    rows = {}
    for s in led["stages"]:
        t = s["total"]
        rows[s["stage"]] = {"docs_in": t["docs_in"], "kept": t["kept"], "cpu_s": t.get("cpu_seconds", 0.0)}
    for name, t in led.get("global_steps", {}).items():
        rows.setdefault(name, {"docs_in": rows.get(name, {}).get("docs_in", 0), "kept": 0, "cpu_s": 0.0})
        rows[name]["global_cpu_s"] = t["cpu_seconds"]
    return {"stages": rows, "shard_work_cpu_s": led.get("shard_work", {}).get("cpu_seconds"),
            "overhead": led.get("overhead", {}), "inputs": led.get("inputs", {})}


def write_recipe(path: Path, out: Path | str, input_dir: Path | str) -> Path:
    """The default crawl recipe reading `input_dir`/*.warc.gz into `out` (local paths or URLs)."""
    path.write_text(RECIPE.format(out=out, input=input_dir))
    return path


def commands(recipe: Path, out: Path | str, out2: Path | str, executor: str, workers: int) -> dict[str, list[str]]:
    """The commands a user runs after each other, as argv: run, report, mixture, plan, retune."""
    py = [sys.executable, "-m", "pipeline.cli"]
    flag = ["--processes"] if executor == "processes" else ["--ray"]
    return {"run": py + ["run", str(recipe), "--workers", str(workers), "--quiet"] + flag,
            "report": py + ["report", str(out)],
            "mixture": py + ["mix", str(recipe), "--out", str(out)],
            "plan": py + ["plan", "--run", str(out), "--target", "3.2TB"],
            "retune": py + ["retune", str(out), "--set", "quality.gopher_quality.min_stop_words=1", "--out", str(out2)]}


def suite(work: Path, input_dir: Path, info: dict, executor: str, workers: int, tag: str) -> dict:
    runs = work / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    out = runs / f"{tag}-{executor}"
    out2 = runs / f"{tag}-{executor}-retuned"
    for d in (out, out2):
        if d.exists():
            shutil.rmtree(d)
    recipe = write_recipe(runs / f"{tag}-{executor}.yaml", out, input_dir)
    cmds = commands(recipe, out, out2, executor, workers)
    res: dict = {"input": info, "executor": executor, "workers": workers, "load_before": os.getloadavg()[0],
                 "commands": {}}
    r = measure(cmds["run"], str(runs), out)
    res["commands"]["run"] = r
    if r["rc"] != 0:
        print(r["tail"], file=sys.stderr)
        return res
    res["ledger"] = stage_cpu(out)
    proj = json.loads((out / "report" / "projection.json").read_text()) if (out / "report" / "projection.json").exists() else {}
    res["commands"]["report"] = measure(cmds["report"], str(runs), out / "report")
    res["commands"]["mixture"] = measure(cmds["mixture"], str(runs), out / "mixture")
    res["commands"]["plan"] = measure(cmds["plan"], str(runs), None)
    res["commands"]["retune"] = measure(cmds["retune"], str(runs), out2)
    res["projection_keys"] = sorted(proj)[:20]
    res["load_after"] = os.getloadavg()[0]
    return res


# -- printing ----------------------------------------------------------------------------------------
def table(res: dict) -> str:
    info = res["input"]
    docs, mb = info["documents"], info["bytes"] / 1e6
    lines = [f"== {mb:,.0f} MB of WARC in {info['files']} file(s), {docs:,} pages; {res['executor']}, "
             f"{res['workers']} workers; load {res['load_before']:.1f} -> {res.get('load_after', 0):.1f}"]
    led = res.get("ledger")
    if led:
        lines.append(f"{'stage':22} {'docs in':>9} {'CPU-s':>8} {'ms/doc':>8} {'CPU-s/MB':>9}")
        for name, s in led["stages"].items():
            cpu = s["cpu_s"] + s.get("global_cpu_s", 0.0)
            lines.append(f"{name:22} {s['docs_in']:>9,} {cpu:>8.1f} {1e3 * cpu / docs:>8.2f} {cpu / mb:>9.3f}")
    lines.append(f"{'command':10} {'wall s':>7} {'CPU-s':>8} {'ms/doc':>8} {'CPU-s/MB':>9} {'written MB':>11}  peak RSS MiB by process")
    for name, c in res["commands"].items():
        rss = "; ".join(f"{r} {v[-1] if len(v) == 1 else f'{v[0]}..{v[-1]} (x{len(v)})'}"
                        for r, v in c["peak_rss_mib"].items() if not r.startswith("other"))
        lines.append(f"{name:10} {c['wall_s']:>7.1f} {c['cpu_s']:>8.1f} {1e3 * c['cpu_s'] / docs:>8.2f} "
                     f"{c['cpu_s'] / mb:>9.3f} {c['bytes_written'] / 1e6:>11.1f}  {rss}")
        if c["per_worker_all_mib"]:
            lines.append(f"{'':10} per worker with its children: {c['per_worker_all_mib']} MiB")
    return "\n".join(lines)


def plot(work: Path, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [json.loads(p.read_text()) for p in sorted(work.glob("results-*.json"))]
    results = [r for r in results if r["commands"].get("run", {}).get("rc") == 0]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ex, marker in (("processes", "o"), ("ray", "s")):
        rs = sorted((r for r in results if r["executor"] == ex), key=lambda r: r["input"]["bytes"])
        if not rs:
            continue
        mbs = [r["input"]["bytes"] / 1e6 for r in rs]
        for cmd in ("run", "report", "mixture", "retune"):
            ys = [1e3 * r["commands"][cmd]["cpu_s"] / r["input"]["documents"] if cmd in r["commands"] else None
                  for r in rs]
            axes[0].plot(mbs, ys, marker=marker, label=f"{cmd} ({ex})")
        stages = [s for s in rs[0]["ledger"]["stages"]]
        for s in stages:
            ys = [1e3 * (r["ledger"]["stages"][s]["cpu_s"] + r["ledger"]["stages"][s].get("global_cpu_s", 0))
                  / r["input"]["documents"] for r in rs]
            if ex == "processes":
                axes[1].plot(mbs, ys, marker=marker, label=s)
    for ax, title in ((axes[0], "CPU ms per page, per command"), (axes[1], "CPU ms per page, per stage (--processes)")):
        ax.set_xscale("log")
        ax.set_xlabel("input, MB of gzip WARC")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", nargs="*", default=[], help="input sizes, bytes of gzip WARC (50MB 1GB 10GB)")
    ap.add_argument("--executor", nargs="+", default=["processes", "ray"], choices=["processes", "ray"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--file-mb", type=float, default=1000, help="size of one WARC file (Common Crawl's: ~1 GB)")
    ap.add_argument("--workdir", type=Path, default=Path(DEFAULT_WORK))
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--plot", help="draw the curves of every results file in the workdir to this PNG")
    args = ap.parse_args(argv)
    work = args.workdir.resolve()
    if str(work).startswith(str(ROOT)):
        raise SystemExit("--workdir must be outside the repository")
    pages = None
    for size in args.size:
        total = parse_size(size)
        input_dir = work / f"input-{size}"
        if not (input_dir / "input.json").exists():
            pages = pages or Pages(0)
        info = build(input_dir, total, int(args.file_mb * 1e6), pages=pages)
        print(f"input {size}: {json.dumps(info)}", flush=True)
        if args.build_only:
            continue
        for ex in args.executor:
            res = suite(work, input_dir, info, ex, args.workers, size)
            (work / f"results-{size}-{ex}.json").write_text(json.dumps(res, indent=2))
            print(table(res), flush=True)
    if args.plot:
        plot(work, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
