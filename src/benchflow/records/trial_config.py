"""``config.json``: the settings one trial ran with (contracts §3.2), written before its sandbox starts.

Apart from :mod:`.trial` (the records written once a trial has run) so that ``bench run`` builds
only this model before its first container starts.
"""

from typing import Any

from pydantic import Field

from .base import Record


class TrialConfig(Record):
    """``config.json``: the settings one trial ran with, written before it starts.

    ``agent`` is the agent's name as given to ``bench run -a`` (0.7 wrote the
    same key). The settings resume compares (``jobs.job.CHANGE_KEYS``) are the
    ones named there; a trial whose recorded value differs is not reused.
    """

    task_path: str | None = Field(None, description="The task folder the trial ran (as given, or resolved).")
    task_name: str | None = Field(None, description="The task's name (its folder name).")
    task_digest: str | None = Field(None, description="sha256:<hex> of the task's content (contracts §1.9).")
    source: dict[str, Any] | None = Field(None, description="Where fetched tasks came from (-d, --source-repo, a "
                                          "repository target): registry, repo, path, ref, commit; null: local.")
    dataset_name: str | None = Field(None, description="The registry dataset run with -d, or null.")
    dataset_version: str | None = Field(None, description="Its version, or null.")
    agent: str | None = Field(None, description="The agent's name, as given to -a.")
    agent_version: str | None = Field(None, description="What was installed, as pinned: the registry agent's "
                                      "packages (name@1.2.3); null for controls. 0.7 wrote the same key.")
    model: str | None = Field(None, description="The model the agent was asked to use; null for controls.")
    reasoning_effort: str | None = Field(None, description="The reasoning effort asked for, or null.")
    sandbox_user: str | None = Field(None, description="The user the agent ran as inside the sandbox.")
    agent_env: dict[str, str] | None = Field(None, description="The agent's extra environment, secret-looking "
                                             "entries dropped (never a secret value).")
    prompts_sha256: str | None = Field(None, description="sha256:<hex> of the resolved prompts (prompts.json).")
    timeout_multiplier: float | None = Field(None, description="Multiplier applied to the task's agent timeout.")
    extra_instruction: str | None = Field(None, description="Text appended to the task's instruction, or null.")
    config_override: dict[str, Any] | None = Field(None, description="The --config-override applied: keys, "
                                                   "sha256, patch.")
    harness_mode: str | None = Field(None, description="acp or native; null for control agents.")
    environment: str | None = Field(None, description="The sandbox backend the trial ran on.")
    verifier_sandbox: str | None = Field(None, description="task (the verifier ran in the agent's sandbox) or "
                                         "separate (a fresh one from the frozen workspace); null in records "
                                         "written before it was recorded, which ran as task.")
    sandbox_fit: dict[str, Any] | None = Field(None, description="How the backend met the task's sandbox "
                                               "request: image (source prebuilt|dockerfile, the pinned image, "
                                               "why it was not used), cpus/memory_mb/network asked and granted "
                                               "(benchflow.sandbox.fit).")
    base_image_override: str | None = Field(None, description="The base image given with --base-image, or null.")
    timeout_sec: float | None = Field(None, description="The agent's wall-clock budget in seconds; null = none.")
    concurrency: int | None = Field(None, description="The job's concurrency when this trial ran.")
    agent_idle_timeout_sec: float | None = Field(None, description="The idle watchdog as asked for (0 = off, "
                                                 "null = the default).")
    started_at: str | None = Field(None, description="Local start time, no zone (str(datetime)).")
    attempt: int | None = Field(None, description="1 for the first attempt of this task, 2+ for retries.")
    seed: int | None = Field(None, description="The --seeds value, exported as BENCHFLOW_SEED; null without.")
    benchflow_version: str | None = Field(None, description="The BenchFlow version that wrote the record.")
    skill_mode: str | None = Field(None, description="no-skill, with-skill or self-gen (--skill-mode).")
    skill_source: str | None = Field(None, description="What the deployed skills came from, joined by '+': "
                                     "task, skills-dir, skill-creator; none when nothing was deployed.")
    requested_skills_dir: str | None = Field(None, description="The skills folder asked for: --skills-dir, "
                                             "the skill creator, or the task's sandbox.skills_dir.")
    effective_skills_dir: str | None = Field(None, description="The folders actually deployed, comma-separated "
                                             "(host paths, or sandbox paths for an absolute skills_dir).")
    skills_sandbox_dir: str | None = Field(None, description="Where in the sandbox the agent finds them (its "
                                           "registry skill path, $HOME unexpanded); null when none deployed.")
    include_task_skills: bool | None = Field(None, description="--task-skills: the task's environment/skills "
                                             "were deployed too.")
    scenes: list[dict[str, Any]] | None = Field(None, description="A multi-role task's scenes as run: "
                                                "[{name, skills_dir, roles: [{name, agent, model, reasoning_effort, "
                                                "timeout_sec, idle_timeout_sec, skills_dir, capabilities, env_keys}], "
                                                "turns: [{role, has_prompt}]}]; [] for a task without scenes, null in "
                                                "records written before it was recorded.")
    continued_from: str | None = Field(None, description="bench eval continue: the timed-out trial folder this "
                                       "trial resumes (absolute path); null for any other trial.")
    self_gen_no_internet: bool | None = Field(None, description="--self-gen-no-internet: the self-gen agent's "
                                              "web tools were turned off (benchflow.skills.web_tools).")
    loop: dict[str, Any] | None = Field(None, description="--loop-strategy as run: {strategy, params: {k, "
                                        "feedback}}; null when none was given (single-shot).")
    environment_manifest: dict[str, Any] | None = Field(None, description="The stateful environment bound with "
                                                        "--environment-manifest / --state: {name, image, base_image, "
                                                        "owns_lifecycle, isolation, services, bound_by, spec, path, "
                                                        "env_hash, tools}; null when none.")
    context_root: str | None = Field(None, description="--context-root: the repository root Dockerfile COPY "
                                     "sources were staged from, or null.")
    codex_apps_policy: str | None = Field(None, description="codex-acp trials: the Codex account Apps policy "
                                          "applied, disabled or inherit (codex_apps_policy.json has the proof).")
    executor: dict[str, Any] | None = Field(None, description="Where the trial ran when not in the driver's "
                                            "process (--executor ray): kind (ray), cluster, node_id, node_ip, "
                                            "hostname; lost: true when the node died before it finished. "
                                            "null for in-process trials.")
