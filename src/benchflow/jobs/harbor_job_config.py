"""A Harbor job config (its ``job.yaml``, or the ``config.json`` a Harbor job writes) as run-config keys.

Harbor's ``JobConfig`` is recognised by a key only it has (``agents``,
``datasets``, ``tasks``, ``n_attempts``, ``orchestrator``, …) or by an
``environment`` that is a mapping; a file without one is our own run config
and is read exactly as before. The keys that map become run-config keys:

    agents[0].name / model_name / env / kwargs.reasoning_effort → agent / model / agent_env / reasoning_effort
    agents[0].override_timeout_sec            → config_override {agent: {timeout_sec}}
    n_attempts                                → trials (Harbor runs every task that many times: pass@k);
                                                in a BenchFlow 0.7 config (:func:`is_legacy`), max_retries = n - 1
    n_concurrent_trials (or orchestrator.…)   → concurrency;  retry.max_retries → max_retries
    timeout_multiplier, quiet, jobs_dir, job_name → the same keys
    environment.type                          → sandbox (docker, podman, daytona, modal, apple-container)
    environment.delete: false                 → keep_sandbox: always
    datasets[0].path | name+version (+registry_url/registry_path) | repo (+path, ref)
                                              → tasks_dir | dataset (+registry) | source_repo (+source_path, source_ref)
    datasets[0].task_names / exclude_task_names / n_tasks → include / exclude / limit
    tasks[].path                              → targets;  extra_instructions → extra_instruction

Every other Harbor key is accepted only at Harbor's default (a Harbor
``config.json`` lists them all) and otherwise refused by name, in one line
that says why and what to do instead.
"""

from __future__ import annotations

from typing import Any

from benchflow.errors import ConfigError

SANDBOXES = {"docker": "docker", "podman": "podman", "daytona": "daytona", "modal": "modal",
             "apple-container": "apple-container"}
"""Harbor's environment types that BenchFlow has a sandbox for; the others are refused by name."""

_EXCLUDED_EXCEPTIONS = {"AgentTimeoutError", "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
                        "VerifierOutputParseError", "ApiUsageLimitError", "AgentSafetyRefusalError",
                        "AgentAuthenticationError", "ModelNotFoundError", "UnsupportedModelParametersError"}

# Harbor's defaults (harbor 0.25 models/job/config.py, models/trial/config.py) of the keys with no mapping.
_TOP = {"install_only": False, "skip_credential_checks": False, "debug": False, "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None, "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None, "metrics": [], "user_agent": None,
        "artifacts": [], "extra_instruction_paths": [], "source_jobs": [], "plugins": []}
_ENVIRONMENT = {"import_path": None, "force_build": False, "stream": False, "cpu_enforcement_policy": "auto",
                "memory_enforcement_policy": "auto", "override_cpus": None, "override_memory_mb": None,
                "override_storage_mb": None, "override_gpus": None, "override_tpu": None, "mounts": None,
                "mounts_json": None, "extra_docker_compose": [], "env": {}, "kwargs": {}, "extra_allowed_hosts": [],
                "suppress_override_warnings": ...}
_VERIFIER = {"override_timeout_sec": None, "max_timeout_sec": None, "include_logs": [], "exclude_logs": [], "env": {},
             "import_path": None, "kwargs": {}, "disable": False, "extra_allowed_hosts": []}
_AGENT = {"import_path": None, "base_url": None, "model_api_key_name": None, "model_api_format": None,
          "skip_model_parsing": False, "n_concurrent": None, "concurrency_group": None, "skills": [],
          "override_setup_timeout_sec": None, "max_timeout_sec": None, "resume_trajectory": False,
          "load_trajectory": None, "extra_allowed_hosts": [], "include_logs": [], "exclude_logs": [],
          "mcp_servers": []}
_RETRY = {"include_exceptions": None, "exclude_exceptions": _EXCLUDED_EXCEPTIONS, "wait_multiplier": 1.0,
          "min_wait_sec": 1.0, "max_wait_sec": 60.0}
_DATASET = {"overwrite": False, "download_dir": None}
_TASK = {"overwrite": False, "download_dir": None, "source": None}
_ORCHESTRATOR = {"type": "local", "kwargs": {}}

