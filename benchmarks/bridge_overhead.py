"""Cost of the model bridge in a model-calling ``bench run``: per trial and per model call.

A fake ACP agent (tests/doubles/fake_acp_agent.py, its install a cached image
layer) makes 1 or ``--calls`` model calls through the job's gateway to the
fake upstream (tests/doubles/fake_model_server.py). Every model call opens a
new connection, so the per-call figure includes the bridge's connection setup:

    per call = (wall(N calls) - wall(1 call)) / (N - 1)

``--before SRC`` runs the same series with another checkout's ``src/`` (e.g.
``git archive <commit> src`` unpacked somewhere) interleaved with ``--after``
(default: this checkout), so both see the same machine load. ``--sandbox remote-docker`` measures the
exec-stream transport (needs ``scripts/docker-engine.sh --remote``).

    .venv/bin/python benchmarks/bridge_overhead.py [--repeats 5] [--calls 40] [--before /tmp/old/src]
        [--after /tmp/new/src] [--sandbox docker|remote-docker]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.doubles.fake_model_server import FakeModelServer  # noqa: E402
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file  # noqa: E402
from tests.taskgen import make_task  # noqa: E402


def bench_run(src: Path, tasks: Path, jobs: Path, agent: Path, calls: int, sandbox: str, upstream: str) -> float:
    steps = [{"op": "ask_model", "api": "openai"}] * calls + [
        {"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "42"}}]
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream}
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchflow.cli", "run", str(tasks), "-s", sandbox,
                           "--jobs-dir", str(jobs), "--fresh", "-q", "-a", str(agent), "-m", "gpt-4o-mini",
                           "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}"],
                          env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"bench run failed ({src}):\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--before", type=Path, help="src/ of the checkout to compare against")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="src/ measured (default: this checkout)")
    args = parser.parse_args()
    sources = {"after": args.after.resolve()}
    if args.before:
        sources = {"before": args.before.resolve(), **sources}
    with tempfile.TemporaryDirectory() as tmpdir, FakeModelServer() as upstream:
        tmp = Path(tmpdir)
        make_task(tmp / "tasks", "ask", dockerfile=PYTHON_IMAGE, network="no-network",
                  test="echo 1 > /logs/verifier/reward.txt")
        agent = fake_agent_file(tmp)
        url = upstream.url + "/v1"
        walls: dict[tuple[str, int], list[float]] = {}
        for label, src in sources.items():  # warm-up: image and agent layer cached
            bench_run(src, tmp / "tasks", tmp / "jobs", agent, 1, args.sandbox, url)
        for _ in range(args.repeats):
            for label, src in sources.items():
                for calls in (1, args.calls):
                    walls.setdefault((label, calls), []).append(
                        bench_run(src, tmp / "tasks", tmp / "jobs", agent, calls, args.sandbox, url))
    print(f"sandbox {args.sandbox}, median of {args.repeats} (interleaved)")
    print(f"{'src':<15} {'1-call trial s':>15} {f'{args.calls}-call trial s':>16} {'per call ms':>12}")
    for label in sources:
        one = statistics.median(walls[(label, 1)])
        many = statistics.median(walls[(label, args.calls)])
        print(f"{label:<15} {one:15.2f} {many:16.2f} {(many - one) / (args.calls - 1) * 1000:12.1f}")


if __name__ == "__main__":
    main()
