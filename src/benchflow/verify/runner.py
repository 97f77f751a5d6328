"""Run a task's verifier in the trial's sandbox and read the reward (§2.2 of the contracts).

The verifier's files are uploaded only now, after the agent has finished and
its processes are gone (:mod:`.fence`), so the agent never sees them. A
verifier that times out with no output at all is wedged: it is run once more
in the same sandbox. After that, a timeout or
crash is the trial's final verifier outcome, never a hang.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.categories import classify_verifier_error
from benchflow.errors import BenchError, VerifierError
from benchflow.sandbox.base import Sandbox

from .environment import PLUGIN_PATH_PREFIX, pinned_env, verifier_task_env
from .fence import fence, fence_then_run, is_root
from .rewards import RewardError, parse_reward_files
from .strategies import Selected, StrategyContext, commands, host_runner, select
from .strategies.combine import combine
from .strategies.commands import MANIFEST, Command

_HAS_OUTPUT = "[ -s /logs/verifier/test-stdout.txt ]"
# $0 verifier folder, $1 1 when the verifier runs as root, then the entry points to make executable.
_READY = ('d=$0; root=$1; shift; { [ "$root" = 1 ] || chmod -R a+rX "$d"; } || exit 1; '
          'for f; do [ -e "$f" ] || continue; chmod a+x "$f" || exit 1; done')
# A root verifier makes its entry points runnable in its own exec (one round trip less): $1... are
# the entry points, cleared before the strategy's command runs; a failure leaves this on stderr.
_SETUP_FAILED = "__benchflow_verifier_setup_failed__"
_READY_AS_ROOT = ('for f; do [ -e "$f" ] || continue; chmod a+x "$f" || { echo ' + _SETUP_FAILED
                  + ' >&2; exit 1; }; done; set --\n')
_REWARD_FILES = ("reward.txt", "reward.json", "reward-details.json")


@dataclass
class VerifierOutcome:
    """What the verifier phase produced (feeds result.json)."""

    rewards: dict[str, Any] | None = None
    error: str | None = None
    error_category: str | None = None
    timeout_info: dict[str, Any] | None = None
    return_code: int | None = None
    elapsed_sec: float = 0.0
    attempts: int = 0
    warnings: list[str] = field(default_factory=list)
    copy_out: dict[str, Any] | None = None
    """What copying ``/logs/verifier`` out left behind (links out, devices, files over the cap); None
    when everything came back."""


async def run_verifier(sandbox: Sandbox, task: Any, verifier_dir: Path, *, workdir: str,
                       agent_user: str | None, task_name: str,
                       extra_env: dict[str, str] | None = None, gateway: Any = None,
                       trial_dir: Path | None = None) -> VerifierOutcome:
    """Upload, run and score the task's verifier; ``verifier_dir`` is the trial's verifier/ folder.

    The strategy is the task's (:func:`.strategies.select`): a command in the sandbox, or a
    host-side judge whose model calls go through ``gateway`` (the job's; None starts a private
    one). ``trial_dir`` holds the rollout files a judge may read (default: ``verifier_dir``'s parent).
    Never raises for verifier-side failures: they come back as ``error`` + ``error_category``.
    """
    started = time.monotonic()
    outcome = VerifierOutcome()
    config = task.config.verifier
    remote_dir = "/tests" if task.paths.is_legacy else "/verifier"
    try:
        selected = select(task)
        task_env = {**verifier_task_env(task), **(extra_env or {})}
        carry = (selected.in_sandbox and config.service == "main"  # the fence brings the folder along
                 and getattr(getattr(sandbox, "capabilities", None), "exec_writes_persist", False))
        fence_args = dict(agent_user=agent_user, link_tests=not task.paths.is_legacy,  # native tasks: /tests too
                          verifier_dir=remote_dir, workdir=workdir,
                          cleanup_conftests=config.hardening.cleanup_conftests)
        command = _command(task, selected, remote_dir) if selected.in_sandbox else None
        first = logs = None
        if carry and is_root(config.user) and command.manifest is None:  # the verifier runs in the fence's exec
            argv, env = _call(task, command, task_env, remote_dir, workdir)
            fenced, first, logs = await fence_then_run(sandbox, argv, env=env, cwd=workdir,
                                                 timeout=float(config.timeout_sec), carry=task.paths.verifier_dir,
                                                 **fence_args)
        else:
            fenced = await fence(sandbox, verifier_user=config.user, verifier_path=task_env.get("PATH"),
                                 carry=task.paths.verifier_dir if carry else None, **fence_args)
        outcome.warnings.extend(fenced.warnings(workdir))
        if selected.in_sandbox:
            result = await _run_in_sandbox(await _service(sandbox, config.service), task, command, outcome, task_env, remote_dir, workdir,
                                           verifier_dir, started, uploaded=fenced.uploaded, first=first,
                                           logs=logs)
            if result is None:
                return outcome
            return_code, criteria = result.return_code, command.criteria
        else:
            for name in _REWARD_FILES:
                (verifier_dir / name).unlink(missing_ok=True)
            context = StrategyContext(sandbox=sandbox, task=task, verifier_dir=verifier_dir,
                                      trial_dir=trial_dir or verifier_dir.parent, env=task_env, gateway=gateway,
                                      strategy_name=selected.name, strategy=selected.strategy,
                                      roles=selected.roles, label=task_name)
            await host_runner(selected.kind)(context)
            return_code, criteria = 0, None
        _score(outcome, verifier_dir, config, return_code, selected, criteria)
    except RewardError as exc:
        outcome.error, outcome.error_category = f"verifier crashed: {exc}", "verifier_failure"
    except VerifierError as exc:
        outcome.error, outcome.error_category = str(exc), exc.category
    except BenchError as exc:
        outcome.error, outcome.error_category = f"verifier crashed: {exc}", "verifier_infra"
    finally:
        outcome.elapsed_sec = round(time.monotonic() - started, 1)
    return outcome


def _call(task: Any, command: Command, task_env: dict[str, str], remote_dir: str,
          workdir: str) -> tuple[list[str], dict[str, str]]:
    """The verifier's argv and environment; a root verifier's argv makes its entry points runnable
    first (the upload is root's)."""
    env = {**pinned_env(task_env, verifier_dir=remote_dir, workdir=workdir), **command.env}
    if is_root(task.config.verifier.user):
        return ["sh", "-c", _READY_AS_ROOT + PLUGIN_PATH_PREFIX + command.script, remote_dir,
                *command.executables], env
    return ["sh", "-c", PLUGIN_PATH_PREFIX + command.script, remote_dir], env


async def _run_in_sandbox(sandbox: Sandbox, task: Any, command: Command, outcome: VerifierOutcome,
                          task_env: dict[str, str], remote_dir: str, workdir: str, verifier_dir: Path,
                          started: float, *, uploaded: bool = False, first: Any = None,
                          logs: bytes | None = None) -> Any:
    """Upload the verifier folder (unless the fence ``uploaded`` it) and run the strategy's command
    (a wedged run once more; ``first``: the result of a first run the fence's exec made, ``logs``
    the archive of ``/logs/verifier`` it sent back); the exec result, or None when it timed out
    (recorded on ``outcome``)."""
    config = task.config.verifier
    timeout = float(config.timeout_sec)
    argv, env = _call(task, command, task_env, remote_dir, workdir)
    try:
        if not uploaded:
            await sandbox.put(task.paths.verifier_dir, remote_dir)
    except BenchError as exc:
        raise VerifierError(f"verifier crashed: Failed to add verifier directory to sandbox: {exc}",
                            category="verifier_infra") from exc
    # The upload is root's: make the entry points runnable (and readable to a verifier user).
    as_root = is_root(config.user)
    if not as_root:
        ready = await sandbox.exec(["sh", "-c", _READY, remote_dir, "0", *command.executables], timeout=60)
        if not ready.success:
            raise VerifierError(f"Verifier setup failed: chmod exited with rc={ready.return_code}",
                                category="verifier_infra")
    if command.manifest is not None:
        wrote = await sandbox.exec(["sh", "-c", f"cat > {MANIFEST}"], user=config.user,
                                   stdin=json.dumps(command.manifest, indent=2).encode(), timeout=60)
        if not wrote.success:
            raise VerifierError("verifier crashed: failed to write the reward-kit manifest",
                                category="verifier_infra")
    for attempt in (1, 2):
        outcome.attempts = attempt
        result = first if attempt == 1 and first is not None else await sandbox.exec(
            argv, user=config.user, env=env, cwd=workdir if config.service == "main" else None, timeout=timeout)
        if as_root and result.return_code == 1 and _SETUP_FAILED in result.stderr:
            raise VerifierError("Verifier setup failed: chmod exited with rc=1", category="verifier_infra")
        outcome.return_code = result.return_code
        if not result.timed_out:
            break
        wedged = not (await sandbox.exec(["sh", "-c", _HAS_OUTPUT], timeout=30)).success
        if not (wedged and attempt == 1):
            break
        outcome.warnings.append("verifier timed out with no output; ran it once more")
    outcome.copy_out = await _download(sandbox, verifier_dir, logs if result is first else None)
    if result.timed_out:
        outcome.error = f"verifier timed out after {timeout:g}s"
        outcome.error_category = "verifier_timeout"
        outcome.timeout_info = {"timeout_budget_sec": timeout,
                                "elapsed_sec": round(time.monotonic() - started, 1),
                                "task_name": task.name}
        return None
    return result


async def _service(sandbox: Sandbox, name: str) -> Sandbox:
    """Where the verifier runs: ``verifier.service`` of a multi-service sandbox (contracts §2.6: the
    fence still hardens ``main`` only; the service gets a ``/logs/verifier`` and its own working dir)."""
    if name == "main":
        return sandbox
    from benchflow.sandbox.services import service_sandbox

    target = service_sandbox(sandbox, name)
    made = await target.exec(["mkdir", "-p", "/logs/verifier"], timeout=60)
    if not made.success:
        raise VerifierError(f"verifier.service {name!r}: could not make /logs/verifier there "
                            f"(rc={made.return_code}: {made.stderr.strip()[-200:]})", category="verifier_infra")
    return target


def _command(task: Any, selected: Selected, remote_dir: str) -> Command:
    if selected.kind == "script":
        return commands.script(remote_dir, selected.strategy.command)
    if selected.kind == "reward-kit":
        return commands.reward_kit(remote_dir, task, selected.name, selected.strategy,
                                   selected.document.verifier.outputs)
    return commands.test_script(remote_dir)


async def _download(sandbox: Sandbox, verifier_dir: Path, sent: bytes | None = None) -> dict[str, Any] | None:
    """Copy ``/logs/verifier`` out (from ``sent``, its archive as the verifier's exec sent it back, when
    that reads whole); what the copy left behind (see ``CopyReport.note``)."""
    for name in _REWARD_FILES:
        (verifier_dir / name).unlink(missing_ok=True)
    if sent is not None:
        import tarfile

        from benchflow.sandbox.copyout import copy_out_tar

        try:  # the same safe copy-out as the engine's archive goes through
            return (await asyncio.to_thread(copy_out_tar, [sent], "verifier", verifier_dir)).note()
        except (tarfile.TarError, EOFError):
            pass  # not a whole archive: copied out as usual
    try:
        report = await sandbox.get("/logs/verifier", verifier_dir)
        return report.note() if report is not None else None
    except BenchError as exc:
        raise VerifierError(f"verifier crashed: failed to download verifier directory: {exc}",
                            category="verifier_infra") from exc


# pytest's own usage error: the command line it was given (ours, or the script's with a plugin
# option whose plugin did not load) was rejected before any test ran.
_PYTEST_USAGE = re.compile(r"^ERROR: usage: [^\n]*\n(?:[^\n]*\n){0,3}?[^\n]*?: error: ([^\n]*)", re.MULTILINE)


_PLUGIN_GUARD = re.compile(r"^PluginGuardLoadError: [^\n]*", re.MULTILINE)


def environment_fault(verifier_dir: Path) -> str | None:
    """Why the verifier failed for the environment's reasons rather than the agent's work, if so.

    Such a run is a verifier error, never a 0: a correct solution must not be scored as wrong
    because pytest refused its arguments.
    """
    try:
        with open(verifier_dir / "test-stdout.txt", "rb") as handle:
            text = handle.read(8 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    found = _PYTEST_USAGE.search(text)
    if found is None:
        return None
    guard = _PLUGIN_GUARD.search(text)
    if guard is not None:
        return f"verifier crashed: {guard.group(0).strip()[:400]}"
    return (f"verifier crashed: pytest rejected its command line ({found.group(1).strip()[:200]}); the "
            "verifier's environment failed, not the agent's work (did a pytest plugin the test script "
            "needs not load?)")


def _score(outcome: VerifierOutcome, verifier_dir: Path, config: Any, return_code: int,
           selected: Selected, criteria: dict[str, float] | None = None) -> None:
    fault = environment_fault(verifier_dir)
    if fault is not None:
        outcome.error, outcome.error_category = fault, classify_verifier_error(fault)
        return
    reward_range = tuple(config.reward_range) if config.reward_range else None
    document = selected.document.verifier if selected.document is not None else None
    policy = dict(document.outputs.aggregate_policy) if document is not None else {}
    if criteria:
        policy = {**policy, "criteria": list(criteria), "weights": criteria,
                  "method": policy.get("method") or "weighted_mean"}
    rewards = parse_reward_files(verifier_dir, reward_range, policy=policy)
    if rewards is None:
        where = "/logs/verifier/reward.txt or reward.json"
        if return_code != 0:
            outcome.error = f"verifier crashed: verifier exited with rc={return_code}; no reward file found at {where}"
        else:
            outcome.error = f"verifier crashed: No reward file found at {where}"
        outcome.error_category = "verifier_failure"
        return
    if criteria:
        rewards = commands.strict_criteria(verifier_dir, rewards, criteria, policy)
    if document is not None:
        rewards = combine(rewards, document.rubric, selected.name, verifier_dir, reward_range)
    if return_code != 0:
        outcome.warnings.append(f"verifier exited with rc={return_code} but wrote a reward; scored")
    outcome.rewards = rewards