_FIX = {
    "install_only": "to try an agent's install, use bench doctor --agent-start NAME",
    "debug": "set BENCHFLOW_LOG_LEVEL=DEBUG instead",
    "skip_credential_checks": "remove it (bench doctor checks credentials)",
    "metrics": "BenchFlow scores each trial with the task's verifier and reports pass rates; remove it",
    "user_agent": "a simulated user is a scene role in BenchFlow (docs/scenes.md)",
    "artifacts": "declare the files to collect in the task (task.md artifacts)",
    "extra_instruction_paths": "paste the text into extra_instructions",
    "source_jobs": "regrade a job with bench regrade JOB",
    "plugins": "remove it (Harbor ignores it too)",
    "environment.force_build": "BenchFlow rebuilds an image when the task's environment changes; remove it",
    "environment.env": "give the variables as agents[0].env (the agent's environment) or --agent-env KEY=VALUE",
    "agents.skills": "give skills_dir (a folder of skills) with skill_mode: with-skill",
    "agents.max_timeout_sec": "use agents[0].override_timeout_sec or timeout_multiplier",
}
_TIMEOUTS_FIX = "use timeout_multiplier, or agents[0].override_timeout_sec for the agent"

MARKERS = frozenset({"agents", "datasets", "tasks", "orchestrator", "n_attempts", "n_concurrent_trials", "retry",
                     "verifier", *_TOP})


LEGACY_TOP = frozenset({"jobs_dir", "n_attempts", "orchestrator", "environment", "agents", "datasets"})
"""The Harbor-style keys a BenchFlow 0.7 config has (contracts §7.1), beside our own run-config keys."""


def is_legacy(data: dict[str, Any]) -> bool:
    """A BenchFlow 0.7 Harbor-style config: only the keys 0.7 read, in the shapes it read them.

    0.7 read ``n_attempts`` as the attempts of one trial (``max_retries = n - 1``); Harbor 0.2x reads it as
    the trials of each task (pass@k). A file with any key or shape only Harbor 0.2x has is Harbor's."""
    harbor_only = (MARKERS | {"job_name", "timeout_multiplier", "quiet", "extra_instructions"}) - LEGACY_TOP
    if harbor_only & data.keys():
        return False
    orchestrator, environment = data.get("orchestrator") or {}, data.get("environment")
    agents, datasets = data.get("agents") or [], data.get("datasets") or []
    return (isinstance(orchestrator, dict) and set(orchestrator) <= {"n_concurrent_trials"}
            and (not isinstance(environment, dict) or (set(environment) <= {"type", "env"}
                                                        and isinstance(environment.get("env", []), list)))
            and all(isinstance(a, dict) and set(a) <= {"name", "model_name", "reasoning_effort", "skip_install"}
                    for a in agents)
            and all(isinstance(d, dict) and set(d) <= {"path"} for d in datasets))


def _legacy_environment(r: _Reader, data: dict[str, Any]) -> dict[str, Any]:
    """0.7's ``environment.env: ["K=${V}"]`` (expanded from this environment) as the agent's variables, and its
    ``skip_install: false``; what is left is read as Harbor's."""
    import os

    environment = data.get("environment")
    if isinstance(environment, dict) and environment.get("env"):
        pairs = environment["env"]
        if not isinstance(pairs, list) or not all(isinstance(p, str) and "=" in p for p in pairs):
            r.refuse("environment.env", 'expected a list of "KEY=VALUE" strings (values may read ${VAR})')
        r.set("environment.env", "agent_env", {k: os.path.expandvars(v) for k, _, v in
                                               (p.partition("=") for p in pairs)})
        data = {**data, "environment": {k: v for k, v in environment.items() if k != "env"}}
    agents = [dict(a) for a in data.get("agents") or []]
    for i, agent in enumerate(agents):
        if agent.pop("skip_install", False):
            r.refuse(f"agents[{i}].skip_install", "BenchFlow installs the agent into a cached image layer (a "
                                                 "second run reuses it); remove it")
    return {**data, "agents": agents} if agents else data


def is_harbor(data: dict[str, Any]) -> bool:
    """A Harbor job config: a key our run config does not have, or ``environment`` as a mapping."""
    return bool(MARKERS & data.keys()) or isinstance(data.get("environment"), dict)


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.out: dict[str, Any] = {}

    def refuse(self, key: str, why: str) -> None:
        raise ConfigError(f"{self.source}: {key}: {why}")

    def mapping(self, key: str, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.refuse(key, f"expected a mapping, got {value!r}")
        return value

    def only(self, key: str, value: Any, what: str, why_one: str) -> dict[str, Any] | None:
        """The one mapping of the list ``value`` (None for none), else refused: not a list of mappings, or
        several (``why_one``)."""
        if value is None or value == []:
            return None
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            self.refuse(key, f"expected a list of {what}")
        if len(value) > 1:
            self.refuse(key, f"{len(value)} {key}: {why_one}")
        return dict(value[0])

    def set(self, key: str, native: str, value: Any) -> None:
        if value is None:
            return
        if native in self.out and self.out[native] != value:
            self.refuse(key, f"gives {native} a second value ({value!r}, already {self.out[native]!r}); give one")
        self.out[native] = value

    def defaults(self, where: str, section: dict[str, Any], table: dict[str, Any], fix_key: str = "") -> None:
        """Refuse every key of ``section`` not in ``table``, or set to anything but Harbor's default."""
        for key, value in section.items():
            name = f"{where}.{key}" if where else key
            if key not in table:
                self.refuse(name, "not a Harbor job-config key BenchFlow knows; remove it")
            default = table[key]
            if default is ... or _same(value, default):
                continue
            fix = _FIX.get(f"{fix_key or where}.{key}" if (fix_key or where) else key) or (
                _TIMEOUTS_FIX if "timeout" in key else f"BenchFlow has no equivalent; remove it or set Harbor's "
                                                        f"default ({_shown(default)})")
            self.refuse(name, f"{_shown(value)} is not supported: {fix}")


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, set):
        return isinstance(value, (list, set)) and set(value) == default
    return value == default or (default in ([], {}) and not value)


