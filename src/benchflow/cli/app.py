"""The root ``bench`` command and its lazy command table.

Command modules are imported only when their command runs (or when help
lists them), so ``bench --help`` stays fast. Each row of a table names the
module and attribute holding a Typer app or a click command, and the short
help printed in listings. Only commands that work are listed.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup


@dataclass(frozen=True)
class Lazy:
    module: str
    attr: str
    help: str
    hidden: bool = False
    notice: str = ""
    """An older spelling kept for old scripts: printed to stderr (after the command's path) whenever the
    row runs, and put before the command's own help. The row is the same command object as its target."""


# name -> where the command lives. Aliases point at the same object.
_T = "benchflow.cli.task_check"
_A = "benchflow.cli.authoring"
_R = "benchflow.cli.results"
_RUN = "benchflow.cli.run"
_AD = "benchflow.cli.adopt"
_ADOPT_INIT = "Scaffold benchmarks/<name>/ for a new benchmark adoption (deprecated alias)."
_ADOPT_CONVERT = "Drive the conversion workflow by launching the host codex CLI (deprecated alias)."
_ADOPT_VERIFY = "Run the parity gate for an adopted benchmark; emit a verdict (deprecated alias)."
_TO_SCAFFOLD = "Deprecated; use bench eval adopt NAME --scaffold-only."
_TO_CONVERT = "Deprecated; use bench eval adopt SOURCE."
_TO_VERIFY = "Deprecated; use bench eval adopt NAME --verify."
_C = "benchflow.cli.continue_cmd"

TASKS: dict[str, Lazy] = {
    "init": Lazy(_A, "init_cmd", "Scaffold a new benchmark task."),
    "check": Lazy(_T, "check_cmd", "Validate task structure and the run's plan without starting a sandbox."),
    "overlap": Lazy(_T, "overlap_cmd", "Compare two task manifests for exact task-id and digest overlap."),
    "migrate": Lazy(_A, "migrate_cmd", "Convert task.toml + instruction.md into the unified task.md format."),
    "normalize": Lazy(_A, "normalize_cmd", "Expand minimal task.md authoring profiles into canonical task.md."),
    "export": Lazy(_A, "export_cmd", "Export a task to a compatibility split layout with a loss report."),
    "digest": Lazy(_T, "digest_cmd", "Compute the content digest that pins a task's files, independent of git."),
    "generate": Lazy("benchflow.cli.hf_tasks", "generate_cmd", "Generate benchmark tasks from agent traces."),
    "list-sources": Lazy("benchflow.cli.hf_tasks", "list_sources_cmd", "List known HuggingFace trace datasets."),
    "snapshot-hf": Lazy("benchflow.cli.hf_tasks", "snapshot_hf_cmd", "Materialize a Hugging Face dataset task tree with provenance."),
}

EVAL: dict[str, Lazy] = {
    "smoke": Lazy("benchflow.cli.smoke", "smoke_cmd", "Run a bundled hello-world task once per credentialed agent, one at a time."),
    "run": Lazy(_RUN, "eval_run_cmd", "Run an evaluation; single task or batch."),
    "compare-lift": Lazy(_R, "compare_lift_cmd", "Compare paired baseline vs trained eval job directories."),
    "score": Lazy("benchflow.cli.review", "score_cmd", "Retry a failed reviewer using the saved workspace and trajectory."),
    "regrade": Lazy("benchflow.cli.regrade", "regrade_cmd", "Re-run the task's current verifier on each trial's frozen workspace."),
    "list": Lazy(_R, "list_cmd", "List the jobs in a jobs folder, one row each, with their scores."),
    "metrics": Lazy(_R, "metrics_cmd", "Collect and display metrics from a jobs directory."),
    "view": Lazy("benchflow.cli.view", "view_cmd", "View a trial or session trajectory in the browser."),
    "continue": Lazy(_C, "continue_cmd", "Resume a previous unfinished (timed-out) OpenHands run to completion."),
    "inspect": Lazy(_R, "inspect_cmd", "Read a finished job or trial: denominators, one row per trial, or --json."),
    "compare": Lazy(_R, "compare_cmd", "Pair two jobs by task: rewards, deltas, fair denominators, setting checks."),
    "resume": Lazy(_RUN, "resume_cmd", "Finish an interrupted job from its folder: rerun only the unfinished tasks."),
    "branch": Lazy("benchflow.cli.branch", "branch_cmd", "Fork an agent run at a checkpoint into labelled children."),
    "branches": Lazy("benchflow.cli.branch", "branches_cmd", "Show every fork and child of a job's (or one trial's) branches: request, status, reward, advantage, tokens, USD and sandbox-seconds."),
    "adopt": Lazy(_AD, "adopt_cmd", "Adopt an external benchmark into benchflow."),
    "create": Lazy(_RUN, "eval_run_cmd", "The same as bench eval run. Run an evaluation; single task or batch.",
                   hidden=True, notice="Deprecated; use bench eval run."),
    "continue-batch": Lazy(_C, "continue_batch_cmd", "Continue all timed-out OpenHands runs under a directory tree.",
                           hidden=True),
}

SANDBOX: dict[str, Lazy] = {
    "create": Lazy("benchflow.cli.sandbox", "create_cmd", "Create an environment from a task directory (does not start it)."),
    "list": Lazy("benchflow.cli.sandbox", "list_cmd", "List sandboxes BenchFlow created and kept sandboxes (kept-sandbox.json)."),
    "attach": Lazy("benchflow.cli.sandbox", "attach_cmd", "Open a root shell in a kept sandbox; with a command after --, run it there and exit with its status."),
    "release": Lazy("benchflow.cli.sandbox", "release_cmd", "Delete a sandbox kept with --keep-sandbox."),
    "cleanup": Lazy("benchflow.cli.sandbox", "cleanup_cmd", "Clean up orphaned sandboxes and stale shared runtimes."),
}

CACHE: dict[str, Lazy] = {
    "list": Lazy("benchflow.cli.cache", "list_cmd", "List what BenchFlow keeps, with sizes and creation times (the default)."),
    "clean": Lazy("benchflow.cli.cache", "clean_cmd", "Print what would be removed; remove it with --remove."),
}

AGENT: dict[str, Lazy] = {
    "list": Lazy("benchflow.cli.agents", "agent_list_cmd", "List all registered agents."),
    "show": Lazy("benchflow.cli.agents", "agent_show_cmd", "Show details for a registered agent."),
    "create": Lazy(_AD, "init_cmd", _ADOPT_INIT, hidden=True, notice=_TO_SCAFFOLD),
    "run": Lazy(_AD, "convert_cmd", _ADOPT_CONVERT, hidden=True, notice=_TO_CONVERT),
    "verify": Lazy(_AD, "verify_cmd", _ADOPT_VERIFY, hidden=True, notice=_TO_VERIFY),
}

ADOPT: dict[str, Lazy] = {
    "init": Lazy(_AD, "init_cmd", _ADOPT_INIT, notice=_TO_SCAFFOLD),
    "convert": Lazy(_AD, "convert_cmd", _ADOPT_CONVERT, notice=_TO_CONVERT),
    "verify": Lazy(_AD, "verify_cmd", _ADOPT_VERIFY, notice=_TO_VERIFY),
}
"""``bench adopt …``: the spelling before ``bench eval adopt`` (and ``bench agent create|run|verify`` before it)."""

SKILLS: dict[str, Lazy] = {
    "list": Lazy("benchflow.cli.skills", "list_cmd", "List discovered skills."),
    "eval": Lazy("benchflow.cli.skills_eval", "eval_cmd", "Evaluate a skill using its evals/evals.json test cases."),
    "validate": Lazy("benchflow.cli.skills", "validate_cmd", "Run static checks on skills: NVIDIA SkillEvaluator Tier 1 and SkillSpector."),
}

_AS = "benchflow.cli.assess"
ASSESS: dict[str, Lazy] = {
    "attempt-ref": Lazy(_AS, "attempt_ref_cmd", "Hash a completed rollout into a saved-attempt reference (JSON)."),
    "create": Lazy(_AS, "create_cmd", "Start an assessment of two saved attempts of one task."),
    "release": Lazy(_AS, "release_cmd", "Record that every runtime of both attempts was observed released."),
    "assign": Lazy(_AS, "assign_cmd", "Bind the collector's persisted blind assignment (after the release)."),
    "import-vote": Lazy(_AS, "import_vote_cmd", "Bind the collector's vote on the assignment (a skip becomes abstain)."),
    "correct": Lazy(_AS, "correct_cmd", "Replace the effective answer with a corrected one."),
    "retract": Lazy(_AS, "retract_cmd", "Retract the effective answer; its history stays in the log."),
    "reduce": Lazy(_AS, "reduce_cmd", "Record the deterministic label the log calls for, and refresh the label file."),
    "consume": Lazy(_AS, "consume_cmd", "Record that a consumer used one exact ready label revision."),
    "withdraw": Lazy(_AS, "withdraw_cmd", "Bar a corrected or retracted label revision from future use."),
    "show": Lazy(_AS, "show_cmd", "Verify the sidecar's log and print its state."),
    "verify": Lazy(_AS, "verify_cmd", "Verify the hash chain, the label file and, optionally, the evidence."),
    "label": Lazy(_AS, "label_cmd", "Print the label rebuilt from the sidecar's log alone (JSON)."),
}

PREFERENCES: dict[str, Lazy] = {
    "pairs": Lazy("benchflow.cli.preferences", "pairs_cmd", "Make the store and the blind assignment."),
    "import": Lazy("benchflow.cli.preferences", "import_cmd", "Check every vote in the file, then add the new ones to the store."),
    "rank": Lazy("benchflow.cli.preferences", "rank_cmd", "Ratings from the store's votes (also written to ratings.v1.json)."),
}

_HB = "benchflow.cli.hub_browse"
_HP = "benchflow.cli.hub_publish"
HUB: dict[str, Lazy] = {
    "list": Lazy(_HB, "list_cmd", "List a hub's datasets or environments (benchflow or primeintellect)."),
    "show": Lazy(_HB, "show_cmd", "Show a dataset's tasks, or a hosted environment's metadata."),
    "inspect": Lazy(_HB, "inspect_cmd", "Inspect a file from a hub environment package."),
    "check": Lazy(_HB, "check_cmd", "Inventory or structurally check representative registry tasks."),
    "publish": Lazy(_HP, "publish_cmd", "Publish a folder of tasks as an immutable dataset version on a BenchFlow Hub."),
    "push": Lazy(_HP, "push_cmd", "Push a finished run (traces, results) to a BenchFlow Hub."),
    "serve": Lazy("benchflow.cli.hub_serve", "serve_cmd", "Serve a BenchFlow Hub: datasets, runs, leaderboards and trajectories."),
    "env": Lazy("", "HUB_ENV", "Alias of bench hub: use bench hub list/show/inspect.", hidden=True),
}

HUB_ENV: dict[str, Lazy] = {
    "list": Lazy(_HB, "list_cmd", HUB["list"].help, notice="Deprecated; use bench hub list."),
    "show": Lazy(_HB, "show_cmd", HUB["show"].help, notice="Deprecated; use bench hub show."),
    "inspect": Lazy(_HB, "inspect_cmd", HUB["inspect"].help, notice="Deprecated; use bench hub inspect."),
}

_E = "benchflow.cli.embodied"
EMBODIED: dict[str, Lazy] = {
    "report": Lazy(_E, "report_cmd", "Per task: rewards by seed, mean, std, pass@k and reset reproducibility."),
    "export": Lazy(_E, "export_cmd", "Write every trial's per-step transitions and episode index "
                                     "(steps.jsonl, episodes.jsonl)."),
    "verify": Lazy(_E, "verify_cmd", "Check each trial's files against its verdict now: record hashes, video "
                                     "copies, reward vs the record."),
    "check-spec": Lazy(_E, "check_spec_cmd", "Validate an embodiment spec."),
    "robo-path": Lazy(_E, "robo_path_cmd", "Print the path of the agent-side robo script (standard library only)."),
}

_S = "benchflow.cli.sandbox"
ENVIRONMENT: dict[str, Lazy] = {
    name: Lazy(module, attr, text, notice=text)
    for name, module, attr, text in (
        ("create", _S, "create_cmd", "Deprecated; use bench sandbox create."),
        ("list", _S, "list_cmd", "Deprecated; use bench sandbox list (local) or bench hub list (hosted)."),
        ("show", _HB, "show_cmd", "Deprecated; use bench hub show."),
        ("inspect", _HB, "inspect_cmd", "Deprecated; use bench hub inspect."),
        ("cleanup", _S, "cleanup_cmd", "Deprecated; use bench sandbox cleanup."),
    )
}

TRAJ: dict[str, Lazy] = {
    "setup": Lazy("benchflow.cli.traj", "setup_cmd", "Install the submit skill, or print the prompt to send to an agent."),
    "upload": Lazy("benchflow.cli.traj", "upload_cmd", "Inspect, redact, confirm, and upload trajectory JSONL."),
    "status": Lazy("benchflow.cli.traj", "status_cmd", "Check whether an uploaded trajectory is verified in storage."),
    "export": Lazy("benchflow.cli.traj_export", "export_cmd", "Export trajectories as ATIF or an Inspect eval log, redacted."),
}

_MON = "benchflow.cli.monitor"
MONITOR: dict[str, Lazy] = {
    "run": Lazy(_MON, "run_cmd", "Score one trajectory under monitor semantics."),
    "replay": Lazy(_MON, "replay_cmd", "Re-score a persisted rollout under monitor semantics."),
    "watch": Lazy(_MON, "watch_cmd", "Stream-score live production events."),
}

DAEMON: dict[str, Lazy] = {
    "start": Lazy("benchflow.cli.daemon", "start_cmd", "Start a private runtime; attach runs with BENCHFLOW_DAEMON=auto."),
    "status": Lazy("benchflow.cli.daemon", "status_cmd", "Show whether this user's local runtime is running."),
    "stop": Lazy("benchflow.cli.daemon", "stop_cmd", "Stop an idle local runtime; never interrupt an active call."),
}

ROOT: dict[str, Lazy] = {
    "new": Lazy(_A, "init_cmd", "Scaffold a new benchmark task."),
    "check": Lazy(_T, "check_cmd", "Validate task structure and the run's plan without starting a sandbox."),
    "import": Lazy(_A, "migrate_cmd", "Convert task.toml + instruction.md into the unified task.md format."),
    "run": Lazy(_RUN, "run_cmd", "Run an agent on tasks and score them; without -a, the oracle."),
    "results": Lazy(_R, "results_cmd", "Summarize jobs; with two, compare them."),
    "view": Lazy("benchflow.cli.view", "view_cmd", "View a trial or session trajectory in the browser."),
    "regrade": Lazy("benchflow.cli.regrade", "regrade_cmd", "Re-run the task's current verifier on each trial's frozen workspace."),
    "export": Lazy(_A, "export_cmd", "Export a task to a compatibility split layout with a loss report."),
    "doctor": Lazy("benchflow.cli.doctor", "doctor_cmd", "Check this machine can run evals: Python/uv, sandbox, agent credentials, network."),
    "agents": Lazy("benchflow.cli.agents", "agents_cmd", "List the agents, or show one in detail."),
    "explain": Lazy(_R, "explain_cmd", "Explain why a trial has no score: what happened, whose problem, what next."),
    "cache": Lazy("", "CACHE", "List or clean what BenchFlow keeps: cached layers, build records, snapshots."),
    "eval": Lazy("", "EVAL", "Run agents on tasks (smoke, run) and read the results (metrics, view, inspect, compare)."),
    "tasks": Lazy("", "TASKS", "Task authoring commands."),
    "agent": Lazy("", "AGENT", "Agent management commands."),
    "bundle": Lazy(_R, "bundle_cmd", "Write one zip of a run's evidence to share, redacted."),
    "branch": Lazy("benchflow.cli.branch", "branch_cmd", "Fork an agent run at a checkpoint into labelled children."),
    "sandbox": Lazy("", "SANDBOX", "Sandboxes: create, list, attach, release and clean up (cleanup also removes leftover Docker containers)."),
    "train": Lazy("benchflow.cli.train", "train_cmd", "Training data commands."),
    "skills": Lazy("", "SKILLS", "Skill discovery and evaluation."),
    "review": Lazy("benchflow.cli.review", "review_cmd", "Grade finished rollouts against a rubric with a reviewer agent."),
    "assess": Lazy("", "ASSESS", "Blind pairwise human assessments of saved outputs, kept in an opt-in sidecar."),
    "preferences": Lazy("", "PREFERENCES", "Human preferences and rubric scores on finished trials."),
    "hub": Lazy("", "HUB", "Environment hubs: browse (list/show/inspect), check registry tasks, publish datasets and push runs to a BenchFlow Hub."),
    "traj": Lazy("", "TRAJ", "Trajectory commands."),
    "daemon": Lazy("", "DAEMON", "Manage the opt-in warm local runtime."),
    "environment": Lazy("", "ENVIRONMENT", "Deprecated; use bench sandbox / bench hub.", hidden=True),
    "adopt": Lazy("", "ADOPT", "deprecated; use bench eval adopt.", hidden=True),
    "embodied": Lazy("", "EMBODIED", "Embodied rollouts (robots and simulators): reports, evidence checks, export, "
                                     "specs.", hidden=True),
    "monitor": Lazy("", "MONITOR", "Monitor mode; score a rollout in production (#386).", hidden=True),
    "continue": Lazy(_C, "continue_cmd", "Resume a previous unfinished (timed-out) OpenHands run to completion. "
                     "(DEPRECATED)", hidden=True, notice="Deprecated; use bench eval continue."),
    "continue-batch": Lazy(_C, "continue_batch_cmd", "Continue all timed-out OpenHands runs under a directory tree. "
                           "(DEPRECATED)", hidden=True, notice="Deprecated; use bench eval continue-batch."),
}
"""Rows with an empty module are sub-groups: ``attr`` names the table above."""

GROUP_DEFAULTS = {"cache": "list"}
"""Groups that run a default command when given none (``bench cache`` = ``bench cache list``)."""


def available(entry: Lazy) -> bool:
    """A row is listed only when its module is part of this build (checked without importing)."""
    if not entry.module:
        return any(available(e) for e in globals()[entry.attr].values())
    return importlib.util.find_spec(entry.module) is not None


def load(entry: Lazy, name: str) -> Any:
    if not entry.module:
        group = make_group(name, globals()[entry.attr], entry.help)
        group.hidden = entry.hidden
        return group
    obj = getattr(importlib.import_module(entry.module), entry.attr)
    command = typer.main.get_command(obj) if isinstance(obj, typer.Typer) else obj
    if entry.notice:  # a copy: the target's own row keeps its name and help
        command = copy.copy(command)
        first, _, rest = (command.help or "").partition("\n\n")
        command.help = "\n\n".join(part for part in (entry.help, first not in entry.help and first, rest) if part)
        command.short_help = entry.help
    # Shell completion is installed from the root command only.
    command.params = [p for p in command.params if p.name not in {"install_completion", "show_completion"}]
    command.name = name
    if entry.hidden:
        command.hidden = True
    for param in command.params:
        defer_coercion(param)
    return command


class _UntilGiven:
    """Stands in for the coercer Typer builds per parameter (a pydantic adapter, 88 for ``bench run``)
    before it coerces the value, given or not: an option left out (None) comes back as Typer's own
    coercer returns it, and Typer's coercer is built only for a value."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:  # what Typer's coercer returns for a missing value
            return () if param.multiple or param.nargs == -1 else None
        param._runtime_param = None
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def defer_coercion(param: Any) -> None:
    """Build ``param``'s coercer when it first gets a value (Typer versions that build one lazily
    per parameter; others are left as they are)."""
    if getattr(param, "_runtime_param", False) is None and hasattr(param, "get_runtime_param"):
        param._runtime_param = _UntilGiven()


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands come from a table and are imported on demand."""

    table: dict[str, Lazy] = {}
    default_command: str | None = None
    """Run when the group is given no command (``bench cache`` = ``bench cache list``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.default_command and (not args or (args[0].startswith("-") and args[0] not in ("--help", "-h"))):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        return [name for name, entry in self.table.items() if available(entry)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any | None:
        entry = self.table.get(cmd_name)
        return load(entry, cmd_name) if entry and available(entry) else None

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        # Only a command about to run is resolved (help listings call get_command), so an older
        # spelling's notice goes out once, before its flags are parsed: a usage error or --help too.
        name, command, rest = super().resolve_command(ctx, args)
        entry = self.table.get(name or "")
        if entry is not None and entry.notice:
            typer.echo(f"{ctx.command_path} {name}: {entry.notice}", err=True)
        return name, command, rest

    def get_params(self, ctx: Any) -> list[Any]:
        # Typer leaves unset boolean flags (--help, --install-completion) at None, and coercing None
        # imports its pydantic adapters (~0.2 s) on every `bench GROUP ...`; False needs no coercion.
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_bool_flag", False) and param.default is None:
                param.default = False
        return params


def lazy_group(table: dict[str, Lazy]) -> type[LazyGroup]:
    return type("LazyGroupFor", (LazyGroup,), {"table": table})


def make_group(name: str, table: dict[str, Lazy], help_text: str) -> Any:
    default = GROUP_DEFAULTS.get(name)
    cls = type("LazyGroupFor", (LazyGroup,), {"table": table, "default_command": default})
    app = typer.Typer(cls=cls, help=help_text, rich_markup_mode="rich", no_args_is_help=default is None,
                      add_completion=False)

    @app.callback()
    def group() -> None:
        pass

    command = typer.main.get_command(app)
    command.name = name
    return command


def _version(value: bool) -> None:
    if value:
        from benchflow import __version__

        typer.echo(f"benchflow {__version__}")
        raise typer.Exit()


def build_app() -> Any:
    app = typer.Typer(
        cls=lazy_group(ROOT),
        help="The universal environment framework; run, author, and adopt agent benchmarks across any environment.",
        no_args_is_help=True,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["--help", "-h"]},
    )

    @app.callback()
    def root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Show the version and exit."),
        verbose: bool = typer.Option(False, "--verbose", "-v",
                                     help="Print debug logs, with the traceback of each failed trial "
                                          "(the same as BENCHFLOW_LOG_LEVEL=DEBUG). Goes before the command: bench -v run …"),
    ) -> None:
        if verbose:
            import logging
            import os

            os.environ["BENCHFLOW_LOG_LEVEL"] = "DEBUG"
            logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")

    return typer.main.get_command(app)
