"""Where every file of a job lives: the one paths object for the job folder.

The job folder is the database; every later command reads it back::

    <jobs_dir>/
      summary.json                  copy of the latest job's summary (back-compat)
      matrix-summary.json           with --matrix
      <job_name>/                   default: start time %Y-%m-%d__%H-%M-%S
        evaluation.json             the run config (secrets dropped), for resume
        run-card.json               the plan's verdict, accepted deviations
        summary.json                counts, score, solve rates, budget
        canonical-selection.json    --canonicalize without --canonical-selection-out (jobs/canonical.py)
        results.jsonl               concatenation of per-trial results.jsonl
        .set-aside/                 trials moved away by --restart-changed
        hosted-env/                 --source-env: install.log, vf-eval.log, run.json, vf-eval/ (raw output)
        .build-context/<task>-<hash>/  --context-root: a task's environment/ with its COPY sources staged
        <task>__<hex8>/             one trial; a retry gets a new folder
          config.json  result.json  timing.json  prompts.json  sandbox.json
          rewards.jsonl  results.jsonl  kept-sandbox.json  regrade.json
          agent/       install-stdout.txt, <agent>.txt, oracle.txt
          verifier/    reward.txt reward.json test-stdout.txt ...
            episode/   an embodied trial's episode record (result.json episode.json steps.jsonl
                       video_index.json frames.jsonl trace.jsonl recording.mp4 observations/)
          artifacts/   (an embodied trial: recording.mp4 and observations/, copies the verifier made)
          trainer/     embodied_episode.json embodied_steps.jsonl (BenchFlow 0.7's trainer export)
          trajectory/  acp_trajectory.jsonl llm_trajectory.jsonl
          evidence/    frozen workspace (--freeze-workspace) + manifest.json
          tree.json    bench branch: forks, children, snapshots
          branches/<fork>/children/<node>/   one child: observation.json + the folders above
          steps/<NN>-<name>/   a multi-step task's step: step.json + agent/ verifier/ artifacts/ setup/
          turns/<NN>-<role>/   a scene's turn: turn.json + agent/ trajectory/ [simulated-user.json]
          simulated-user.json  the simulated user's rounds (trajectory/user_llm_trajectory.jsonl: its model calls)
          loop/        --loop-strategy: iterations.jsonl + <NN>/verifier/ (each round's soft verification)
          environment-plane.json  --environment-manifest / --state: what was bound, started, probed, torn down
          codex_apps_policy.json  codex-acp: the Codex Apps policy applied and its probe (--codex-apps-policy)

A trial folder without ``result.json`` never finished running (a killed or
interrupted run). Resume reuses a task when one of its trials has a
``result.json`` with a reward or a verifier error (``records.TrialResult.is_finished``).
What goes into each record is :mod:`benchflow.records`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TrialPaths:
    """Files of one trial folder."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def result(self) -> Path:
        return self.root / "result.json"

    @property
    def timing(self) -> Path:
        return self.root / "timing.json"

    @property
    def prompts(self) -> Path:
        return self.root / "prompts.json"

    @property
    def sandbox(self) -> Path:
        return self.root / "sandbox.json"

    @property
    def rewards(self) -> Path:
        return self.root / "rewards.jsonl"

    @property
    def results_jsonl(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def kept_sandbox(self) -> Path:
        return self.root / "kept-sandbox.json"

    @property
    def network(self) -> Path:
        """``network.json``: the network mode asked and granted, the cloud-metadata verdict, allowed hosts."""
        return self.root / "network.json"

    @property
    def egress_log(self) -> Path:
        """``egress.jsonl``: every request an ``allowlist`` trial's sandbox made through its egress proxy."""
        return self.root / "egress.jsonl"

    @property
    def regrade(self) -> Path:
        return self.root / "regrade.json"

    @property
    def scoring_dir(self) -> Path:
        """``scoring/``: the rubric scoring revisions, ``<attempt>.json`` each (never rewritten)."""
        return self.root / "scoring"

    def scoring_revision(self, attempt: int) -> Path:
        return self.scoring_dir / f"{attempt}.json"

    @property
    def review_report(self) -> Path:
        """``review_report.json``: in a reviewer's rollout folder, its review of the rollout it graded."""
        return self.root / "review_report.json"

    @property
    def claim_verdict(self) -> Path:
        """``integrity/claim_verdict.json``: the ``--integrity`` audit of what the agent did."""
        return self.root / "integrity" / "claim_verdict.json"

    @property
    def regrade_verifier_dir(self) -> Path:
        """Verifier outputs of the latest ``bench regrade`` (the trial's own verifier/ is never touched)."""
        return self.root / "regrade" / "verifier"

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    @property
    def atif_trajectory(self) -> Path:
        """``agent/trajectory.json``: the ATIF trajectory a Harbor trial's agent wrote (BenchFlow writes none)."""
        return self.agent_dir / "trajectory.json"

    @property
    def install_log(self) -> Path:
        """``agent/install-stdout.txt``: the agent's install output."""
        return self.agent_dir / "install-stdout.txt"

    @property
    def reward_details(self) -> Path:
        """``verifier/reward-details.json``, when the verifier wrote one."""
        return self.verifier_dir / "reward-details.json"

    @property
    def verifier_dir(self) -> Path:
        return self.root / "verifier"

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def episode(self) -> "EpisodePaths":
        """``verifier/episode/``: the episode record an embodied task's verifier copied from its simulator."""
        return EpisodePaths(self.verifier_dir / "episode")

    @property
    def video_copy(self) -> Path:
        """``artifacts/recording.mp4``: the verifier's copy of an embodied episode's video."""
        return self.artifacts_dir / "recording.mp4"

    @property
    def observation_copies(self) -> Path:
        """``artifacts/observations/``: the verifier's copies of the camera images an embodied agent saw."""
        return self.artifacts_dir / "observations"

    @property
    def trainer_episode(self) -> Path:
        """``trainer/embodied_episode.json``: BenchFlow 0.7's training export of an embodied episode."""
        return self.root / "trainer" / "embodied_episode.json"

    @property
    def setup_dir(self) -> Path:
        """``setup/``: output of the task's setup commands and healthcheck (``jobs/setup_commands.py``)."""
        return self.root / "setup"

    @property
    def trajectory_dir(self) -> Path:
        return self.root / "trajectory"

    @property
    def acp_trajectory(self) -> Path:
        return self.trajectory_dir / "acp_trajectory.jsonl"

    @property
    def llm_trajectory(self) -> Path:
        return self.trajectory_dir / "llm_trajectory.jsonl"

    @property
    def evidence_dir(self) -> Path:
        return self.root / "evidence"

    @property
    def evidence_workspace(self) -> Path:
        """The frozen workspace folder (``--freeze-workspace``), read back by ``bench regrade``."""
        return self.evidence_dir / "workspace"

    @property
    def evidence_manifest(self) -> Path:
        return self.evidence_dir / "manifest.json"

    @property
    def tree(self) -> Path:
        """``tree.json``: the forks and children of a branched trial (``bench branch``)."""
        return self.root / "tree.json"

    @property
    def branches_dir(self) -> Path:
        return self.root / "branches"

    def branch_child(self, fork: str, node: str) -> "TrialPaths":
        """``branches/<fork>/children/<node>/``: one child, laid out like a trial folder."""
        return TrialPaths(self.branches_dir / fork / "children" / node)

    def step(self, index: int, name: str) -> "StepPaths":
        """``steps/<NN>-<name>/``: one step of a multi-step task, laid out like a trial folder."""
        return StepPaths(self.root / "steps" / f"{index:02d}-{name}", trial=self.name)

    @property
    def step_record(self) -> Path:
        """``step.json`` of a step folder (see :meth:`step`)."""
        return self.root / "step.json"

    @property
    def observation(self) -> Path:
        """``observation.json`` of a branch child folder (see :meth:`branch_child`)."""
        return self.root / "observation.json"

    @property
    def loop_dir(self) -> Path:
        """``loop/``: the rounds of a ``--loop-strategy`` trial."""
        return self.root / "loop"

    @property
    def loop_iterations(self) -> Path:
        """``loop/iterations.jsonl``: one line per round (prompt, soft reward, feedback level)."""
        return self.loop_dir / "iterations.jsonl"

    def loop_verifier_dir(self, round_index: int) -> Path:
        """``loop/<NN>/verifier/``: what round ``round_index``'s soft verification wrote."""
        return self.loop_dir / f"{round_index:02d}" / "verifier"

    @property
    def environment_plane(self) -> Path:
        """``environment-plane.json``: the stateful environment bound to the trial and its services' life."""
        return self.root / "environment-plane.json"

    @property
    def codex_apps_policy(self) -> Path:
        """``codex_apps_policy.json``: the Codex Apps policy a codex-acp trial ran under, and its proof."""
        return self.root / "codex_apps_policy.json"

    def agent_log(self, agent: str) -> Path:
        """``agent/<agent with - as _>.txt``."""
        return self.agent_dir / f"{agent.replace('-', '_')}.txt"

    def make_dirs(self) -> None:
        for folder in (self.agent_dir, self.verifier_dir, self.artifacts_dir, self.trajectory_dir):
            folder.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class StepPaths(TrialPaths):
    """A step folder: its ``name`` is unique in the job (``<trial>.<NN>-<step>``), so what is keyed by
    trial name (the model gateway's per-trial accounting) stays apart from other trials' steps."""

    trial: str = ""

    @property
    def name(self) -> str:
        return f"{self.trial}.{self.root.name}"


@dataclass(frozen=True)
class EpisodePaths:
    """Files of an embodied episode record (``verifier/episode/``), as the episode server writes them."""

    root: Path

    @property
    def result(self) -> Path:
        """``result.json``: success, outcome, seed, steps used, return, ``initial_state_sha256``."""
        return self.root / "result.json"

    @property
    def header(self) -> Path:
        """``episode.json``: task, seed, the embodiment spec, observation mode, the initial state and its hash."""
        return self.root / "episode.json"

    @property
    def steps(self) -> Path:
        """``steps.jsonl``: one line per simulator step (action by group, reward, success, state, frame)."""
        return self.root / "steps.jsonl"

    @property
    def video_index(self) -> Path:
        """``video_index.json``: the video's file name (or null), fps and the frame to step map."""
        return self.root / "video_index.json"

    @property
    def observations(self) -> Path:
        return self.root / "observations"

    def video(self, name: str) -> Path:
        """The video ``video_index.json`` names (``recording.mp4``)."""
        return self.root / name


@dataclass(frozen=True)
class JobPaths:
    """Files of one job folder."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def evaluation(self) -> Path:
        return self.root / "evaluation.json"

    @property
    def run_card(self) -> Path:
        return self.root / "run-card.json"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def results_jsonl(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def canonical_selection(self) -> Path:
        """``--canonicalize``'s selection when no ``--canonical-selection-out`` is given."""
        return self.root / "canonical-selection.json"

    @property
    def regrade_summary(self) -> Path:
        return self.root / "regrade-summary.json"

    @property
    def set_aside(self) -> Path:
        return self.root / ".set-aside"

    @property
    def hosted_env(self) -> Path:
        """``hosted-env/``: a hosted environment's install and vf-eval logs, its command and raw output."""
        return self.root / "hosted-env"

    @property
    def build_contexts(self) -> Path:
        """``.build-context/``: tasks' build contexts staged for ``--context-root``."""
        return self.root / ".build-context"

    @property
    def lock(self) -> Path:
        """Held (flock) by the process running this job; a live lock means 'still running'."""
        return self.root / ".lock"

    @property
    def summary_copy(self) -> Path:
        """``<jobs_dir>/summary.json``: the copy of the latest job's summary (back-compat)."""
        return self.root.parent / "summary.json"

    def trial(self, name: str) -> TrialPaths:
        return TrialPaths(self.root / name)

    def trials(self) -> list[TrialPaths]:
        """Every trial folder (finished or not), sorted by name."""
        if not self.root.is_dir():
            return []
        with os.scandir(self.root) as entries:  # d_type, no stat per entry: fast on 10,000 trials
            names = sorted(e.name for e in entries
                           if not e.name.startswith(".") and "__" in e.name and e.is_dir())
        return [TrialPaths(self.root / name) for name in names]

    @staticmethod
    def is_job(path: Path) -> bool:
        """A job folder holds evaluation.json, trial folders with config/result, or summary.json.

        A summary.json beside job folders is the jobs folder's back-compat copy of its latest
        job's summary, not a job of its own.
        """
        if (path / "evaluation.json").is_file():
            return True
        if not path.is_dir():
            return False
        children = [child for child in path.iterdir() if child.is_dir()]
        if any(((child / "result.json").is_file() or (child / "config.json").is_file())
               and not is_harbor_job(child) for child in children):
            return True
        return (path / "summary.json").is_file() and not any(
            (child / "evaluation.json").is_file() or (child / "summary.json").is_file() for child in children)


def is_harbor_job(path: Path) -> bool:
    """A Harbor job folder: its own ``result.json`` (where a trial's would be) is Harbor's ``JobResult``.

    Harbor writes ``n_total_trials`` in its first few hundred bytes, so a trial's result is told apart
    by its head alone.
    """
    from benchflow.records import Unreadable, read_json
    from benchflow.records.harbor import is_job_result
    from benchflow.util import nofollow

    result = TrialPaths(path).result
    try:
        with nofollow.open_file(result) as handle:
            if b'"n_total_trials"' not in handle.read(4096):
                return False
        return is_job_result(read_json(result))
    except (OSError, Unreadable):
        return False


def matrix_summary(jobs_dir: Path) -> Path:
    """``<jobs_dir>/matrix-summary.json`` (``--matrix``)."""
    return jobs_dir / "matrix-summary.json"


def unit_key(task_name: str, seed: int | None) -> str:
    """What a job schedules and resumes by: the task name, or ``<task>@seed<N>`` with --seeds."""
    return task_name if seed is None else f"{task_name}@seed{seed}"


def trial_name(task_name: str, suffix: str) -> str:
    """``<task dir name>__<hex8>``."""
    return f"{task_name}__{suffix}"
