"""scripts/lab/evaluation/server_metrics.py and scripts/lab/load_test.py's Phase: the figures of one load phase."""

from __future__ import annotations

import os

from evaluation.server_metrics import summary
from tests.script_modules import load_script

load_test = load_script("load_test")


def phase(**extra: object) -> object:
    return load_test.Phase("queries only", latencies=[0.1, 0.2, 0.3, 0.4], seconds=2.0, **extra)


def test_summary_has_cpu_floor_and_load_generator_share() -> None:
    result = summary(phase(server_cpu_s=0.4, client_cpu_s=0.1), clients=4)
    cores = len(os.sched_getaffinity(0))
    assert result["requests"] == 4
    assert result["req_s"] == 2.0
    assert result["server_cpu_ms_per_request"] == 100.0
    assert result["little_floor_ms"] == round(4 * 100.0 / cores, 1)
    assert result["load_generator_cores_busy"] == 0.05


def test_summary_without_cpu_figures_leaves_them_out() -> None:
    result = summary(phase(), clients=4)
    assert "server_cpu_ms_per_request" not in result
    assert "load_generator_cores_busy" not in result


def test_phase_report_names_the_load_generator_share() -> None:
    line = phase(server_cpu_s=0.4, client_cpu_s=0.1).report(clients=4)
    assert "load generator 0.05 cores" in line
