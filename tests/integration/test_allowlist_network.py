"""allowlist networking on Docker: the sandbox reaches only the named hosts, through the trial's
egress proxy, and every request is recorded in the trial's egress.jsonl."""

from __future__ import annotations

import http.server
import json
import secrets
import threading
from pathlib import Path

import pytest

from tests.conftest import run_bench

pytestmark = pytest.mark.docker

SOLVE = r'''#!/bin/sh
python3 - <<'PY'
import socket, urllib.error, urllib.request
out = dict()
out["allowed"] = urllib.request.urlopen("http://allowed.test:{allowed}/", timeout=10).read().decode()
try:
    urllib.request.urlopen("http://denied.test:{denied}/", timeout=10)
    out["denied"] = "answered"
except urllib.error.HTTPError as exc:
    out["denied"] = exc.code
proxy = urllib.request.getproxies()["http"].rsplit(":", 1)
for name, port in (("allowed.test", {allowed}), ("denied.test", {denied})):
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=10)
    s.sendall(f"CONNECT {{name}}:{{port}} HTTP/1.1\r\nHost: {{name}}\r\n\r\n".encode())
    status = s.recv(4096).split(b" ")[1].decode()
    if status == "200":
        s.sendall(b"GET /tunnel HTTP/1.0\r\n\r\n")
        status += " " + b"".join(iter(lambda: s.recv(4096), b"")).split(b"\r\n\r\n", 1)[1].decode()
    out["connect_" + name] = status
try:
    socket.create_connection(("127.0.0.1", {allowed}), timeout=3).close()
    out["direct"] = "reached"
except OSError:
    out["direct"] = "unreachable"
import json; open("/app/out.json", "w").write(json.dumps(out))
PY
'''
TEST = r'''#!/bin/sh
mkdir -p /logs/verifier
python3 - <<'PY'
import json
out = json.load(open("/app/out.json"))
ok = (out == {{"allowed": "{token}", "denied": 403, "connect_allowed.test": "200 {token}",
               "connect_denied.test": "403", "direct": "unreachable"}})
open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")
print(out)
PY
'''


class Server:
    """A loopback HTTP server standing in for a host on the internet; it counts what reaches it."""

    def __init__(self, body: str) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


def test_only_the_allowed_host_answers_and_every_request_is_recorded(tmp_path: Path) -> None:
    token = secrets.token_hex(8)
    allowed, denied = Server(token), Server("must never be reached")
    try:
        task = tmp_path / "tasks" / "egress"
        for sub in ("environment", "oracle", "verifier"):
            (task / sub).mkdir(parents=True)
        (task / "task.md").write_text(
            "---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 60}\n"
            "sandbox: {network_mode: allowlist, allowed_hosts: [allowed.test]}\n---\n\n## prompt\n\nFetch.\n")
        (task / "environment" / "Dockerfile").write_text("FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n")
        (task / "oracle" / "solve.sh").write_text(SOLVE.format(allowed=allowed.port, denied=denied.port))
        (task / "verifier" / "test.sh").write_text(TEST.format(token=token))
        jobs = tmp_path / "jobs"
        # the proxy's resolver maps both names to this machine's loopback: only the name decides
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                         env={"BENCHFLOW_EGRESS_RESOLVE": "allowed.test=127.0.0.1,denied.test=127.0.0.1"})
        assert done.returncode == 0, done.stderr
        trial = next(jobs.glob("*/egress__*"))
        result = json.loads((trial / "result.json").read_text())
        stdout = (trial / "verifier" / "test-stdout.txt").read_text()
        assert result["rewards"] == {"reward": 1.0}, (result.get("error"), stdout)
        assert denied.hits == [] and sorted(allowed.hits) == ["/", "/tunnel"]
        log = [json.loads(line) for line in (trial / "egress.jsonl").read_text().splitlines()]
        seen = sorted((e["method"], e["host"], e["port"], e["allowed"], e["status"]) for e in log)
        assert seen == sorted([("GET", "allowed.test", allowed.port, True, 200),
                               ("GET", "denied.test", denied.port, False, 403),
                               ("CONNECT", "allowed.test", allowed.port, True, 200),
                               ("CONNECT", "denied.test", denied.port, False, 403)])
        network = json.loads((trial / "network.json").read_text())
        assert network["network_mode"] == {"asked": "allowlist", "granted": "allowlist"}
        assert network["allowed_hosts"] == ["allowed.test"] and network["cloud_metadata"]["blocked"] is True
    finally:
        allowed.close()
        denied.close()


@pytest.mark.parametrize("flags, expected", [
    ((), {"blocked": True, "enforced_by": "no network: the sandbox has only loopback (public runs as no-network "
                                          "on this engine, which has no bridge network)"}),
    (("--allow-cloud-metadata",), {"blocked": False, "opt_out": "--allow-cloud-metadata"}),
], ids=["block-proven", "opt-out"])
def test_each_trial_records_its_cloud_metadata_verdict(tmp_path: Path, flags: tuple[str, ...],
                                                        expected: dict) -> None:
    import docker

    if any(n.name == "bridge" for n in docker.from_env().networks.list()):
        pytest.skip("this engine has a bridge network: public is really open here")
    from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

    make_task(tmp_path / "tasks", "open", solve=WRITE_HELLO, test=PASS_IF_HELLO, network="public")
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), *flags)
    assert done.returncode == 0, done.stderr
    trial = next(jobs.glob("*/open__*"))
    assert json.loads((trial / "result.json").read_text())["rewards"] == {"reward": 1.0}
    network = json.loads((trial / "network.json").read_text())
    assert network == {"network_mode": {"asked": "public", "granted": "no-network"}, "cloud_metadata": expected}
