"""A real multi-node Ray cluster for tests: `ray start` processes with their own --temp-dir, working
directory and free ports, stopped by killing exactly the processes that belong to them (never
`ray stop`, which would stop every Ray on the machine)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ports() -> list[str]:
    lo = free_port()
    return ["--node-manager-port", str(free_port()), "--object-manager-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(free_port()),
            "--runtime-env-agent-port", str(free_port()), "--metrics-export-port", str(free_port()),
            "--min-worker-port", str(lo), "--max-worker-port", str(lo + 40)]


@dataclass
class RayCluster:
    """Head + workers started with `ray start --block`, each in its own temp dir and working dir."""

    env: dict[str, str]
    nodes: int = 2
    cpus: int = 1
    procs: list[subprocess.Popen] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    port: int = 0
    dashboard_port: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def dashboard(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def start(self) -> "RayCluster":
        import uuid

        self.port, self.dashboard_port = free_port(), free_port()
        # Ray >= 2.5x token auth: a head started where ~/.ray/auth_token exists requires the token,
        # and a joining node does not turn token mode on by itself ("InvalidAuthToken"). Every
        # process of the cluster (nodes, drivers, `ray job submit`) gets the same mode and token.
        self.token_dir = tempfile.mkdtemp(prefix="rctok", dir="/tmp")
        token = os.path.join(self.token_dir, "auth_token")
        Path(token).write_text(uuid.uuid4().hex)
        self.env = dict(self.env, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=token)
        for i in range(self.nodes):
            self._start_node(head=i == 0)
        self._wait_nodes(self.nodes)
        return self

    def add_node(self) -> None:
        """Start a worker node to replace a killed one; wait until the cluster has its size again."""
        self._start_node(head=False)
        self._wait_nodes(self.nodes)

    def _start_node(self, head: bool) -> None:
        i = len(self.dirs)
        # short paths: Ray's socket names must fit in 107 bytes
        tmp = tempfile.mkdtemp(prefix=f"rc{i}", dir="/tmp")
        work = os.path.join(tmp, "cwd")
        os.makedirs(work)
        self.dirs.append(tmp)
        args = [RAY, "start", "--block", "--temp-dir", os.path.join(tmp, "t"), "--num-cpus", str(self.cpus),
                "--disable-usage-stats", "--node-ip-address", "127.0.0.1"] + _ports()
        if head:
            args += ["--head", "--port", str(self.port), "--include-dashboard", "true",
                     "--dashboard-host", "127.0.0.1", "--dashboard-port", str(self.dashboard_port),
                     "--ray-client-server-port", str(free_port())]
        else:
            args += ["--address", self.address]
        log = open(os.path.join(tmp, "ray-start.log"), "w")
        self.procs.append(subprocess.Popen(args, cwd=work, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))
        if head:
            self._wait_head()

    def _wait_head(self, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.procs[0].poll() is not None:
                raise RuntimeError("ray head exited: " + self.log(0))
            time.sleep(0.3)
        raise RuntimeError("ray head did not start: " + self.log(0))

    def _alive(self) -> int:
        code = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
                "print(len([x for x in ray.nodes() if x['Alive']]))")
        out = subprocess.run([sys.executable, "-c", code, self.address], env=self.env, capture_output=True,
                             text=True, timeout=120)
        return int(out.stdout.strip() or 0)

    def _wait_nodes(self, n: int, timeout: float = 180) -> None:
        code = ("import ray, time, sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
                "n=int(sys.argv[2]); t=time.time()+150\n"
                "while time.time()<t and len([x for x in ray.nodes() if x['Alive']])<n: time.sleep(0.5)\n"
                "print(len([x for x in ray.nodes() if x['Alive']]))")
        out = subprocess.run([sys.executable, "-c", code, self.address, str(n)], env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        if out.stdout.strip() != str(n):
            raise RuntimeError(f"{out.stdout.strip()} of {n} nodes alive: {out.stderr[-2000:]}\n"
                               + "\n".join(self.log(i) for i in range(len(self.dirs))))

    def log(self, i: int) -> str:
        try:
            return Path(self.dirs[i], "ray-start.log").read_text()[-2000:]
        except OSError:
            return ""

    def pids(self, node: int | None = None) -> list[int]:
        """Every process of this cluster (or of one node): the node's `ray start` leads a session of
        its own, and its processes (GCS, raylet, workers) stay in it; or their command line names the
        node's temp dir."""
        procs = self.procs if node is None else [self.procs[node]]
        dirs = self.dirs if node is None else [self.dirs[node]]
        sids = {p.pid for p in procs}
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                stat = Path("/proc", d, "stat").read_text()
                sid = int(stat[stat.rindex(")") + 2:].split()[3])
                cmd = Path("/proc", d, "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except (OSError, ValueError, IndexError):
                continue
            if sid in sids or any(f"{x}/t" in cmd for x in dirs):
                found.append(int(d))
        return found

    def kill_node(self, node: int) -> None:
        for pid in self.pids(node):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 20
        while time.time() < deadline and any(p.poll() is None for p in self.procs):
            time.sleep(0.2)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        import shutil

        for d in self.dirs + [getattr(self, "token_dir", "")]:
            if d:
                shutil.rmtree(d, ignore_errors=True)
