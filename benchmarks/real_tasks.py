"""Real published tasks (Harbor layout), each oracle by hand and through ``bench run``: one table.

For every task folder under the suites given: copy it, put an offline stand-in in each ``FROM`` that
names a public base image (the files are otherwise unchanged), then

- by hand: build ``environment/`` and run ``solve.sh`` and ``test.sh`` as root in the image's WORKDIR
  with nothing but the Docker SDK (``tests/compat/byhand.py``), on the host network as Docker's
  default bridge would give them;
- through bench: ``bench run TASK --sandbox docker --ca-bundle host --allow-cloud-metadata`` (``public``
  on the host network too: ``BENCHFLOW_DOCKER_PUBLIC_NETWORK=host``, since this engine has no bridge; no
  metadata probe of the host's own link-local addresses).

The table gives task, by hand, through bench, and for each disagreement the first differing fact
(the image bench ran, the network it granted, its error, the first failing test). ``--repeat N``
runs each task's oracle by hand N more times and flags one that does not score the same every time
(a simulator with unseeded noise can pass once and fail the next run). A task that cannot run here says why (its base image cannot be had
offline, files missing from the snapshot, a GPU). Nothing here runs in CI: the tasks are fetched
(``yujianll/skill-usage``) and their files stay out of this repository.

Usage: python benchmarks/real_tasks.py SUITE [SUITE ...] [--only a,b] [--limit N] [--out DIR]
       [--missing FILE] [--repeat N] [--json] [-j N] [--resume] [--bench-arg=ARG ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchflow.sandbox import dockerfile_lines  # noqa: E402  (instructions as bench's build groups them)
from benchflow.sandbox.docker_build import _FROM  # noqa: E402  (the FROM line as bench's build reads it)
from benchflow.util.processes import pid_alive  # noqa: E402
from tests.compat import byhand  # noqa: E402

STANDINS = {"benchflow/standin:uv": "benchflow/standin:trixie",
            "benchflow/standin:uv-bookworm": "benchflow/standin:bookworm"}
"""Offline stand-ins (tag -> its debootstrap base from ``scripts/docker-engine.sh --standins``), tried in
this order: Debian 13 (Python 3.13), then, for a Dockerfile that does not build on it (pins without a
3.13 wheel, such as numpy 1.26), Debian 12 (Python 3.11). Each has pip, venv, curl, git and uv."""
STANDIN = next(iter(STANDINS))
STANDIN_DOCKERFILE = """FROM {base}
# What the published verifiers fetch from hosts this machine cannot reach (astral.sh's uv installer,
# uv's Python downloads from GitHub), here ahead of time; everything else they still fetch.
RUN pip install --no-cache-dir uv==0.9.5
"""
UV_IMAGE_TAGS = ("ghcr.io/astral-sh/uv:0.8.14", "ghcr.io/astral-sh/uv:0.8.15")
"""Tags of astral's uv image that published Dockerfiles ``COPY --from=`` (``/uv /uvx``): here an image
holding the stand-in's uv at those paths, under those names, so the classic builder finds it locally."""
UV_IMAGE_DOCKERFILE = f"""FROM {STANDIN}
RUN cp "$(command -v uv)" /uv && cp "$(command -v uvx)" /uvx
"""
# Public base images the stand-in replaces: the Python and Debian/Ubuntu images of the published tasks.
STANDS_IN = re.compile(r"^(python|ubuntu|debian)(:[\w.-]+)?$")


@dataclass
class Row:
    suite: str
    task: str
    by_hand: str = ""
    through_bench: str = ""
    cannot_run: str = ""
    differs: str = ""
    repeats: list[str] = field(default_factory=list)
    standin: str = ""
    """The stand-in base image the task ran on."""
    seconds: float = 0.0

    @property
    def agree(self) -> bool:
        return not self.cannot_run and _score(self.by_hand) == _score(self.through_bench)


