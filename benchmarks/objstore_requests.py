"""Object-store requests and bytes of the default crawl recipe, per command, with input and output on S3.

Starts moto's S3 server on loopback inside this process, behind a counting WSGI layer that sees
every request the commands' processes send: it classifies each (GET, ranged GET, PUT, multipart
part / start / complete / abort, LIST, HEAD, DELETE (a batch delete is one request; the objects
it names are counted apart), COPY, other), counts the bytes of object bodies read (GET replies) and written (PUT and part bodies),
and keeps the size of every object the requests created, so it knows the bytes under the run's
`_work/` prefix after every write and delete (its peak is the run's intermediate storage) and the
bytes of the run's outputs at the end of each command.

For each size it uploads the prebuilt WARC input of benchmarks/crawl_scale.py (WORKDIR/input-SIZE,
default /tmp/refinery-crawl-scale, read only; built by crawl_scale.py when absent) to
`s3://bucket/SIZE/input`, writes crawl_scale.py's recipe with input and output in the bucket, and
runs crawl_scale.py's commands one after the other (`refinery run`, which also writes the report
and the mixture; `report`; `mix`; `plan --run`; `retune`), counting each alone. It prints requests
by kind per command, per input document and per input MB, the reads of each object relative to
its size (re-reading shows there), and the 4.3 TB projection of the counts. Counts and each
command's request log go to OUT/objstore-SIZE.json and OUT/requests-SIZE-COMMAND.jsonl.

    PYTHONPATH=. nice python benchmarks/objstore_requests.py --size 50MB 200MB --workers 2

OUT (default /tmp/objstore-counts) holds the results; never the repository.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import parse_qs, unquote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import crawl_scale  # noqa: E402

BUCKET = "bucket"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
KINDS = ("GET", "GET_RANGE", "PUT", "PART", "MPU_START", "MPU_COMPLETE", "MPU_ABORT", "LIST", "HEAD", "DELETE",
         "COPY", "OTHER")
COMMANDS = ("run", "report", "mixture", "plan", "retune")
TARGET_MB = 4.3e6  # 4.3 TB of gzip WARC, in MB


# -- what one request is ---------------------------------------------------------------------------
def classify(method: str, key: str, query: dict[str, list[str]], headers: dict[str, str]) -> str:
    """The kind of an S3 request from its method, object key ('' for the bucket), query and headers
    (lower-case names)."""
    method = method.upper()
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if not key or "list-type" in query or "uploadId" in query or "uploads" in query:
            return "LIST"  # ListObjects(V2), ListMultipartUploads, ListParts
        if set(query) & {"acl", "tagging", "versioning", "location", "attributes", "legal-hold", "retention"}:
            return "OTHER"
        return "GET_RANGE" if "range" in headers else "GET"
    if method == "PUT":
        if not key or set(query) & {"acl", "tagging", "versioning", "legal-hold", "retention"}:
            return "OTHER"  # CreateBucket and sub-resources
        if "x-amz-copy-source" in headers:
            return "COPY"  # CopyObject and UploadPartCopy
        return "PART" if "partNumber" in query and "uploadId" in query else "PUT"
    if method == "POST":
        if "uploads" in query:
            return "MPU_START"
        if "uploadId" in query:
            return "MPU_COMPLETE"
        if "delete" in query:
            return "DELETE"  # DeleteObjects: counted once per object it names
        return "OTHER"
    if method == "DELETE":
        if "uploadId" in query:
            return "MPU_ABORT"
        return "DELETE" if key else "OTHER"
    return "OTHER"


class Window:
    """What the requests of one command did."""

    def __init__(self, areas: dict[str, str], work: str | None):
        self.areas = areas  # key prefix -> area name ("input", "run", "retuned")
        self.work = work  # the run's `_work/` key prefix
        self.kinds: Counter = Counter()
        self.by_area: Counter = Counter()  # (kind, area/first component) -> requests
        self.bytes_read = 0  # object bodies in GET replies
        self.bytes_written = 0  # object bodies in PUT and part requests
        self.bytes_copied = 0  # server-side copies (no transfer through the client)
        self.read_of: Counter = Counter()  # key -> bytes read
        self.gets_of: Counter = Counter()  # key -> GET requests
        self.size_of: dict[str, int | None] = {}  # key -> its size when it was read
        self.errors: Counter = Counter()  # (kind, HTTP status) of replies >= 400
        self.peak_work = 0
        self.objects_deleted = 0
        self.log: list[dict] = []

    def area(self, key: str) -> str:
        for prefix, name in self.areas.items():
            if key.startswith(prefix):
                rest = key[len(prefix):].split("/")
                return f"{name}:{rest[0]}" if len(rest) > 1 else f"{name}:(top)"
        return "other"

    def summary(self) -> dict:
        reads = [(k, n) for k, n in self.gets_of.items()]
        return {"requests": dict(self.kinds), "total": sum(self.kinds.values()),
                "by_area": {f"{k} {a}": n for (k, a), n in sorted(self.by_area.items())},
                "bytes_read": self.bytes_read, "bytes_written": self.bytes_written, "bytes_copied": self.bytes_copied,
                "objects_deleted": self.objects_deleted,
                "objects_read": len(self.gets_of), "max_gets_per_object": max((n for _, n in reads), default=0),
                "errors": {f"{k} {s}": n for (k, s), n in self.errors.items()}, "peak_work_bytes": self.peak_work}


class Counting:
    """A WSGI layer in front of an S3 server's app: counts every request into the open `Window`,
    and keeps the size of every object created through it (PUT, completed multipart upload, copy;
    forgotten on delete)."""

    def __init__(self, app, bucket: str = BUCKET):
        self.app, self.bucket = app, bucket
        self.lock = threading.Lock()
        self.sizes: dict[str, int] = {}
        self.uploads: dict[str, dict[int, int]] = defaultdict(dict)  # upload id -> part number -> bytes
        self.window: Window | None = None
        self.work_bytes = 0
        self.inflight = 0  # requests not booked yet (a reply is booked once its body is sent)

    # the object sizes, and the `_work` bytes kept up to date with them
    def _set(self, key: str, size: int | None) -> None:
        old = self.sizes.pop(key, None) if size is None else self.sizes.get(key)
        if size is not None:
            self.sizes[key] = size
        w = self.window
        if w is not None and w.work and key.startswith(w.work):
            self.work_bytes += (size or 0) - (old or 0)
            w.peak_work = max(w.peak_work, self.work_bytes)

    def bytes_under(self, prefix: str) -> int:
        with self.lock:
            return sum(n for k, n in self.sizes.items() if k.startswith(prefix))

    def _drain(self, wait: float) -> None:
        """Until every request already received is booked (at most `wait` seconds)."""
        deadline = time.time() + wait
        while self.inflight and time.time() < deadline:
            time.sleep(0.01)

    def open(self, window: Window, wait: float = 30.0) -> None:
        """Start a window once every request already received is booked (to no window): a request
        the client has its answer to may still be booking when the next window opens."""
        self._drain(wait)
        with self.lock:
            self.window = window
            self.work_bytes = sum(n for k, n in self.sizes.items() if window.work and k.startswith(window.work))
            window.peak_work = self.work_bytes

    def close(self, wait: float = 30.0) -> Window | None:
        """End the window once every request already received is booked."""
        self._drain(wait)
        with self.lock:
            w, self.window = self.window, None
            return w

    def __call__(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        path = unquote(raw.split("?", 1)[0]) if raw else environ.get("PATH_INFO", "").encode("latin-1").decode()
        bucket, _, key = path.lstrip("/").partition("/")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        kind = classify(method, key, query, headers)
        body = b""
        if kind in ("DELETE", "MPU_COMPLETE") and method == "POST":  # small XML bodies, read to see what they name
            n = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(n) if n else b""
            environ["wsgi.input"] = io.BytesIO(body)
        sent = int(headers.get("x-amz-decoded-content-length") or environ.get("CONTENT_LENGTH") or 0) \
            if kind in ("PUT", "PART") else 0
        status: list[int] = [0]

        def start(st, hdrs, exc_info=None):
            status[0] = int(st.split()[0])
            return start_response(st, hdrs, exc_info) if exc_info else start_response(st, hdrs)

        with self.lock:
            self.inflight += 1
        try:
            reply = self.app(environ, start)
        except BaseException:
            with self.lock:
                self.inflight -= 1
            raise

        def chunks():
            got = 0
            try:
                for c in reply:
                    got += len(c)
                    yield c
            finally:
                if hasattr(reply, "close"):
                    reply.close()
                try:
                    if bucket == self.bucket:
                        self._book(kind, method, key, query, headers, body, sent, got, status[0])
                finally:
                    with self.lock:
                        self.inflight -= 1
        return chunks()

    def _book(self, kind: str, method: str, key: str, query: dict, headers: dict, body: bytes, sent: int, got: int,
              status: int) -> None:
        ok = 200 <= status < 300
        with self.lock:
            named: list[str] = []
            if ok and kind == "PUT":
                self._set(key, sent)
            elif ok and kind == "PART":
                self.uploads[query["uploadId"][0]][int(query["partNumber"][0])] = sent
            elif ok and kind == "MPU_COMPLETE":
                parts = self.uploads.pop(query["uploadId"][0], {})
                listed = [int(n) for n in re.findall(rb"<PartNumber>(\d+)</PartNumber>", body)]
                self._set(key, sum(parts.get(n, 0) for n in (listed or parts)))
            elif ok and kind == "MPU_ABORT":
                self.uploads.pop(query["uploadId"][0], None)
            elif ok and kind == "COPY":
                src = unquote(headers["x-amz-copy-source"].split("?")[0]).lstrip("/").partition("/")[2]
                size = self.sizes.get(src, 0)
                if "partNumber" in query:
                    self.uploads[query["uploadId"][0]][int(query["partNumber"][0])] = size
                else:
                    self._set(key, size)
            elif ok and kind == "DELETE":
                named = _deleted_keys(body) if body else [key]
                for k in named:
                    self._set(k, None)
            w = self.window
            if w is None:
                return
            n = len(named) if kind == "DELETE" else 0  # objects a (batch) delete named
            w.kinds[kind] += 1
            w.objects_deleted += n
            w.by_area[(kind, w.area(key or (named[0] if named else "")))] += 1  # a batch delete: its first key's
            if status >= 400:
                w.errors[(kind, status)] += 1
            if kind in ("GET", "GET_RANGE") and ok:
                w.bytes_read += got
                w.read_of[key] += got
                w.gets_of[key] += 1
                w.size_of[key] = self.sizes.get(key)
            if kind in ("PUT", "PART") and ok:
                w.bytes_written += sent
            if kind == "COPY" and ok:
                w.bytes_copied += self.sizes.get(key, 0)
            w.log.append({"kind": kind, "method": method, "key": key or (named[0] if named else "/"), "named": len(named), "status": status, "sent": sent,
                          "got": got if kind in ("GET", "GET_RANGE") else 0, "range": headers.get("range"),
                          "n": n, "query": sorted(query), "prefix": query.get("prefix", [None])[0]})


def _deleted_keys(body: bytes) -> list[str]:
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return []
    return [el.text or "" for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Key"]


# -- the server --------------------------------------------------------------------------------------
class CountingMoto:
    """moto's S3 server on 127.0.0.1 (a free port) in a thread of this process, behind `Counting`."""

    def __init__(self) -> None:
        import logging

        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.counting = Counting(DomainDispatcherApplication(create_backend_app))
        self.server = make_server("127.0.0.1", 0, self.counting, threaded=True, request_handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, **CREDENTIALS}

    def __enter__(self) -> "CountingMoto":
        self.thread.start()
        self.saved = {k: os.environ.get(k) for k in self.env()}
        os.environ.update(self.env())  # this process's s3fs, and every command it starts
        fs = self.fs()
        if not fs.exists(BUCKET):
            fs.mkdir(BUCKET)
        return self

    def fs(self):
        import fsspec

        return fsspec.filesystem("s3", skip_instance_cache=True, key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                 secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"], endpoint_url=self.endpoint)

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.thread.join(10)
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# -- one size ------------------------------------------------------------------------------------------
def variant(recipe: Path, split_bytes: int | None, partitions: int | None) -> None:
    """The recipe with the source's `split_bytes` (more parts from the same input) and the dedup
    stages' global-step `partitions` set, to see what grows with parts x partitions."""
    text = recipe.read_text()
    if split_bytes:
        text = text.replace("kind: commoncrawl\n", f"kind: commoncrawl\n    split_bytes: {split_bytes}\n", 1)
    if partitions:
        for stage in ("exact_dedup", "minhash_dedup"):
            text = text.replace(f"- stage: {stage}\n", f"- stage: {stage}\n    partitions: {partitions}\n", 1)
    recipe.write_text(text)


def global_stats(fs, run: str) -> dict[str, dict]:
    """Each global step's stats as the run logged them (partitions, documents, ...)."""
    try:
        text = fs.cat_file(f"{run}/run.log").decode("utf-8", "replace")
    except (OSError, FileNotFoundError):
        return {}
    return {m.group(1): json.loads(m.group(2)) for m in re.finditer(r"(\S+): global step took \S+ (\{.*\})", text)}


def docs_in(fs, run: str) -> dict[str, int]:
    """Documents that reached each stage (the run's ledger)."""
    try:
        led = json.loads(fs.cat_file(f"{run}/ledger.json"))
    except (OSError, FileNotFoundError, ValueError):
        return {}
    return {s["stage"]: s["total"]["docs_in"] for s in led.get("stages", [])}


def measure_size(server: CountingMoto, input_dir: Path, info: dict, tag: str, out_dir: Path, workers: int,
                 executor: str = "processes", only: tuple[str, ...] = COMMANDS, split_bytes: int | None = None,
                 partitions: int | None = None) -> dict:
    """Upload the input, run the commands one after the other, count each."""
    fs = server.fs()
    base = f"{BUCKET}/{tag}"
    if fs.exists(base):
        fs.rm(base, recursive=True)
    for f in sorted(input_dir.glob("*.warc.gz")):
        fs.put_file(str(f), f"{base}/input/{f.name}")
    url, url2 = f"s3://{base}/run", f"s3://{base}/retuned"
    recipe = crawl_scale.write_recipe(out_dir / f"recipe-{tag}.yaml", url, f"s3://{base}/input")
    variant(recipe, split_bytes, partitions)
    argv = crawl_scale.commands(recipe, url, url2, executor, workers)
    areas = {f"{tag}/input/": "input", f"{tag}/run/": "run", f"{tag}/retuned/": "retuned"}  # keys, in the bucket
    res: dict = {"input": info, "executor": executor, "workers": workers, "split_bytes": split_bytes,
                 "partitions": partitions, "commands": {}}
    for name in only:
        window = Window(areas, f"{tag}/run/_work/" if name != "retune" else f"{tag}/retuned/_work/")
        server.counting.open(window)
        m = crawl_scale.measure(argv[name], str(out_dir), None)
        server.counting.close()
        c = window.summary()
        c.update({"rc": m["rc"], "wall_s": m["wall_s"], "cpu_s": m["cpu_s"],
                  "run_bytes_after": server.counting.bytes_under(f"{tag}/run/"),
                  "work_bytes_after": server.counting.bytes_under(f"{tag}/run/_work/"),
                  "retuned_bytes_after": server.counting.bytes_under(f"{tag}/retuned/"),
                  "rereads": rereads(window), "reads_by_area": reads_by_area(window),
                  "shuffle_files": shuffle_files(window), "work_requests": work_requests(window),
                  "shuffle_requests": shuffle_requests(window)})
        res["commands"][name] = c
        with open(out_dir / f"requests-{tag}-{name}.jsonl", "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in window.log)
        if m["rc"] != 0:
            print(m["tail"], file=sys.stderr)
            break
    # the sizes the requests said against what the store holds (a check of the counting itself)
    fs.invalidate_cache()
    listed = sum(fs.du(f"{base}/run", total=False).values()) if fs.exists(f"{base}/run") else 0
    res["check"] = {"run_bytes_listed": listed, "run_bytes_counted": server.counting.bytes_under(f"{tag}/run/")}
    res["parts"] = _parts(fs, f"{base}/run")
    res["global_steps"] = global_stats(fs, f"{base}/run")
    res["docs_in"] = docs_in(fs, f"{base}/run")
    fs.rm(base, recursive=True)  # moto keeps objects in this process (spooled to /tmp)
    return res


def _parts(fs, run: str) -> int | None:
    try:
        return sum(1 for line in fs.cat_file(f"{run}/shards.jsonl").splitlines() if line.strip())
    except (OSError, FileNotFoundError):
        return None


def shuffle_requests(window: Window) -> dict[str, int]:
    """Requests on the global steps' exchange files (`shuffle_files`), by kind."""
    return dict(Counter(r["kind"] for r in window.log if SHUFFLE.search(r["key"])))


def work_requests(window: Window) -> dict[str, int]:
    """Requests on the run's `_work/` objects, by kind (a batch delete counted per object it names)."""
    c: Counter = Counter()
    for r in window.log:
        if window.work and r["key"].startswith(window.work):
            c[r["kind"]] += 1
    return dict(c)


def rereads(window: Window) -> list[dict]:
    """Objects read more than once, or more bytes than they hold: the worst 8 by bytes read."""
    rows = []
    for key, got in window.read_of.items():
        size = window.size_of.get(key)
        if window.gets_of[key] > 1 or (size and got > size):
            rows.append({"key": key, "gets": window.gets_of[key], "bytes_read": got, "size": size,
                         "read_x": round(got / size, 2) if size else None})
    return sorted(rows, key=lambda r: -r["bytes_read"])[:8]


# the global steps' exchange files (stages/dedup/io.py): `KIND/fF.exchange`, one per producer F and
# kind holding its buckets; before, `KIND/bB/fF.parquet` (or .arrow), one per producer and bucket B
SHUFFLE = re.compile(r"_work/([^/]+)/resolve-[^/]+/((?:sweep/)?[^/]+)/(?:b(\d+)/f(\d+)\.|f(\d+)\.exchange$)")


def shuffle_files(window: Window) -> dict[str, dict]:
    """The global steps' exchange files written, per stage and kind: the files, the distinct
    producers F and (one file per bucket, the layout before) buckets B."""
    out: dict[str, dict] = {}
    for r in window.log:
        if r["kind"] not in ("PUT", "MPU_COMPLETE") or r["status"] >= 300:
            continue
        m = SHUFFLE.search(r["key"])
        if m:
            e = out.setdefault(f"{m.group(1)}/{m.group(2)}", {"files": 0, "b": set(), "f": set()})
            e["files"] += 1
            if m.group(3) is not None:
                e["b"].add(int(m.group(3)))
            e["f"].add(int(m.group(4) if m.group(3) is not None else m.group(5)))
    return {k: {"files": v["files"], "buckets": len(v["b"]), "producers": len(v["f"])} for k, v in sorted(out.items())}


def reads_by_area(window: Window) -> dict[str, dict]:
    """Per area: objects read, GETs, bytes read, and bytes read per byte of the objects read."""
    out: dict[str, dict] = {}
    for key, got in window.read_of.items():
        a = out.setdefault(window.area(key), {"objects": 0, "gets": 0, "bytes_read": 0, "object_bytes": 0})
        a["objects"] += 1
        a["gets"] += window.gets_of[key]
        a["bytes_read"] += got
        a["object_bytes"] += window.size_of.get(key) or 0
    for a in out.values():
        a["read_x"] = round(a["bytes_read"] / a["object_bytes"], 2) if a["object_bytes"] else None
    return dict(sorted(out.items()))


# -- printing --------------------------------------------------------------------------------------------
SHOWN = ("GET", "GET_RANGE", "PUT", "PART", "MPU_START", "MPU_COMPLETE", "LIST", "HEAD", "DELETE", "COPY", "OTHER")


def table(res: dict) -> str:
    info = res["input"]
    docs, mb = info["documents"], info["bytes"] / 1e6
    lines = [f"== {mb:,.0f} MB of WARC, {docs:,} pages, {res.get('parts')} part(s); {res['executor']}, "
             f"{res['workers']} workers"]
    head = f"{'command':8} " + " ".join(f"{k:>7}" for k in ("GET", "GETr", "PUT", "PART", "MPUs", "MPUc", "LIST",
                                                              "HEAD", "DEL", "COPY", "other"))
    lines.append(head + f" {'total':>7} {'/kdoc':>7} {'/MB':>6} {'read MB':>8} {'wrote MB':>8} {'peak _work MB':>13}")
    for name, c in res["commands"].items():
        r = c["requests"]
        lines.append(f"{name:8} " + " ".join(f"{r.get(k, 0):>7}" for k in SHOWN)
                     + f" {c['total']:>7} {1e3 * c['total'] / docs:>7.1f} {c['total'] / mb:>6.2f}"
                     f" {c['bytes_read'] / 1e6:>8.1f} {c['bytes_written'] / 1e6:>8.1f} {c['peak_work_bytes'] / 1e6:>13.1f}")
        if c["errors"]:
            lines.append(f"{'':8} error replies: {c['errors']}")
    run = res["commands"].get("run")
    if run:
        lines.append(f"run: output {run['run_bytes_after'] / 1e6:.1f} MB ({run['run_bytes_after'] / info['bytes']:.2f}x "
                     f"the input), peak _work {run['peak_work_bytes'] / 1e6:.1f} MB "
                     f"({run['peak_work_bytes'] / info['bytes']:.3f}x the input), _work left {run['work_bytes_after']}; "
                     f"counted {res['check']['run_bytes_counted']} B, listed {res['check']['run_bytes_listed']} B")
        for area, a in run["reads_by_area"].items():
            lines.append(f"  run reads {area:24} {a['objects']:>5} objects {a['gets']:>6} GETs "
                         f"{a['bytes_read'] / 1e6:>9.1f} MB = {a['read_x']}x their size")
        for r in run["rereads"][:4]:
            lines.append(f"  read more than once: {r['key']} {r['gets']} GETs, {r['bytes_read'] / 1e6:.2f} MB of "
                         f"{(r['size'] or 0) / 1e6:.2f} MB")
    return "\n".join(lines)


def shuffle_pairs(m: int, r_exact: int, r: int, s: int, rounds: int) -> int:
    """(producer, bucket) pairs of exact_dedup and minhash_dedup's global steps for M spill files
    (one per part) and their partitions: exact_dedup scan M x Re and assign Re x M; minhash_dedup
    entries, cand, labels, members and assign M x R each, star and the components' files
    (2 + 2 x rounds) x R x R, meta M; its sweep the same with S partitions. A consumer reads each
    pair it consumes once; before, each pair was a file of its own."""
    return 2 * m * r_exact + 5 * m * r + 5 * m * s + (2 + 2 * rounds) * (r * r + s * s) + 2 * m


def shuffle_formula(m: int, r_exact: int, r: int, s: int, rounds: int) -> int:
    """Exchange files of the same steps (stages/dedup/exchange.py: one per producer and kind):
    exact_dedup scan M, assign Re; minhash_dedup meta, entries and cand M each, members, labels and
    assign R each, star and the components' files (2 + 2 x rounds) x R; its sweep the same with S."""
    return m + r_exact + 2 * (3 * m) + (5 + 2 * rounds) * (r + s)


def partitions_at(docs_exact: float, docs_minhash: float, parallelism: int) -> tuple[int, int, int]:
    """(Re, R, S) the dedup stages choose by default (stages/dedup/exact.py, near.py): at least the
    parallelism, else 4 M documents (exact) or 8 M band entries (MinHash, 18 bands) per partition;
    the sweep's 28 bands."""
    from stages.dedup.exact import ExactDedupConfig
    from stages.dedup.near import MinhashDedupConfig

    e, n = ExactDedupConfig(), MinhashDedupConfig()
    re_ = max(parallelism, math.ceil(docs_exact / e.partition_docs), 1)
    r = max(parallelism, math.ceil(docs_minhash * n.bands / n.partition_entries), 1)
    return re_, r, max(r, math.ceil(r * n.sweep_bands / n.bands))


def _shape(res: dict) -> tuple[int, int, int, int, int]:
    g = res.get("global_steps", {})
    mh = g.get("minhash_dedup", {})
    docs = res.get("docs_in", {})
    re_ = res.get("partitions") or max(res["workers"], math.ceil(docs.get("exact_dedup", 0) / 4e6), 1)
    return res["parts"], re_, mh.get("partitions", 0), mh.get("sweep_partitions", 0), mh.get("components_rounds", 1)


def projection(results: list[dict], nodes: tuple[int, ...] = (1, 10, 100), cores: int = 32) -> str:
    """Per input MB at each size, the exchange files counted against `shuffle_formula`, and 4.3 TB:
    requests outside the exchange files at the largest default run's rate per MB, plus the exchange
    files the formula gives there times the requests each took here."""
    lines = []
    for res in results:
        mb = res["input"]["bytes"] / 1e6
        run = res["commands"].get("run", {})
        counted = sum(v["files"] for v in run.get("shuffle_files", {}).values())
        m, re_, r, s_, rounds = _shape(res)
        lines.append(f"{mb:,.0f} MB, {m} parts, partitions exact {re_} minhash {r} sweep {s_}: exchange files "
                     f"counted {counted} (layout {layout(res)}), formula {shuffle_formula(m, re_, r, s_, rounds)} per producer "
                     f"and kind, {shuffle_pairs(m, re_, r, s_, rounds)} producer x bucket pairs; requests on them "
                     f"{sum(run.get('shuffle_requests', {}).values())}, run's other requests "
                     f"{run.get('total', 0) - sum(run.get('shuffle_requests', {}).values())}")
    default = [r for r in results if not r.get("split_bytes") and not r.get("partitions") and "run" in r["commands"]]
    if not default:
        return "\n".join(lines)
    default.sort(key=lambda r: r["input"]["bytes"])
    big = default[-1]
    mb = big["input"]["bytes"] / 1e6
    f = TARGET_MB / mb

    def other(c: dict) -> dict[str, int]:
        sh = c.get("shuffle_requests", {})
        return {k: v - sh.get(k, 0) for k, v in c["requests"].items()}

    lines.append(f"per input MB at {mb:,.0f} MB (outside the exchange files) and 4.3 TB at that rate:")
    for name, c in big["commands"].items():
        o = other(c)
        cls_a = sum(v for k, v in o.items() if k in ("PUT", "PART", "MPU_START", "MPU_COMPLETE", "COPY", "LIST"))
        lines.append(f"  {name:8} {sum(o.values()) / mb:7.2f} requests/MB ({cls_a / mb:.2f} PUT/COPY/LIST) -> "
                     f"{sum(o.values()) * f / 1e6:8.1f} M; read {c['bytes_read'] / 1e6 / mb:.2f} MB/MB -> "
                     f"{c['bytes_read'] * f / 1e12:.2f} TB; written {c['bytes_written'] / 1e6 / mb:.2f} MB/MB -> "
                     f"{c['bytes_written'] * f / 1e12:.2f} TB; peak _work {c['peak_work_bytes'] / 1e6 / mb:.3f} MB/MB -> "
                     f"{c['peak_work_bytes'] * f / 1e12:.2f} TB")
    if len(default) > 1:  # the margin between the two largest sizes: fixed costs (start-up, one-off files) drop out
        small = default[-2]
        dmb = mb - small["input"]["bytes"] / 1e6
        lines.append(f"at the margin, {small['input']['bytes'] / 1e6:,.0f} to {mb:,.0f} MB "
                     f"({small['parts']} to {big['parts']} parts), per input MB and 4.3 TB at that rate:")
        for name, c in big["commands"].items():
            c0 = small["commands"].get(name)
            if c0 is None:
                continue
            o, o0 = other(c), other(c0)
            d = {k: o.get(k, 0) - o0.get(k, 0) for k in set(o) | set(o0)}
            lines.append(f"  {name:8} {sum(d.values()) / dmb:7.2f} requests/MB (" + ", ".join(
                f"{k} {v / dmb:.2f}" for k, v in sorted(d.items()) if v) + f") -> {sum(d.values()) / dmb * TARGET_MB / 1e6:.1f} M; "
                f"read {(c['bytes_read'] - c0['bytes_read']) / 1e6 / dmb:.2f} MB/MB, written "
                f"{(c['bytes_written'] - c0['bytes_written']) / 1e6 / dmb:.2f} MB/MB")
    return "\n".join(lines + exchange_projection(results, big, nodes, cores))


PUTS = ("PUT", "PART", "MPU_START", "MPU_COMPLETE")  # a file's writing: once per file
READS = ("GET", "GET_RANGE", "HEAD")  # a consumer's reading: once per (producer, bucket) pair it reads
WORK_HOURS = 900  # CPU-hours of the 4.3 TB run on 32-core nodes (docs/scale.md): wall = 900 / (N x C) h
PREFIX_PUT, PREFIX_GET = 3500, 5500  # S3's requests per second per prefix


def layout(res: dict) -> str:
    """'per bucket' (a file per producer and bucket, the layout before) or 'per producer'."""
    sh = res["commands"].get("run", {}).get("shuffle_files", {})
    return "per bucket" if any(v["buckets"] for v in sh.values()) else "per producer"


def exchange_projection(results: list[dict], big: dict, nodes: tuple[int, ...], cores: int) -> list[str]:
    """The exchange files' requests at 4.3 TB: writes per file counted here times the files there,
    reads per (producer, bucket) pair counted here times the pairs there; and their rate per second
    if spread over the whole run on N nodes, against S3's per-prefix limits."""
    files = pairs = 0
    reqs: Counter = Counter()
    for r in results:
        run = r["commands"].get("run")
        if not run or not run.get("shuffle_files"):
            continue
        files += sum(v["files"] for v in run["shuffle_files"].values())
        pairs += shuffle_pairs(*_shape(r))
        reqs.update(run.get("shuffle_requests", {}))
    if not files:
        return []
    kind = layout(big)
    per_file = {k: v / files for k, v in reqs.items() if k not in READS}
    per_pair = {k: v / pairs for k, v in reqs.items() if k in READS}
    lines = [f"exchange files, layout {kind} ({files:,} files, {pairs:,} producer x bucket pairs, all runs here): "
             "per file " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_file.items())) +
             "; per pair read " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_pair.items()))]
    mb = big["input"]["bytes"] / 1e6
    docs = big.get("docs_in", {})
    d_exact = docs.get("exact_dedup", 0) / mb * TARGET_MB
    d_mh = big.get("global_steps", {}).get("minhash_dedup", {}).get("documents", 0) / mb * TARGET_MB
    m = 4300 * math.ceil(1e9 / (128 << 20))  # 4,300 files of 1 GB, each in parts of split_bytes (128 MiB)
    rounds = big.get("global_steps", {}).get("minhash_dedup", {}).get("components_rounds", 1)
    for n in nodes:
        re_, r, s_ = partitions_at(d_exact, d_mh, n * cores)
        np_ = shuffle_pairs(m, re_, r, s_, rounds)
        nf = np_ if kind == "per bucket" else shuffle_formula(m, re_, r, s_, rounds)
        put = nf * sum(per_file.get(k, 0) for k in PUTS)
        get = np_ * sum(per_pair.values())
        total = nf * sum(per_file.values()) + get
        secs = WORK_HOURS * 3600 / (n * cores)
        lines.append(f"4.3 TB on {n:>3} x {cores} cores: {m:,} parts, partitions {re_}/{r}/{s_}: {nf / 1e6:,.2f} M exchange "
                     f"files, {total / 1e6:,.0f} M requests on them: {put / 1e6:,.2f} M PUT ({put / secs:,.0f}/s over the "
                     f"run's {secs / 3600:.2f} h = {put / secs / PREFIX_PUT:.2f}x the per-prefix {PREFIX_PUT:,}/s), "
                     f"{get / 1e6:,.0f} M GET/HEAD ({get / secs:,.0f}/s = {get / secs / PREFIX_GET:.2f}x {PREFIX_GET:,}/s)")
    return lines


