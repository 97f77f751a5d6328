"""The one error tree of BenchFlow.

Every error raised on purpose derives from :class:`BenchError` and carries a
stable ``category`` string (what gets stored in result.json and matched by
retry policies and ``bench explain``) and the process ``exit_code`` the CLI
uses when the error reaches it.

::

    BenchError                       category "other", exit 1
    ├── UserError                    bad input; one line, exit 2, never a traceback
    │   ├── TaskError                a task folder that does not parse or validate
    │   ├── ConfigError              a flag value, run config or matrix that is wrong
    │   └── JobFolderError           a folder that is not a job, or a resume mismatch
    ├── DatasetError                 "dataset_error": a registry dataset that cannot be fetched or verified
    ├── SandboxError                 "sandbox_setup": a sandbox could not be built/started
    │   ├── SandboxUnavailable       the backend cannot run here (no engine, no namespaces)
    │   ├── BuildError               the task image failed to build (log tail attached)
    │   └── CapabilityError          the backend cannot run what the task asks for (exit 2)
    ├── InfraError                   "infra_failure": transport, engine died mid-run
    ├── Interrupted                  "interrupted": Ctrl-C or SIGTERM ended a run or regrade, exit 130
    ├── AgentError                   agent-side failures, category set per instance
    └── VerifierError                verifier failures, category set per instance
"""

from __future__ import annotations


class BenchError(Exception):
    """Base of every error BenchFlow raises on purpose."""

    category: str = "other"
    exit_code: int = 1

    def __init__(self, message: str, *, category: str | None = None) -> None:
        super().__init__(message)
        if category is not None:
            self.category = category

    @property
    def message(self) -> str:
        return str(self)


class UserError(BenchError):
    """Bad input from the user: printed as one line, exit code 2."""

    category = "user_error"
    exit_code = 2


class TaskError(UserError):
    """A task folder that does not parse or validate; the message names file, key and fix.

    ``problems`` holds every problem found (the message names the first and how many more), for
    ``bench tasks check`` to list them all.
    """

    category = "task_error"

    def __init__(self, message: str, *, category: str | None = None, problems: list[str] | None = None) -> None:
        super().__init__(message, category=category)
        self.problems = problems or [message]


class ConfigError(UserError):
    """A flag value, run config or matrix file that is wrong."""

    category = "config_error"


class JobFolderError(UserError):
    """A folder that is not a job, or a job that cannot be resumed with these settings."""

    category = "job_folder_error"


class DatasetError(BenchError):
    """A registry dataset or repository source that cannot be fetched, or whose task content does not
    match its pinned digest; the run is refused before any sandbox starts (exit 1, contracts §3.14)."""

    category = "dataset_error"


class SandboxError(BenchError):
    """A sandbox could not be built, started or reached.

    ``deterministic``: another attempt on this machine fails the same way (a refusal, a missing tool):
    the trial is attempted once (:func:`benchflow.jobs.retry.is_retryable`).
    """

    category = "sandbox_setup"
    deterministic: bool = False

    def __init__(self, message: str, *, category: str | None = None, deterministic: bool | None = None) -> None:
        super().__init__(message, category=category)
        if deterministic is not None:
            self.deterministic = deterministic


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this machine (no engine answering, no namespaces)."""


class BuildError(SandboxError):
    """The task image failed to build."""

    def __init__(self, message: str, *, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class CapabilityError(SandboxError):
    """The backend cannot run what the task asks for; refused before anything starts."""

    exit_code = 2
    deterministic = True


class InfraError(BenchError):
    """Transport or engine failure in the middle of a trial (retryable)."""

    category = "infra_failure"


class Interrupted(BenchError):
    """Ctrl-C or SIGTERM: running trials (or regrades) were cancelled and their sandboxes removed."""

    category = "interrupted"
    exit_code = 130


class AgentError(BenchError):
    """The agent failed; ``category`` says how (install_failure, pipe_closed, acp_error, ...)."""

    category = "other"

    def __init__(self, message: str, *, category: str | None = None, log_tail: str = "") -> None:
        super().__init__(message, category=category)
        self.log_tail = log_tail


class VerifierError(BenchError):
    """The verifier failed; ``category`` says how (verifier_failure, verifier_timeout, ...)."""

    category = "verifier_failure"
