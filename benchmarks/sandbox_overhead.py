"""Sandbox overhead: our backends against the raw Docker CLI floor, in one run.

One round = start a container, run 3 commands, copy 1 MB in, remove it; the
image is cached. The floor does it by hand with the ``docker`` CLI
(``docker run -d`` + 3 x ``docker exec`` + ``docker cp`` + ``docker rm -f``);
``docker`` does it through our backend (Engine API; its start also creates
the sandbox user and /logs in one exec); ``local`` through the namespace
backend when it is part of this build. Rounds are interleaved and the median
is reported with its ratio to the floor.

Targets: docker <= 1.0x the floor, local <= 0.3x.

Usage: .venv/bin/python benchmarks/sandbox_overhead.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

IMAGE = "debian:bookworm-slim"
COMMANDS = (["true"], ["echo", "hello"], ["sh", "-c", "ls / > /dev/null"])


def floor_round(payload: Path) -> None:
    def docker(*args: str) -> str:
        return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout.strip()

    container = docker("run", "-d", "--init", "--network", "none", "--label", "benchflow.bench=floor",
                       IMAGE, "sleep", "infinity")
    try:
        for cmd in COMMANDS:
            docker("exec", container, *cmd)
        docker("cp", str(payload), f"{container}:/tmp/payload.bin")
    finally:
        docker("rm", "-f", container)


async def backend_round(name: str, payload: Path, env_dir: Path) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    if name == "docker":
        spec = SandboxSpec(name="overhead", environment_dir=None, cache_key="overhead", image=IMAGE,
                           network_mode="no-network")
    else:
        spec = SandboxSpec(name="overhead", environment_dir=env_dir, cache_key="overhead",
                           network_mode="no-network")
    box = get_backend(name).create(spec)
    try:
        await box.start()
        for cmd in COMMANDS:
            result = await box.exec(list(cmd))
            assert result.return_code == 0, result.stderr
        await box.put(payload, "/tmp/payload.bin")
    finally:
        await box.stop()


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    variants = ["floor", "docker"]
    if importlib.util.find_spec("benchflow.sandbox.local") is not None:
        from benchflow.sandbox import get_backend

        ok, reason = get_backend("local").available()
        if ok:
            variants.append("local")
        else:
            print(f"local skipped: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        payload = Path(tmp) / "payload.bin"
        payload.write_bytes(os.urandom(1 << 20))
        env_dir = Path(tmp) / "environment"
        env_dir.mkdir()
        (env_dir / "Dockerfile").write_text(f"FROM {IMAGE}\nWORKDIR /app\n")
        loop = asyncio.new_event_loop()
        run = {"floor": lambda: floor_round(payload),
               "docker": lambda: loop.run_until_complete(backend_round("docker", payload, env_dir)),
               "local": lambda: loop.run_until_complete(backend_round("local", payload, env_dir))}
        for name in variants:  # warm-up: image cache, imports, connection pools, local layer
            run[name]()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name in variants:
                times[name].append(timed(run[name]))
        loop.close()
    floor = statistics.median(times["floor"])
    targets = {"floor": "", "docker": "<= 1.00x", "local": "<= 0.30x"}
    print(f"{'variant':<8} {'median s':>9} {'min s':>7} {'max s':>7} {'x floor':>8}  target")
    for name in variants:
        values = times[name]
        median = statistics.median(values)
        print(f"{name:<8} {median:9.3f} {min(values):7.3f} {max(values):7.3f} {median / floor:7.2f}x  {targets[name]}")
    print(f"({args.rounds} interleaved rounds after one warm-up each; round = start, 3 execs, 1 MB copy in, remove)")


if __name__ == "__main__":
    main()
