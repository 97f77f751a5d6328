"""Time from sandbox ready to a real agent's first model call, cached agent layer vs cold install.

Each agent solves the bundled hello task (``bench run`` of ``benchflow.demo`` hello-world,
``--ca-bundle host``) against its scripted provider (tests/doubles/scripted_*.py), as the
``agents_e2e`` tests do. From the trial's files:

    setup           timing.json environment_setup: the sandbox built and started, the agent's
                    layer included (a cold install is here)
    ready→call      first request in llm_trajectory.jsonl minus (started_at + setup): launch,
                    ACP initialize/session/new/model selection, the agent's own start-up
    start→call      first request minus started_at: what a user waits for

``cached`` runs start from the agent's image layer (built by a warm-up run); ``cold``
runs pass ``--fresh-install`` (a layer of its own, so the install runs from the registry;
the benchmark removes that layer afterwards).
The baseline, run in the same process, is the scripted fake ACP agent
(tests/doubles/fake_acp_agent.py) from its cached layer asking the model once: the
ratio column is start→call over the baseline's.

    .venv/bin/python benchmarks/agent_overhead.py [--agents claude-agent-acp,codex-acp,gemini]
        [--repeats 3] [--cold-repeats 1] [--no-cold]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchflow.agents.registry import get_agent_config
from benchflow.demo import HELLO_WORLD
from tests.agents_e2e.test_builtin_agents_e2e import PROVIDERS
from tests.integration.test_agent_pipeline import fake_agent_file

DEFAULT_AGENTS = "claude-agent-acp,codex-acp,gemini,qwen-code,opencode,deepagents"


def one_trial(agent: str, api: str, jobs: Path, *extra: str) -> dict[str, float]:
    """Run the hello task once; the trial's setup, ready→call and start→call seconds."""
    provider = PROVIDERS[api]
    with provider.server() as upstream:
        done = subprocess.run([sys.executable, "-m", "benchflow.cli", "run", str(HELLO_WORLD), "-s", "docker",
                               "--jobs-dir", str(jobs), "--fresh", "-q", "-a", agent, "-m", provider.model,
                               "--ca-bundle", "host", "--retry-attempts", "0", *extra],
                              env={**os.environ, **provider.env(upstream.url)}, capture_output=True, text=True, check=False)
    newest = max(p for p in jobs.iterdir() if p.is_dir())
    trial = next(newest.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    if done.returncode != 0 or (result.get("rewards") or {}).get("reward") != 1.0:
        raise SystemExit(f"{agent}: the hello task was not solved ({result.get('error')}):\n{done.stderr[-1500:]}")
    first = json.loads((trial / "trajectory" / "llm_trajectory.jsonl").read_text().splitlines()[0])
    called = dt.datetime.fromisoformat(first["request"]["timestamp"])
    started = dt.datetime.fromisoformat(result["started_at"]).astimezone()  # written in local time
    setup = float(result["timing"]["environment_setup"])
    start_to_call = (called - started).total_seconds()
    return {"setup": setup, "ready": start_to_call - setup, "start": start_to_call}


def cold_trial(agent: str, name: str, api: str, jobs: Path) -> dict[str, float]:
    """One ``--fresh-install`` trial; the layer it built (a new image, ~1 GB) is removed afterwards."""
    import docker

    client = docker.from_env()
    repository = f"benchflow/hello-world-{name}"
    before = {image.id for image in client.images.list(name=repository)}
    try:
        return one_trial(agent, api, jobs, "--fresh-install")
    finally:
        for image in client.images.list(name=repository):
            if image.id not in before:
                client.images.remove(image.id, force=True)


def median_of(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="comma-separated built-in agent names")
    parser.add_argument("--repeats", type=int, default=3, help="cached-layer runs per agent (median)")
    parser.add_argument("--cold-repeats", type=int, default=1, help="--fresh-install runs per agent (median)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold installs")
    args = parser.parse_args()

    rows: list[tuple[str, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bf-agent-overhead-") as tmp:
        tmp_path = Path(tmp)
        fake = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [[
            {"op": "ask_model", "api": "openai", "prompt": "hi"},
            {"op": "tool", "id": "w", "write": {"path": "hello.txt", "content": "Hello, world!\n"}}]]})})
        one_trial(str(fake), "openai-completions", tmp_path / "warm")
        baseline = median_of([one_trial(str(fake), "openai-completions", tmp_path / "base")
                              for _ in range(args.repeats)])
        rows.append(("fake-acp (baseline)", "cached", baseline))
        for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
            config = get_agent_config(agent)  # a built-in name or an agent file
            api, jobs = config.gateway.api, tmp_path / config.name
            one_trial(agent, api, jobs)  # builds the layer when it is not there yet
            rows.append((config.name, "cached", median_of([one_trial(agent, api, jobs) for _ in range(args.repeats)])))
            if not args.no_cold:
                rows.append((config.name, "cold", median_of([cold_trial(agent, config.name, api, jobs)
                                                       for _ in range(args.cold_repeats)])))
            print(f"... {config.name}: {rows[-2:]}", file=sys.stderr, flush=True)

    width = max(len(name) for name, _, _ in rows)
    print(f"{'agent'.ljust(width)}  {'layer':6}  {'setup s':>8}  {'ready→call s':>12}  {'start→call s':>12}  "
          f"{'x baseline':>10}")
    for name, layer, m in rows:
        print(f"{name.ljust(width)}  {layer:6}  {m['setup']:8.1f}  {m['ready']:12.1f}  {m['start']:12.1f}  "
              f"{m['start'] / baseline['start']:10.2f}")


if __name__ == "__main__":
    main()