def _shown(value: Any) -> str:
    return "the default list" if isinstance(value, set) else repr(value)


def harbor_fields(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Run-config keys (as in ``config_file._NATIVE``) for the Harbor job config ``data``.

    Raises:
        ConfigError: a Harbor key BenchFlow cannot honour, named with ``source`` (exit 2).
    """
    r = _Reader(source)
    rest = {k: v for k, v in data.items() if k not in MARKERS and k not in _MAPPED_TOP}
    for key in ("job_name", "jobs_dir", "timeout_multiplier"):
        if data.get(key) is not None:
            r.set(key, key, data[key])
    legacy = is_legacy(data)
    if "n_attempts" in data and legacy:  # BenchFlow 0.7's reading (contracts §7.1): attempts of one trial
        r.set("n_attempts", "max_retries", max(int(data["n_attempts"]) - 1, 0))
    elif "n_attempts" in data:
        r.set("n_attempts", "trials", data["n_attempts"])
    if legacy:
        data = _legacy_environment(r, data)
    r.defaults("", {k: v for k, v in data.items() if k in _TOP}, _TOP)
    r.defaults("verifier", r.mapping("verifier", data.get("verifier")), _VERIFIER)
    orchestrator = dict(r.mapping("orchestrator", data.get("orchestrator")))
    for key in ("n_concurrent_trials", "quiet", "retry"):
        if key in orchestrator and key not in data:
            data = {**data, key: orchestrator[key]}
        orchestrator.pop(key, None)
    r.defaults("orchestrator", orchestrator, _ORCHESTRATOR)
    if data.get("n_concurrent_trials") is not None:
        r.set("n_concurrent_trials", "concurrency", data["n_concurrent_trials"])
    if data.get("quiet") is not None:
        r.set("quiet", "quiet", data["quiet"])
    retry = dict(r.mapping("retry", data.get("retry")))
    if retry.get("max_retries") is not None:
        r.set("retry.max_retries", "max_retries", retry.pop("max_retries"))
    r.defaults("retry", retry, _RETRY)
    _environment(r, r.mapping("environment", data.get("environment")))
    _agents(r, data.get("agents"))
    _datasets(r, data.get("datasets"))
    _tasks(r, data.get("tasks"))
    instructions = data.get("extra_instructions") or []
    if not isinstance(instructions, list) or not all(isinstance(i, str) for i in instructions):
        r.refuse("extra_instructions", "expected a list of strings")
    if instructions:
        r.set("extra_instructions", "extra_instruction", "\n\n".join(instructions))
    for key, value in rest.items():  # our own keys beside Harbor's (the 0.7 legacy form): checked by the caller
        r.set(key, key, value)
    return r.out


_MAPPED_TOP = {"job_name", "jobs_dir", "timeout_multiplier", "quiet", "environment", "extra_instructions"}


def _environment(r: _Reader, env: dict[str, Any]) -> None:
    env = dict(env)
    kind = env.pop("type", None)
    if kind is not None:
        if kind not in SANDBOXES:
            r.refuse("environment.type", f"{kind!r}: BenchFlow has no {kind} sandbox; use one of "
                                         f"{', '.join(SANDBOXES)} (or drop the key for the default)")
        r.set("environment.type", "sandbox", SANDBOXES[kind])
    delete = env.pop("delete", True)
    if delete is False:
        r.set("environment.delete", "keep_sandbox", "always")
    elif delete is not True:
        r.refuse("environment.delete", f"expected true or false, got {delete!r}")
    r.defaults("environment", env, _ENVIRONMENT)


def _agents(r: _Reader, agents: Any) -> None:
    agent = r.only("agents", agents, "agents ({name, model_name, ...})", "a BenchFlow run has one; give one agent "
                   "and run each other with -a NAME -m MODEL (or a --matrix file)")
    if agent is None:
        return
    r.set("agents[0].name", "agent", agent.pop("name", None))
    r.set("agents[0].model_name", "model", agent.pop("model_name", None))
    r.set("agents[0].reasoning_effort", "reasoning_effort", agent.pop("reasoning_effort", None))  # Harbor 0.7 form
    env = r.mapping("agents[0].env", agent.pop("env", None))
    if env:
        r.set("agents[0].env", "agent_env", {str(k): str(v) for k, v in env.items()})
    kwargs = dict(r.mapping("agents[0].kwargs", agent.pop("kwargs", None)))
    r.set("agents[0].kwargs.reasoning_effort", "reasoning_effort", kwargs.pop("reasoning_effort", None))
    for key in kwargs:
        r.refuse(f"agents[0].kwargs.{key}", "Harbor passes it to its own agent class; BenchFlow's agents take "
                                            "no kwargs: remove it (agent settings live in the agent's file)")
    timeout = agent.pop("override_timeout_sec", None)
    if timeout is not None:
        r.set("agents[0].override_timeout_sec", "config_override", {"agent": {"timeout_sec": timeout}})
    r.defaults("agents[0]", agent, _AGENT, fix_key="agents")


def _datasets(r: _Reader, datasets: Any) -> None:
    ds = r.only("datasets", datasets, "datasets ({path} or {name, version})", "a BenchFlow run reads one; give "
                "one and run the others as runs of their own")
    if ds is None:
        return
    legacy = r.mapping("datasets[0].registry", ds.pop("registry", None))  # Harbor's older {url|path} form
    registry = ds.pop("registry_url", None) or ds.pop("registry_path", None) or legacy.get("url") or legacy.get("path")
    name, version, ref = ds.pop("name", None), ds.pop("version", None), ds.pop("ref", None)
    path, repo = ds.pop("path", None), ds.pop("repo", None)
    if repo is not None:
        if name is not None:
            r.refuse("datasets[0].name", "a named dataset inside a repository is not supported; give the "
                                         "repository's tasks folder as path, or the registry as registry_url")
        r.set("datasets[0].repo", "source_repo", str(repo))
        r.set("datasets[0].path", "source_path", None if path is None else str(path))
        r.set("datasets[0].ref", "source_ref", ref or version)
    elif name is not None:
        if "/" in str(name):
            r.refuse("datasets[0].name", f"{name!r} is a package on Harbor's hub, which BenchFlow cannot fetch; "
                                         "use a registry dataset (name + version) or a tasks folder (path)")
        if version is None:
            r.refuse("datasets[0].version", f"missing: BenchFlow runs a named version of {name} (the versions: "
                                            f"bench hub show {name} --version V, or bench hub list)")
        if ref is not None:
            r.refuse("datasets[0].ref", "a package ref; give version for a registry dataset")
        r.set("datasets[0].name", "dataset", f"{name}@{version}")
        r.set("datasets[0].registry_url", "registry", None if registry is None else str(registry))
    elif path is not None:
        r.set("datasets[0].path", "tasks_dir", str(path))
    else:
        r.refuse("datasets[0]", "give path (a folder of tasks) or name and version (a registry dataset)")
    if registry is not None and (name is None or repo is not None):
        r.refuse("datasets[0].registry_url", "a registry is only read for a named dataset (name + version)")
    r.set("datasets[0].task_names", "include", ds.pop("task_names", None))
    r.set("datasets[0].exclude_task_names", "exclude", ds.pop("exclude_task_names", None))
    r.set("datasets[0].n_tasks", "limit", ds.pop("n_tasks", None))
    r.defaults("datasets[0]", ds, _DATASET)


def _tasks(r: _Reader, tasks: Any) -> None:
    if tasks is None or tasks == []:
        return
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        r.refuse("tasks", "expected a list of tasks ({path})")
    paths = []
    for i, task in enumerate(tasks):
        task = dict(task)
        if task.get("git_url") or task.get("name"):
            r.refuse(f"tasks[{i}]", "a git or package task; list it in a registry (Harbor's registry.json format "
                                    "works) and run it with datasets, or give its folder as path")
        task.pop("git_url", None)
        task.pop("git_commit_id", None)
        task.pop("name", None)
        task.pop("ref", None)
        if not task.get("path"):
            r.refuse(f"tasks[{i}].path", "missing: give the task's folder")
        paths.append(str(task.pop("path")))
        r.defaults(f"tasks[{i}]", task, _TASK)
    if "tasks_dir" in r.out or "dataset" in r.out or "source_repo" in r.out:
        r.refuse("tasks", "give datasets or tasks, not both (a BenchFlow run reads one source of tasks)")
    r.set("tasks", "targets", paths)