def _score(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def host_ca() -> Path:
    for candidate in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise SystemExit("no host CA bundle (/etc/ssl/certs/ca-certificates.crt)")


def _have(*images: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", *images], capture_output=True).returncode == 0


def remove_hand_leftovers() -> None:
    """Remove the hand runs' containers whose process is gone (a run killed before its own removal)."""
    import docker

    for container in docker.from_env().containers.list(all=True, sparse=True, filters={"label": byhand.LABEL}):
        if not pid_alive(int(container.attrs.get("Labels", {}).get(byhand.LABEL) or 0)):
            container.remove(force=True)


def ensure_standin() -> None:
    if _have(*STANDINS, *UV_IMAGE_TAGS):
        return
    if not _have(*STANDINS.values()):
        subprocess.run(["bash", str(ROOT / "scripts" / "docker-engine.sh"), "--standins"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "environment").mkdir()
        for tag, base in STANDINS.items():
            (Path(tmp) / "environment" / "Dockerfile").write_text(STANDIN_DOCKERFILE.format(base=base))
            byhand.build(Path(tmp), tag, host_ca())
        (Path(tmp) / "environment" / "Dockerfile").write_text(UV_IMAGE_DOCKERFILE)
        byhand.build(Path(tmp), UV_IMAGE_TAGS[0], host_ca())
    for tag in UV_IMAGE_TAGS[1:]:
        subprocess.run(["docker", "tag", UV_IMAGE_TAGS[0], tag], check=True)


def why_not_here(task: Path, missing: set[str]) -> str:
    """Why ``task`` cannot run on this machine, or ''."""
    gone = sorted(p for p in missing if p.startswith(f"{task.parent.name}/{task.name}/"))
    if gone:
        return f"files missing from the snapshot: {', '.join(p.split('/', 2)[2] for p in gone)[:120]}"
    config = tomllib.loads((task / "task.toml").read_text())
    if int((config.get("environment") or {}).get("gpus") or 0) > 0:
        return "needs a GPU"
    dockerfile = task / "environment" / "Dockerfile"
    if not dockerfile.is_file():
        return "no environment/Dockerfile (a prebuilt image only)"
    stages = set()
    parsed = dockerfile_lines.parse(dockerfile.read_text())
    if any(ins.heredocs for ins in parsed):
        return ("by hand needs BuildKit for the Dockerfile's heredocs (not on this engine: the hand run is the "
                "Docker SDK's classic builder); bench translates heredocs for the classic builder")
    for group in (ins.lines for ins in parsed):
        match = _FROM.match(group[0])
        if not match:
            continue
        image, rest = match.group(3), match.group(4).split()
        if image not in stages and not STANDS_IN.match(image):
            return f"base image {image} cannot be pulled here and has no offline stand-in"
        if len(rest) >= 2 and rest[0].upper() == "AS":
            stages.add(rest[1])
    return ""


def stage(task: Path, out: Path, standin: str = STANDIN) -> Path:
    """A copy of ``task`` whose public base images are ``standin`` (nothing else changed)."""
    copy = out / "tasks" / task.parent.name / task.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(task, copy, symlinks=True)
    dockerfile = copy / "environment" / "Dockerfile"
    lines = []
    for group in dockerfile_lines.instructions(dockerfile.read_text()):
        match = _FROM.match(group[0])
        if match and STANDS_IN.match(match.group(3)):
            group = [f"{match.group(1)}{standin}{match.group(4)}", *group[1:]]
        lines.extend(group)
    dockerfile.write_text("\n".join(lines) + "\n")
    return copy


def by_hand(task: Path, tag: str) -> tuple[str, bool]:
    """(reward text or error, whether the image built)."""
    try:
        byhand.build(task, tag, host_ca())
    except Exception as exc:  # noqa: BLE001 - a task's build failing is a row, not a crash
        return f"error: {_first_line(exc)}", False
    return _oracle_again(task, tag), True


def _oracle_again(task: Path, tag: str) -> str:
    try:
        return byhand.oracle_reward(task, tag, network="host")
    except Exception as exc:  # noqa: BLE001 - as in by_hand
        return f"error: {_first_line(exc)}"


def _first_line(exc: Exception) -> str:
    """The engine's own explanation when it gave one (an API error's URL says nothing)."""
    text = str(getattr(exc, "explanation", None) or exc).strip() or type(exc).__name__
    return text.splitlines()[0][:140]


def through_bench(task: Path, jobs: Path, extra: list[str]) -> tuple[str, str]:
    """(reward text, first differing fact when it did not score) of one ``bench run``."""
    env = {**os.environ, "BENCHFLOW_DOCKER_PUBLIC_NETWORK": "host"}
    # --allow-cloud-metadata: on the host network bench would prove the metadata block by probing the
    # link-local endpoints, i.e. this machine's real ones; the block is the suite's to test (against a
    # stand-in in a network namespace), the oracle's fidelity is this runner's.
    bench = [sys.executable, "-m", "benchflow.cli", "run", str(task), "--sandbox", "docker", "--ca-bundle", "host",
             "--jobs-dir", str(jobs), "--allow-cloud-metadata", *extra]
    done = subprocess.run(bench, env=env, capture_output=True, text=True)
    results = sorted(jobs.glob(f"*/{task.name}__*/result.json"))
    if not results:
        return f"error: bench exited {done.returncode}", (done.stderr.strip().splitlines() or [""])[-1][:160]
    trial = results[-1].parent
    result = json.loads(results[-1].read_text())
    reward = (result.get("rewards") or {}).get("reward")
    return ("" if reward is None else f"{reward:g}"), facts(trial, result)


def facts(trial: Path, result: dict) -> str:
    """What a reader checks first when bench and the hand run disagree."""
    config = json.loads((trial / "config.json").read_text()) if (trial / "config.json").is_file() else {}
    image = ((config.get("sandbox_fit") or {}).get("image") or {}).get("source")
    out = []
    if image and image != "dockerfile":
        out.append(f"image: bench ran {image}, by hand the Dockerfile")
    network = trial / "network.json"
    if network.is_file():
        granted = json.loads(network.read_text()).get("network_mode", {}).get("granted")
        if granted not in ("public", None):
            out.append(f"network: bench granted {granted}")
    for key in ("error", "verifier_error"):
        if result.get(key):
            out.append(f"{key}: {str(result[key]).splitlines()[0][:140]}")
    stdout = trial / "verifier" / "test-stdout.txt"
    if stdout.is_file():
        failed = [line for line in stdout.read_text(errors="replace").splitlines() if line.startswith("FAILED ")]
        if failed:
            out.append(f"first failing test: {failed[0][:140]}")
    return "; ".join(out)


def _earlier_rows(table: Path) -> dict[tuple[str, str], Row]:
    if not table.is_file():
        return {}
    last = list(STANDINS)[-1]  # a build that failed before every stand-in was tried is tried again
    return {(r["suite"], r["task"]): Row(**r) for r in json.loads(table.read_text())
            if r.get("seconds")  # finished: a row another task's write saved half-way has none
            and not (r.get("by_hand", "").startswith("error:") and r.get("standin", "") != last)}


def _write_table(table: Path, rows: list[Row]) -> None:
    """After every task, atomically: a run stopped half-way keeps what it measured (``--resume``)."""
    part = table.with_suffix(".part")
    part.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    os.replace(part, table)


def _remove_images(tag: str, task_name: str) -> None:
    """The hand run's image and the one bench built for the task (the oracle has no agent layer): 176 task
    images do not fit on one disk."""
    name = re.sub(r"[^a-z0-9._-]+", "-", task_name.lower()).strip("._-")
    listed = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", f"benchflow/{name}"],
                            capture_output=True, text=True).stdout.split()  # exactly: tasks run side by side
    subprocess.run(["docker", "image", "rm", "-f", tag, *listed], capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", type=Path)
    parser.add_argument("--only", default="", help="comma-separated task names")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/benchflow-real-tasks"))
    parser.add_argument("--missing", type=Path, help="paths (SUITE/TASK/...) absent from the snapshot, one a line")
    parser.add_argument("--repeat", type=int, default=0, help="rerun each oracle by hand N more times and flag one that does not score the same")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bench-arg", action="append", default=[], help="one more argument for bench run")
    parser.add_argument("--resume", action="store_true", help="keep the rows OUT/table.json already has")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="tasks at a time (their builds wait on the package index more than on the CPU)")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    missing = set(args.missing.read_text().split()) if args.missing else set()
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = [t for s in args.suites for t in sorted(s.iterdir()) if (t / "task.toml").is_file()]
    selected = [t for t in tasks if not only or t.name in only][: args.limit or None]
    rows = [Row(t.parent.name, t.name, cannot_run=why_not_here(t, missing)) for t in selected]
    done = _earlier_rows(args.out / "table.json") if args.resume else {}
    rows = [done.get((r.suite, r.task), r) for r in rows]
    if any(not r.cannot_run for r in rows):
        remove_hand_leftovers()
        ensure_standin()
    lock = threading.Lock()

    def one(task: Path, row: Row) -> None:
        started = time.monotonic()
        tag = f"real-byhand/{task.name.lower()}:latest"
        for standin in STANDINS:  # the next stand-in only for a Dockerfile the one before cannot build
            copy = stage(task, args.out, standin)
            row.by_hand, built = by_hand(copy, tag)
            row.standin = standin
            if built:
                break
        row.through_bench, found = through_bench(copy, args.out / "jobs" / task.parent.name / task.name,
                                                 args.bench_arg)
        if not row.agree:
            row.differs = found
        if args.repeat and built:  # a seeded-noise oracle can pass its first run and fail the next
            row.repeats = [_oracle_again(copy, tag) for _ in range(args.repeat)]
        _remove_images(tag, task.name)
        row.seconds = round(time.monotonic() - started, 1)
        with lock:
            _write_table(args.out / "table.json", rows)
            print(f"{row.suite}/{row.task}: by hand {row.by_hand or '-'} | bench {row.through_bench or '-'}"
                  f"{' | ' + row.differs if row.differs else ''}", file=sys.stderr, flush=True)

    todo = [(t, r) for t, r in zip(selected, rows) if not r.cannot_run and (r.suite, r.task) not in done]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each task has its own copy, tag, jobs
        for future in [pool.submit(one, task, row) for task, row in todo]:
            future.result()
    _write_table(args.out / "table.json", rows)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    print("| suite | task | by hand | through bench | first differing fact / cannot run here |")
    print("|---|---|---|---|---|")
    for r in rows:
        flaky = f" (oracle not stable: {', '.join(r.repeats)})" if len(set(r.repeats + [r.by_hand])) > 1 else ""
        if not r.cannot_run and r.by_hand.startswith("error:") and r.agree:
            r.cannot_run = f"fails by hand too: {r.by_hand[7:]}"
        note = f"cannot run here: {r.cannot_run}" if r.cannot_run else (r.differs + flaky if not r.agree else flaky)
        if r.standin and r.standin != STANDIN:
            note += f" (on {STANDINS[r.standin]}: the first stand-in did not build it)"
        print(f"| {r.suite} | {r.task} | {r.by_hand or '-'} | {r.through_bench or '-'} | {note.strip()} |")
    ran = [r for r in rows if not r.cannot_run]  # (after the loop above: a hand run's failed build counts)
    print(f"\n{len(rows)} tasks: {len(ran)} run, {sum(r.agree for r in ran)} agree, "
          f"{sum(_score(r.by_hand) == 1.0 for r in ran)} score 1 by hand, "
          f"{sum(_score(r.through_bench) == 1.0 for r in ran)} through bench, {len(rows) - len(ran)} cannot run here")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