def _load(path: Path) -> dict:
    """A results file; the exchange files and their requests counted again from its run's request log."""
    res = json.loads(path.read_text())
    run = res["commands"].get("run")
    log = path.with_name(f"requests-{path.stem.removeprefix('objstore-')}-run.jsonl")
    if run is not None and log.exists():
        w = Window({}, None)
        w.log = [json.loads(line) for line in log.read_text().splitlines()]
        run["shuffle_requests"], run["shuffle_files"] = shuffle_requests(w), shuffle_files(w)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", nargs="+", default=["50MB", "200MB"], help="input sizes (crawl_scale.py's inputs)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor", default="processes", choices=["processes", "ray"])
    ap.add_argument("--inputs", type=Path, default=Path(crawl_scale.DEFAULT_WORK),
                    help="where crawl_scale.py keeps its inputs (read only here)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/objstore-counts"))
    ap.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=COMMANDS)
    ap.add_argument("--split-mb", type=float, help="variant: the source's split_bytes (default recipe: 128 MiB)")
    ap.add_argument("--partitions", type=int, help="variant: exact_dedup's and minhash_dedup's global-step partitions")
    ap.add_argument("--project", action="store_true",
                    help="print the projection of every objstore-*.json in --out (no runs)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if args.project:
        print(projection([_load(p) for p in sorted(out.glob("objstore-*.json"))]))
        return 0
    if str(out).startswith(str(ROOT)):
        raise SystemExit("--out must be outside the repository")
    out.mkdir(parents=True, exist_ok=True)
    results = []
    with CountingMoto() as server:
        for size in args.size:
            input_dir = args.inputs / f"input-{size}"
            if not (input_dir / "input.json").exists():  # build it in our own directory, never in --inputs
                input_dir = out / f"input-{size}"
                crawl_scale.build(input_dir, crawl_scale.parse_size(size), int(1000 * 1e6))
            info = json.loads((input_dir / "input.json").read_text())
            tag = size + (f"-split{args.split_mb:g}MB" if args.split_mb else "") + \
                (f"-p{args.partitions}" if args.partitions else "")
            res = measure_size(server, input_dir, info, tag, out, args.workers, args.executor, tuple(args.commands),
                               int(args.split_mb * 1e6) if args.split_mb else None, args.partitions)
            res["load"] = os.getloadavg()[0]
            (out / f"objstore-{tag}.json").write_text(json.dumps(res, indent=2))
            print(table(res), flush=True)
            results.append(res)
    print(projection(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
