"""The options of ``bench run`` / ``bench eval run``, grouped, as ``Annotated`` types.

``cli/run.py`` declares each parameter as ``name: O.Alias = default``; the help text, names and
visibility live here, one group per concern, so another command that takes the same option
(``--sandbox``, ``--allow-task-env``, ``--ca-bundle`` …) can reuse the alias instead of a copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional, get_args

import typer

ALLOW_TASK_ENV_HELP = ("Let tasks read this variable of your environment (a ${NAME} env value, or their "
                       "docker-compose.yaml); repeatable. A task reading an unnamed one is refused; "
                       "${NAME:-default} gets the default")


# What runs: tasks, agent and prompts
Agent = Annotated[Optional[str], typer.Option("--agent", "-a", help="The agent: a name bench agents lists, or nop (does nothing) (default: oracle, the task's reference solution)")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="The model, in the agent's own naming")]
Effort = Annotated[Optional[str], typer.Option("--effort", "--reasoning-effort", "-e", help="Reasoning effort, when the agent exposes one (low, medium, high, max, …)")]
Harness = Annotated[Optional[str], typer.Option("--harness", help="How the agent runs: acp (default, its ACP adapter) or native (its own CLI in headless JSON mode; claude-agent-acp and codex-acp)")]
AgentEnv = Annotated[Optional[list[str]], typer.Option("--agent-env", "--env", help="Environment variable for the agent, KEY=VALUE (repeatable)")]
Prompt = Annotated[Optional[list[str]], typer.Option("--prompt", hidden=True, help="Prompt(s) to send (default: the task prompt: the task.md body, or instruction.md for older tasks); @instruction is the task prompt")]
ExtraInstruction = Annotated[Optional[str], typer.Option("--extra-instruction", help="Text appended to every task's instruction")]
Config = Annotated[Optional[Path], typer.Option("--config", "--run-config", help="YAML run-config file (the whole run spec)")]
ConfigOverride = Annotated[Optional[str], typer.Option("--config-override", hidden=True, help="Deep-merge a config patch into each task's resolved config for this run. Inline JSON/YAML/TOML or an @file ref, e.g. --config-override '{\"agent\":{\"timeout_sec\":120}}'. Varies one knob (budget, skills, stopping rules: any section but task, source and schema_version) while the tasks, agent, model and environment stay fixed; recorded by content hash for replay.")]
TasksDir = Annotated[Optional[Path], typer.Option("--tasks-dir", hidden=True, help="Local tasks directory")]
Matrix = Annotated[Optional[Path], typer.Option("--matrix", hidden=True, help="YAML file whose models: maps each alias to a model, or to {model, agent, agent_env}; {agent: oracle} for a control")]
Trials = Annotated[Optional[int], typer.Option("--trials", help="Run every task N times (pass@k); each repeat is a job of its own, in <jobs dir>/<agent>/trial-NN  [default: 1]")]
Seeds = Annotated[Optional[str], typer.Option("--seeds", hidden=True, help="Seeded rollouts: run every task once per seed, e.g. 0-4 or 0,3,7 (BENCHFLOW_SEED is set for the agent, the oracle and the verifier). summary.json gets pass@k and variance per task.")]

# Which tasks
Include = Annotated[Optional[list[str]], typer.Option("--include", "-i", help="Only tasks whose names match: a name, or a glob pattern such as 'hard-*' (comma-separated or repeated)")]
Exclude = Annotated[Optional[list[str]], typer.Option("--exclude", "-x", help="Skip tasks whose names match (same patterns as --include)")]
Limit = Annotated[Optional[int], typer.Option("--limit", "--n-tasks", "-n", help="Run at most N tasks: the first N by name, or a seeded random sample with --sample-seed")]
SampleSeed = Annotated[Optional[int], typer.Option("--sample-seed", hidden=True, help="Seed for the --n-tasks random sample")]
Dataset = Annotated[Optional[str], typer.Option("--dataset", "-d", help="A dataset instead of a target: name@version from a registry, or org/name@version from a BenchFlow Hub")]
Registry = Annotated[Optional[str], typer.Option("--registry", help="The registry for --dataset: a URL, a file or hub:<url> (BenchFlow's or Harbor's format), or harbor for Harbor's registry (default: BenchFlow's registry, then Harbor's; $BENCHFLOW_HUB_URL for an org/name dataset)")]
Hub = Annotated[Optional[str], typer.Option("--hub", hidden=True, help="Read --dataset from this BenchFlow Hub, as the bench hub commands' --hub does (the same as --registry hub:<url>)")]
IgnoreBenchVersion = Annotated[bool, typer.Option("--ignore-bench-version", hidden=True, help="Run a dataset even when this bench version is outside the range it was validated against. Only valid with --dataset.")]
SourceRepo = Annotated[Optional[str], typer.Option("--source-repo", help="GitHub repo of the tasks as org/repo (e.g. benchflow-ai/skillsbench)")]
SourcePath = Annotated[Optional[str], typer.Option("--source-path", help="Folder in the repo: one task (tasks/econ-detrending-correlation) or a folder of tasks (tasks). Only this folder is downloaded")]
SourceRef = Annotated[Optional[str], typer.Option("--source-ref", hidden=True, help="Branch, tag or full commit SHA to fetch (e.g. main)")]
SourceEnv = Annotated[Optional[str], typer.Option("--source-env", hidden=True, help="Hosted environment source (e.g. primeintellect/general-agent)")]
SourceEnvVersion = Annotated[Optional[str], typer.Option("--source-env-version", hidden=True, help="Hosted environment version")]
SourceEnvArg = Annotated[Optional[list[str]], typer.Option("--source-env-arg", hidden=True, help="Hosted environment arg as KEY=VALUE; repeatable")]
SourceEnvNumExamples = Annotated[Optional[int], typer.Option("--source-env-num-examples", min=1, hidden=True, help="Number of env examples  [default: 1]")]
SourceEnvRolloutsPerExample = Annotated[Optional[int], typer.Option("--source-env-rollouts-per-example", min=1, hidden=True, help="Rollouts per hosted env example  [default: 1]")]
SourceEnvMaxTokens = Annotated[Optional[int], typer.Option("--source-env-max-tokens", min=1, hidden=True, help="Max tokens for hosted env run  [default: 1024]")]
SourceEnvTemperature = Annotated[Optional[float], typer.Option("--source-env-temperature", hidden=True, help="Temperature for hosted env run (default: none sent, so the provider's own)")]
SourceEnvSamplingArg = Annotated[Optional[list[str]], typer.Option("--source-env-sampling-arg", hidden=True, help="Hosted env sampling arg as KEY=VALUE; repeatable (e.g. reasoning_effort=minimal)")]
SourceEnvVerifiersVersion = Annotated[Optional[str], typer.Option("--source-env-verifiers-version", hidden=True, help="Pin the verifiers release installed with the hosted env (default: the env package's own requirement)")]
SourceEnvBaseUrl = Annotated[Optional[str], typer.Option("--source-env-base-url", hidden=True, help="Model endpoint for the hosted env run (default: verifiers' own, Prime inference with PRIME_API_KEY)")]
SourceEnvApiKeyVar = Annotated[Optional[str], typer.Option("--source-env-api-key-var", hidden=True, help="Name of the environment variable holding that endpoint's API key")]
ExpectedTasks = Annotated[Optional[int], typer.Option("--expected-tasks", hidden=True, help="Fail unless the selected task count matches")]

# Where and how: sandbox, concurrency, job folder
Sandbox = Annotated[Optional[str], typer.Option("--sandbox", "-s", help="Where trials run: docker, remote-docker, podman, docker+runsc (gVisor), local, daytona (DAYTONA_API_KEY) or modal (MODAL_TOKEN_ID/MODAL_TOKEN_SECRET) (default: docker when an engine answers, else local; modal for tasks that ask for GPUs when its token is set)")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", "-j", help="Trials running at a time (up to --warm-pool more are prepared ahead)")]
WarmPool = Annotated[Optional[int], typer.Option("--warm-pool", help="Sandboxes prepared ahead of their trial's turn, beyond the running ones (0 to --concurrency; default 1, or 0 at -j 1)")]
BuildConcurrency = Annotated[Optional[int], typer.Option("--build-concurrency", hidden=True, help="Max concurrent docker image builds. Defaults to --concurrency. Set lower (e.g. 8) when --concurrency is high to avoid overwhelming the docker daemon with parallel builds.")]
WorkerConcurrency = Annotated[Optional[int], typer.Option("--worker-concurrency", hidden=True, help="Run batch eval through isolated worker subprocesses, each with at most this many concurrent tasks; --concurrency remains the aggregate target.")]
WorkerRetries = Annotated[Optional[int], typer.Option("--worker-retries", hidden=True, help="Retry a crashed worker shard this many times, resuming its jobs_dir.  [default: 1]")]
WorkerStartStagger = Annotated[Optional[float], typer.Option("--worker-start-stagger-sec", hidden=True, help="Seconds to stagger worker starts to avoid Daytona connection storms.  [default: 1.0]")]
Executor = Annotated[Optional[str], typer.Option("--executor", hidden=True, help="Where trials run: in-process (default), ray (the Ray cluster at $RAY_ADDRESS or started on this machine, else a new local one) or ray://HOST:PORT (Ray Client); each node needs benchflow and a sandbox backend (docs/ray.md). Needs pip install 'benchflow\\[ray]'")]
JobsDir = Annotated[Optional[str], typer.Option("--jobs-dir", help="Where job folders go (default: jobs); a plain rerun resumes its latest job")]
JobName = Annotated[Optional[str], typer.Option("--job", "--job-name", help="Job name under --jobs-dir (an existing job is resumed)")]
Fresh = Annotated[bool, typer.Option("--fresh", help="Start a new job instead of resuming the latest one in --jobs-dir")]
RestartChanged = Annotated[bool, typer.Option("--restart-changed", hidden=True, help="When the named job ran with other settings or task files, set those trials aside and run them again (default: refuse)")]
SandboxUser = Annotated[Optional[str], typer.Option("--sandbox-user", hidden=True, help="Sandbox user (null for root)  [default: agent]")]
BaseImageOverride = Annotated[Optional[str], typer.Option("--base-image-override", hidden=True, help="Rewrite task Dockerfile FROM images on the runtime task copy.")]
CaBundle = Annotated[Optional[str], typer.Option("--ca-bundle", hidden=True, help="Trust this CA bundle (PEM) inside image builds and sandboxes, for TLS-intercepting proxies; 'host' uses this machine's bundle ($SSL_CERT_FILE or the system one)")]
FreshInstall = Annotated[bool, typer.Option("--fresh-install", hidden=True, help="Install the agent in every trial instead of starting from its cached image layer (same as BENCHFLOW_FRESH_INSTALL=1)")]
SandboxSetupTimeout = Annotated[Optional[int], typer.Option("--sandbox-setup-timeout", min=1, help="Timeout (seconds) for sandbox user setup inside the environment (default: 120; keeps the file's value with --config).")]
KeepSandbox = Annotated[Optional[str], typer.Option("--keep-sandbox", help="Keep a trial's sandbox: on-failure, always or never (default). bench sandbox attach <trial> opens a shell in it; bench sandbox release <trial> deletes it.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the plan as JSON and the run card on stderr, and run nothing; exits 1 when the run card would refuse the run.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print only warnings, errors and the final score")]

# Time, budgets and retries
TimeoutMultiplier = Annotated[Optional[float], typer.Option("--timeout-multiplier", help="Scale every task's agent timeout, e.g. 2.0")]
IdleTimeout = Annotated[Optional[str], typer.Option("--agent-idle-timeout", "--idle-timeout", help="Abort a prompt when the agent is silent this long: seconds or 90s, 10m, 1h; 0 or none turns it off (default: 10m, 30m at effort xhigh or max)")]
MaxCostUsd = Annotated[Optional[float], typer.Option("--max-cost-usd", help="Job budget in USD, checked between starts, so a job can pass it by about one rollout's cost; at the cap running rollouts are cancelled. With --trials, each repeat has its own cap")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="Job budget in tokens, checked between starts like --max-cost-usd. With --trials, each repeat has its own cap")]
MaxSandboxSeconds = Annotated[Optional[float], typer.Option("--max-sandbox-seconds", hidden=True, help="Job budget in trial wall-clock seconds, running trials included and re-checked as they run; at the cap running trials are cancelled")]
MaxRollouts = Annotated[Optional[int], typer.Option("--max-rollouts", hidden=True, help="Job budget in rollouts started, retries included: at the cap no rollout starts and running ones finish")]
TokenBudget = Annotated[Optional[int], typer.Option("--token-budget", hidden=True, help="Per-trial budget in tokens (input, cached included, plus output): BenchFlow's model gateway refuses the next model call once it is spent, the agent is stopped and its work graded")]
TurnBudget = Annotated[Optional[int], typer.Option("--turn-budget", hidden=True, help="Per-trial budget in turns, one turn being one model call through BenchFlow's model gateway; enforced like --token-budget")]
RetryPolicy = Annotated[Optional[str], typer.Option("--retry-policy", hidden=True, help="Retry policy: default or unscored-only  [default: default]")]
RetryConcurrency = Annotated[Optional[int], typer.Option("--retry-concurrency", hidden=True, help="Run at most this many retry attempts at once (first attempts never wait for one); with worker shards, for all workers together")]
RetryAttempts = Annotated[Optional[int], typer.Option("--retry-attempts", hidden=True, help="Retries per task after a retryable failure (overrides the default of 2)")]
Checkpoints = Annotated[Optional[str], typer.Option("--checkpoints", hidden=True, help="Keep a sandbox snapshot after these prompts: every-prompt or prompt:N[,M]. Later bench branch --from-checkpoint <trial> forks from one. Needs a sandbox that can keep snapshots (docker); each is a full filesystem image.")]
CheckpointKeep = Annotated[Optional[int], typer.Option("--checkpoint-keep", min=1, hidden=True, help="Keep at most this many checkpoints per trial (default 3, or a run config's checkpoint_keep); the oldest is deleted.")]
RetryFromCheckpoint = Annotated[Optional[str], typer.Option("--retry-from-checkpoint", hidden=True, help="on-failure, on-timeout, or both: when a trial fails or times out, fork one retry from its last --checkpoints snapshot, verified the same way. The trial's reward is kept; the retry's is reported next to it (result.json retry block, summary checkpoint_retries).")]
RetryPrompt = Annotated[Optional[str], typer.Option("--retry-prompt", hidden=True, help="Prompt for the retry, replacing the prompts after the checkpoint (the default). '@instruction' is the task instruction, '@verifier_feedback' the failed trial's reward and verifier output tail.")]
RetryResumeSession = Annotated[bool, typer.Option("--retry-resume-session", hidden=True, help="The retry resumes the failed trial's conversation at the checkpoint (ACP session/load; Claude Code) instead of a fresh session.")]

# Verification, skills and trust
VerifierSandbox = Annotated[Optional[str], typer.Option("--verifier-sandbox", help="task or separate. separate runs every task's verifier in a fresh sandbox that gets only the workspace and declared artifacts; a task it cannot run there refuses the whole run before anything starts (default: task, each task's own choice)")]
SeparateVerifier = Annotated[bool, typer.Option("--separate-verifier", hidden=True, help="Run each verifier in a fresh sandbox built from the verifier image that receives only the frozen workspace, declared artifacts and /logs/artifacts, as if every task set [verifier].sandbox_mode = 'separate'.")]
SeparateVerifierInclude = Annotated[Optional[list[str]], typer.Option("--separate-verifier-include", hidden=True, help="A path outside the workspace that a separate verifier sandbox receives too, at the same path, for tasks whose agent writes graded files there (e.g. /root when the workspace is /app). Repeatable.")]
FreezeWorkspace = Annotated[bool, typer.Option("--freeze-workspace", "--save-outputs", help="Save each trial's final workspace before the verifier runs, so bench regrade can score it again")]
TaskSkills = Annotated[Optional[bool], typer.Option("--task-skills/--no-task-skills", help="Install the task's own skills (environment/skills) for the agent; left out by default, as in BenchFlow 0.8")]
SkillsDir = Annotated[Optional[Path], typer.Option("--skills-dir", hidden=True, help="Skills directory to deploy")]
SkillMode = Annotated[Optional[str], typer.Option("--skill-mode", hidden=True, help="Skill mode: no-skill, with-skill, or self-gen  [default: no-skill]")]
SkillCreatorDir = Annotated[Optional[Path], typer.Option("--skill-creator-dir", hidden=True, help="Path to skill-creator or a skills root containing it")]
AllowTaskEnv = Annotated[Optional[list[str]], typer.Option("--allow-task-env", hidden=True, help=ALLOW_TASK_ENV_HELP)]
AllowCloudMetadata = Annotated[bool, typer.Option("--allow-cloud-metadata", help="Let the agent reach the cloud metadata endpoints under an open network (no block; each trial records the opt-out). Without it, or the task's allow_cloud_metadata = true, the agent starts only behind the block: by construction where the sandbox can (local; docker on a bridge network), else once a probe finds no metadata service")]
HostLogin = Annotated[bool, typer.Option("--host-login", hidden=True, help="Copy this machine's subscription login (e.g. ~/.claude) into the sandbox for an agent with no API key; off by default, so no host credential enters a sandbox")]
CaptureTokens = Annotated[bool, typer.Option("--capture-tokens", hidden=True, help="Ask OpenAI-compatible model servers (vLLM, SGLang) for token ids and logprobs and record them per call in llm_trajectory.jsonl (token_capture), for bench train; the agent does not see it (also BENCHFLOW_CAPTURE_TOKENS=1)")]
UsageTracking = Annotated[Optional[str], typer.Option("--usage-tracking", hidden=True, help="Telemetry-enforcement policy: auto, required, or off. Every model call of a non-control agent goes through BenchFlow's model gateway (usage, cost and llm_trajectory.jsonl are always captured); required fails a trial whose calls carried no trusted usage.")]
Integrity = Annotated[Optional[str], typer.Option("--integrity", help="off, audit (record what the agent did and check it against the task) or strict (audit, and the verifier in a separate sandbox). The verdict is in integrity/claim_verdict.json; rewards never change.")]

# Gates and outputs
FailUnder = Annotated[Optional[float], typer.Option("--fail-under", help="Exit 1 when the pass rate over the planned tasks is below this (0 to 1)")]
FailOn = Annotated[Optional[list[str]], typer.Option("--fail-on", hidden=True, help="Exit 1 when any trial ended this way: timeout, error, verifier-error (comma-separated or repeated)")]
SummaryOut = Annotated[Optional[Path], typer.Option("--summary-out", hidden=True, help="Write the run's benchflow.run-summary JSON (job dir, counts, gate) here")]
TaskManifestOut = Annotated[Optional[Path], typer.Option("--task-manifest-out", hidden=True, help="Write selected task-set manifest JSON")]
RunConfigOut = Annotated[Optional[Path], typer.Option("--run-config-out", hidden=True, help="Write redacted normalized run config JSON")]
HealthSummaryOut = Annotated[Optional[Path], typer.Option("--health-summary-out", hidden=True, help="Write trajectory health summary JSON")]
Canonicalize = Annotated[Optional[str], typer.Option("--canonicalize", hidden=True, help="Canonicalization policy: none or one-healthy-per-task  [default: none]")]
CanonicalSelectionOut = Annotated[Optional[Path], typer.Option("--canonical-selection-out", hidden=True, help="Write canonical rollout-selection JSON (default: <job>/canonical-selection.json)")]
CanonicalJobsDir = Annotated[Optional[Path], typer.Option("--canonical-jobs-dir", hidden=True, help="Materialize selected rollout dirs for trainer conversion")]
AcceptDeviations = Annotated[Optional[str], typer.Option("--accept-deviations", help="Why this run differs from its task set's run-reference.toml (a strict one refuses the run without it); kept in run-card.json.")]

# Publishing the finished job to Hugging Face (benchflow.hf.publish; HF_TOKEN from the environment only)
PublishHf = Annotated[Optional[str], typer.Option("--publish-hf", hidden=True, help="Upload final eval artifacts to a HF dataset repo")]
PublishBucket = Annotated[Optional[str], typer.Option("--publish-bucket", hidden=True, help="Upload final eval artifacts to a HF bucket")]
HfPrefix = Annotated[Optional[str], typer.Option("--hf-prefix", hidden=True, help="Path prefix in the HF repo")]
HfPublicReadCheck = Annotated[bool, typer.Option("--hf-public-read-check", hidden=True, help="Verify public HF reads after upload")]
EvalResultsModel = Annotated[Optional[str], typer.Option("--eval-results-model", hidden=True, help="HF model repo to open a community eval-results PR on")]
EvalResultsDataset = Annotated[Optional[str], typer.Option("--eval-results-dataset", hidden=True, help="HF benchmark dataset id, e.g. org/benchmark")]
EvalResultsTask = Annotated[Optional[str], typer.Option("--eval-results-task", hidden=True, help="Benchmark task_id from the dataset's eval.yaml")]

SelfGenNoInternet = Annotated[bool, typer.Option("--self-gen-no-internet", hidden=True, help="Disable web tools for the self-generated run")]

# Run flags of issue #34, each in its feature's panel (loop/, environment_plane/, context_root/, codex_apps/)
LoopStrategy = Annotated[Optional[str], typer.Option("--loop-strategy", hidden=True, help="Harness loop strategy, e.g. 'verify-retry:k=3,feedback=names', 'self-review:k=3', or 'single-shot' (default). verify-retry re-prompts with filtered soft-verifier feedback; self-review re-prompts the agent to critique its OWN work (no verifier signal); both loop until the soft verifier passes or k retries are spent.")]
EnvironmentManifest = Annotated[Optional[str], typer.Option("--environment-manifest", hidden=True, metavar="<path|name@version>", help="Environment-plane manifest applied to every rollout: a path to an environment.toml, OR a 'name@version' registry spec resolved via $BENCHFLOW_ENV_REGISTRY when set, else the built-in registry shipped with benchflow (env0@prod, env0@outage). The manifest-declared stateful environment is provisioned, gated on readiness, and torn down.")]
State = Annotated[Optional[str], typer.Option("--state", hidden=True, help="The stateful environment to bind, apart from the task. Inline JSON with an optional tool subset (e.g. {\"name\": \"env0\", \"tools\": [\"gmail\", \"gcal\"]}), OR a name@version spec, OR a manifest path. Takes precedence over --environment-manifest.")]
ContextRoot = Annotated[Optional[Path], typer.Option("--context-root", hidden=True, help="Repo/build-context root used to stage Dockerfile COPY sources for monorepo-authored local tasks.")]
CodexAppsPolicy = Annotated[Optional[str], typer.Option("--codex-apps-policy", hidden=True, help="Codex account Apps: disabled (scored-task default) or inherit (explicit opt-in).")]


# The help's panels: the engine's settings by concern, and each feature of ``jobs.extensions`` its own
# (``bench run --help-all`` shows every one).
REVIEW_PANEL = "Review and integrity (feature)"
PANELS: dict[str, tuple[object, ...]] = {
    "Agent and prompts": (Agent, Model, Effort, Harness, AgentEnv, Prompt, ExtraInstruction, Config, ConfigOverride,
                          TasksDir, Matrix, Trials, Seeds),
    "Tasks": (Include, Exclude, Limit, SampleSeed, Dataset, Registry, Hub, IgnoreBenchVersion, SourceRepo,
              SourcePath, SourceRef, ExpectedTasks),
    "Sandbox and job folder": (Sandbox, Concurrency, WarmPool, BuildConcurrency, JobsDir, JobName, Fresh,
                               RestartChanged, SandboxUser, SandboxSetupTimeout, BaseImageOverride, CaBundle, FreshInstall, KeepSandbox,
                               DryRun, Quiet),
    "Time, budgets and retries": (TimeoutMultiplier, IdleTimeout, MaxCostUsd, MaxTokens, MaxSandboxSeconds,
                                  MaxRollouts, TokenBudget, TurnBudget, RetryPolicy, RetryAttempts, RetryConcurrency),
    "Verifier": (FreezeWorkspace,),
    "Trust": (AllowTaskEnv, AllowCloudMetadata, HostLogin, CaptureTokens, UsageTracking),
    "Gates and outputs": (FailUnder, FailOn, SummaryOut, TaskManifestOut, RunConfigOut, HealthSummaryOut,
                          Canonicalize, CanonicalSelectionOut, CanonicalJobsDir, AcceptDeviations),
    "Publishing to Hugging Face": (PublishHf, PublishBucket, HfPrefix, HfPublicReadCheck, EvalResultsModel,
                                   EvalResultsDataset, EvalResultsTask),
    "Skills (feature)": (TaskSkills, SkillsDir, SkillMode, SkillCreatorDir, SelfGenNoInternet),
    "Loop strategy (feature)": (LoopStrategy,),
    "Environment plane: stateful environment (feature)": (EnvironmentManifest, State),
    "Context root (feature)": (ContextRoot,),
    "Codex apps (feature)": (CodexAppsPolicy,),
    "Checkpoints (feature)": (Checkpoints, CheckpointKeep, RetryFromCheckpoint, RetryPrompt, RetryResumeSession),
    "Separate verifier (feature)": (VerifierSandbox, SeparateVerifier, SeparateVerifierInclude),
    "Shards: worker subprocesses (feature)": (WorkerConcurrency, WorkerRetries, WorkerStartStagger),
    "Executors (feature)": (Executor,),
    REVIEW_PANEL: (Integrity,),
    "Hosted env: tasks from Prime Intellect's Environments Hub (feature)": (
        SourceEnv, SourceEnvVersion, SourceEnvArg, SourceEnvNumExamples, SourceEnvRolloutsPerExample,
        SourceEnvMaxTokens, SourceEnvTemperature, SourceEnvSamplingArg, SourceEnvVerifiersVersion, SourceEnvBaseUrl,
        SourceEnvApiKeyVar),
}
for _panel, _aliases in PANELS.items():
    for _alias in _aliases:
        get_args(_alias)[1].rich_help_panel = _panel
