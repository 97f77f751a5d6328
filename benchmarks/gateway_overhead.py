"""Latency the model gateway adds per call, and its memory during a 32-trial job.

Baseline and measured path run in the same process, interleaved:

- direct:  client → fake model server (loopback)
- gateway: client → gateway (per-trial key, counting, pricing, recording) → fake model server

The fake server (tests/doubles/fake_model_server.py) and the gateway each run
in a process of their own, so the gateway's resident memory can be read from
/proc. Non-streamed calls are timed to the last byte; streamed calls to the
first byte of the body (time to first byte). At concurrency 32 each of the
32 workers is a trial of its own, as in a 32-trial job.

    .venv/bin/python benchmarks/gateway_overhead.py [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "doubles" / "fake_model_server.py"
N_TRIALS = 32
REAL_KEY = "sk-proj-BENCHMARKrealKEY0123456789abcdef"


async def serve_gateway(upstream_url: str, out_dir: str) -> None:
    """Child process: a gateway with 32 trials; prints their URLs and keys, runs until stdin closes."""
    from benchflow.gateway import Gateway, GatewayConfig, Upstreams

    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env({"OPENAI_API_KEY": REAL_KEY,
                                                             "OPENAI_BASE_URL": upstream_url + "/v1"}), port=0))
    started = time.perf_counter()
    await gw.start()
    start_ms = (time.perf_counter() - started) * 1000
    routes = [gw.register_trial(f"bench__{i:02d}", Path(out_dir) / f"t{i:02d}" / "llm_trajectory.jsonl")
              for i in range(N_TRIALS)]
    print(json.dumps({"start_ms": start_ms, "trials": [{"url": r.agent_env()["OPENAI_BASE_URL"], "key": r.key}
                                                       for r in routes]}), flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await gw.stop()


def cpu_sec(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of ``pid`` in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def one_call(client: httpx.AsyncClient, url: str, key: str, stream: bool) -> float:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    started = time.perf_counter()
    async with client.stream("POST", url + "/chat/completions", json=body,
                             headers={"authorization": f"Bearer {key}"}) as response:
        first_byte: float | None = None
        async for _ in response.aiter_raw():
            if first_byte is None:
                first_byte = time.perf_counter() - started
        elapsed = first_byte if stream else time.perf_counter() - started
        assert response.status_code == 200, response.status_code
    return elapsed * 1000


async def run(targets: list[tuple[str, str]], stream: bool, concurrency: int, calls: int) -> list[float]:
    """``calls`` calls spread over ``concurrency`` workers; worker i uses target i."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        for url, key in targets[:concurrency]:  # warm connections
            await one_call(client, url, key, stream)
        per_worker = max(1, calls // concurrency)

        async def worker(i: int) -> list[float]:
            url, key = targets[i % len(targets)]
            return [await one_call(client, url, key, stream) for _ in range(per_worker)]

        results = await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return [t for r in results for t in r]


def start_child(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)


async def main(calls: int, rounds: int) -> None:
    fake = start_child([str(FAKE)])
    gateway = None
    try:
        upstream = fake.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as out:
            gateway = start_child([__file__, "--serve-gateway", upstream, "--out", out])
            info = json.loads(gateway.stdout.readline())
            idle_rss, _ = rss_mb(gateway.pid)
            direct = [(upstream + "/v1", REAL_KEY)] * N_TRIALS
            via = [(t["url"], t["key"]) for t in info["trials"]]
            rows = []
            for stream in (False, True):
                for concurrency in (1, 32):
                    samples: dict[str, list[float]] = {"direct": [], "gateway": []}
                    cpu = 0.0
                    for _ in range(rounds):  # interleave so drift hits both alike
                        samples["direct"] += await run(direct, stream, concurrency, calls)
                        before = cpu_sec(gateway.pid)
                        samples["gateway"] += await run(via, stream, concurrency, calls)
                        cpu += cpu_sec(gateway.pid) - before
                    rows.append((stream, concurrency, samples, cpu * 1000 / len(samples["gateway"])))
            rss, peak = rss_mb(gateway.pid)
            gateway.stdin.close()
            gateway.wait(timeout=30)
            n_lines = sum(1 for p in Path(out).rglob("llm_trajectory.jsonl") for _ in p.open())
    finally:
        for child in (gateway, fake):
            if child is not None and child.poll() is None:
                child.terminate()
                child.wait(timeout=10)
    print(f"gateway start: {info['start_ms']:.0f} ms; trials: {N_TRIALS}; calls recorded: {n_lines}")
    report(rows)
    print(f"gateway memory: {idle_rss:.1f} MB idle with {N_TRIALS} trials registered, "
          f"{rss:.1f} MB after the load, {peak:.1f} MB peak")


def report(rows: list) -> None:
    """The latency table: direct vs through the gateway, per mode and concurrency."""
    print(f"{'mode':<10}{'conc':>5}{'n':>6}{'direct p50':>12}{'gateway p50':>13}{'added p50':>11}"
          f"{'direct p90':>12}{'gateway p90':>13}{'ratio p50':>11}{'gw CPU/call':>13}")
    for stream, concurrency, s, cpu_ms in rows:
        d50, g50 = statistics.median(s["direct"]), statistics.median(s["gateway"])
        d90 = statistics.quantiles(s["direct"], n=10)[-1]
        g90 = statistics.quantiles(s["gateway"], n=10)[-1]
        mode = "ttfb" if stream else "full"
        print(f"{mode:<10}{concurrency:>5}{len(s['gateway']):>6}{d50:>10.2f}ms{g50:>11.2f}ms{g50 - d50:>9.2f}ms"
              f"{d90:>10.2f}ms{g90:>11.2f}ms{g50 / d50:>10.2f}x{cpu_ms:>11.2f}ms")
    load = os.getloadavg()[0]
    print(f"(machine: {os.cpu_count()} CPUs shared by client, gateway and fake server; load average {load:.1f}."
          " 'gw CPU/call' is the gateway process's own CPU time per call: the latency it adds on an idle core)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=320, help="calls per configuration and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per configuration")
    parser.add_argument("--serve-gateway", metavar="UPSTREAM_URL", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_gateway:
        asyncio.run(serve_gateway(args.serve_gateway, args.out))
    else:
        asyncio.run(main(args.calls, args.rounds))
