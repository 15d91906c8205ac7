"""No call leaves the machine: the real server (``adaptive-retrieval serve``, a subprocess) runs under ``strace``,
idles, answers a query and renders ``GET /diagrams/query.svg`` (mermaid-cli driving chromium); the trace of every
``connect``/``sendto``/``sendmsg`` of the server and its children shows no DNS lookup, no TCP connection and no
datagram to an address beyond loopback.

Measured before: an idle server looked up ``mobile.events.data.microsoft.com`` (ONNX Runtime's telemetry, at
``import onnxruntime``) and chromium looked up Google's update, account and sync hosts. Chromium still *connects*
a UDP socket to ``2001:4860:4860::8888`` port 443 without sending anything (its IPv6 reachability check asks the
kernel for a route that way); such a socket is reported, and must carry no data.

Skipped with the reason when ``strace`` is missing or cannot trace here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from processes import stop

REPO = Path(__file__).resolve().parents[2]
STRACE = shutil.which("strace") or "/usr/bin/strace"
CALL = re.compile(
    r"^(?P<pid>\d+)\s+(?P<call>connect|sendto|sendmsg|sendmmsg)\((?P<fd>\d+)<(?P<sock>[^>]*)>, (?P<rest>.*)$"
)
ADDRESS = re.compile(r'(?:inet_addr|inet_pton\(AF_INET6,)\s*\(?"(?P<ip>[^"]+)"')
PORT = re.compile(r"sin6?_port=htons\((?P<port>\d+)\)")


def _strace_missing() -> str | None:
    if not Path(STRACE).exists():
        return "strace is not installed (scripts/setup installs it with apt-get when run as root)"
    probe = subprocess.run([STRACE, "-f", "-qq", "-e", "trace=connect", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip()[:200]}"
    return None


def _loopback(ip: str) -> bool:
    return ip.startswith("127.") or ip in ("::1", "0.0.0.0", "::") or ip.startswith("::ffff:127.")


def outbound(trace: str) -> dict[str, list[str]]:
    """The trace's network calls beyond loopback: ``dns`` (anything to port 53), ``tcp`` (connects), ``sent``
    (data to an address beyond loopback, or on a UDP socket connected to one), ``route_probes`` (UDP sockets
    connected beyond loopback that never sent anything). A send on a connected socket names no address: it is
    charged to the last connect on that file descriptor, which errs on the side of counting it."""
    found: dict[str, list[str]] = {"dns": [], "tcp": [], "sent": [], "route_probes": []}
    probes: dict[str, str] = {}  # fd -> the connect of a UDP socket to an address beyond loopback
    for line in trace.splitlines():
        match = CALL.match(line)
        if match is None or match["sock"].startswith(("UNIX", "NETLINK")):
            continue
        ip, port, fd = ADDRESS.search(match["rest"]), PORT.search(match["rest"]), match["fd"]
        if port and port["port"] == "53":
            found["dns"].append(line)
        elif match["call"] == "connect":
            probes.pop(fd, None)
            if ip and not _loopback(ip["ip"]):
                if match["sock"].startswith("UDP"):
                    probes[fd] = line
                else:
                    found["tcp"].append(line)
        elif (ip and not _loopback(ip["ip"])) or (not ip and fd in probes):
            found["sent"] += [probes.pop(fd, ""), line] if not ip else [line]
    found["route_probes"] = list(probes.values())
    return found


def test_outbound_parser() -> None:
    trace = "\n".join(
        [
            '1 connect(8<UDP:[1]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.53")}, 16) = 0',
            '2 connect(9<TCP:[2]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("20.1.2.3")}, 16) = 0',
            '3 connect(9<TCP:[3]>, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
            "4 connect(5<UDPv6:[7]>, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), "
            'inet_pton(AF_INET6, "2001:4860:4860::8888", &sin6_addr), sin6_scope_id=0}, 28) = 0',
            "5 sendto(6<NETLINK:[ROUTE:5]>, ...) = 20",
        ]
    )
    found = outbound(trace)
    assert [len(found[k]) for k in ("dns", "tcp", "sent", "route_probes")] == [1, 1, 0, 1], found
    assert outbound(trace + '\n4 sendto(5<UDPv6:[7]>, "x", 1, 0, NULL, 0) = 1')["sent"], "a used probe is traffic"


def test_entry_points_turn_onnx_runtime_telemetry_off_before_importing_it() -> None:
    code = (
        "import os, sys\n"
        "import adaptive_retrieval.pipelines.cli.main, adaptive_retrieval.pipelines.serving.wrapper_support\n"
        "import onnxruntime\n"
        "print(os.environ.get('ORT_DISABLE_TELEMETRY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "1", done.stdout
    env["ORT_DISABLE_TELEMETRY"] = "0"  # the user's opt-in is kept
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "0", done.stdout


def _stop_traced(tracer: subprocess.Popen) -> str:
    """Stop the server under ``strace`` with Ctrl-C (SIGINT to the server itself: strace, interrupted, would only
    detach and leave it running); strace exits with it."""
    children = Path(f"/proc/{tracer.pid}/task/{tracer.pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        os.kill(int(pid), signal.SIGINT)
    try:
        return tracer.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        return stop(tracer)


@pytest.mark.skipif(bool(_strace_missing()), reason=_strace_missing() or "")
def test_an_idle_server_and_a_diagram_make_no_outbound_call(tmp_path: Path) -> None:
    from adaptive_retrieval.pipelines.serving.app import free_port

    port, trace = free_port(), tmp_path / "strace.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADAPTIVE_", "ORT_", "HAYSTACK_TELEMETRY"))}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    cli = str(Path(sys.executable).with_name("adaptive-retrieval"))
    command = [STRACE, "-f", "-yy", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(trace)]
    server = subprocess.Popen(
        [*command, cli, "serve", "--store", str(tmp_path / "qdrant"), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if len(httpx.get(f"{url}/status", timeout=5).json().get("pipelines", [])) == 3:
                    break
            except (httpx.HTTPError, ValueError):
                time.sleep(0.5)
        time.sleep(20)  # idle: ONNX Runtime's telemetry looked up its host within seconds of start-up
        assert httpx.post(f"{url}/query/run", json={"query": "anything"}, timeout=120).status_code == 200
        svg = httpx.get(f"{url}/diagrams/query.svg", timeout=180)
        assert svg.status_code in (200, 503), svg.text[:300]  # 503: the renderer is not installed here
    finally:
        output = _stop_traced(server)
    found = outbound(trace.read_text())
    print({k: len(v) for k, v in found.items()}, *found["route_probes"], sep="\n")
    assert not found["dns"] and not found["tcp"] and not found["sent"], (found, output[-2000:])
