"""What a load test measures on the server side: every process of a server (``serve --workers N`` runs a store
host and N workers below the command), their CPU seconds and memory (Linux ``/proc``), and one phase's figures
with the Little's-law floor of its mean latency.

Usage::

    before = tree_cpu_seconds(server.pid); ...; after = tree_cpu_seconds(server.pid)
    memory_mb(server.pid)   # {"server": {"rss_mb", "pss_mb"}, "store-host": {...}, "worker-123": {...}}
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any


def server_processes(root: int) -> list[int]:
    """``root`` and every process below it (the store host and the workers of ``serve --workers N``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def tree_cpu_seconds(root: int) -> dict[int, float]:
    """CPU seconds so far of each process of the server."""
    return {pid: cpu for pid in server_processes(root) if (cpu := process_cpu_seconds(pid)) is not None}


def memory_mb(root: int) -> dict[str, dict[str, float]]:
    """RSS and PSS (MB) of each process of the server, named by role: ``server`` (the one process, or the
    supervisor), ``store-host``, ``worker-<pid>``."""
    result = {}
    for pid in server_processes(root):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        fields = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in rollup[1:] if line.split()}
        role = "server"  # the one process, or the supervisor of `serve --workers N`
        if "store_host" in command:
            role = "store-host"
        elif "pipelines.serving.worker_app" in command:
            role = f"worker-{pid}"
        result[role] = {"rss_mb": round(fields.get("Rss", 0.0), 1), "pss_mb": round(fields.get("Pss", 0.0), 1)}
    return result


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(phase: Any, clients: int) -> dict:
    """The figures of one phase for ``--json``: req_s, p50_ms, p95_ms, errors, CPU per request over every server
    process, the Little's-law floor of the mean latency (``clients`` x CPU per request / cores), and the cores the
    load generator itself kept busy (``client_cpu_s``, when the phase has it)."""
    ms = sorted(x * 1000 for x in phase.latencies)
    done = len(ms)
    cores = len(os.sched_getaffinity(0))
    result = {
        "clients": clients,
        "seconds": round(phase.seconds, 1),
        "requests": done,
        "errors": len(phase.errors),
        "req_s": round(done / phase.seconds, 2) if phase.seconds else 0.0,
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(ms[min(done - 1, round(0.95 * (done - 1)))], 1) if ms else None,
        "mean_ms": round(statistics.fmean(ms), 1) if ms else None,
        "cores": cores,
        "answers_by_worker": dict(sorted(getattr(phase, "by_worker", {}).items())),
    }
    if phase.server_cpu_s is not None and done:
        cpu_ms = 1000 * phase.server_cpu_s / done
        floor = clients * cpu_ms / cores
        result |= {
            "server_cpu_ms_per_request": round(cpu_ms, 1),
            "server_cores_busy": round(phase.server_cpu_s / phase.seconds, 2),
            "little_floor_ms": round(floor, 1),
            "p95_over_floor": round(result["p95_ms"] / floor, 2) if floor else None,
        }
    if getattr(phase, "client_cpu_s", None) is not None and phase.seconds:
        # The load generator runs on the same cores: what it takes, the server cannot have.
        result["load_generator_cores_busy"] = round(phase.client_cpu_s / phase.seconds, 2)
    return result
