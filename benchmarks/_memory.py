"""This process's memory as /proc/self/status reports it, for the memory benchmarks."""
from __future__ import annotations


def status_bytes(field: str) -> int:
    """A /proc/self/status field in bytes (VmRSS: resident now; VmHWM: the peak); 0 if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0
