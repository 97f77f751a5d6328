"""Every exception class BenchFlow defines is a BenchError, unless it says why not (issue #33)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import benchflow
from benchflow.errors import BenchError

# Each entry's docstring says why it is not a BenchError.
NOT_BENCH_ERRORS = {
    "benchflow.agents.acp_runtime._StepError",          # private wrapper, reported as the agent's error
    "benchflow.agents.reference_schema._Refusal",       # private signal, turned into a ConfigError
    "benchflow.assess.reducer.RuleBroken",              # readers report the broken log themselves
    "benchflow.embodied.robo.Usage",                    # the agent-side script runs without BenchFlow
    "benchflow.gateway.upstream_client.UpstreamError",  # an OSError for the gateway's socket handling
    "benchflow.hub.app.HttpError",                      # the hub server's HTTP answer
    "benchflow.jobs.setup_commands.SetupFailed",        # recorded as sandbox_setup by the environment phase
    "benchflow.records.upgrade.Unreadable",             # a note shown beside the other rows
    "benchflow.results.bundle_redact.TooBig",           # signal: leave the file out
    "benchflow.results.bundle_redact.LeftOut",          # signal: leave the file out
    "benchflow.review.answer.MalformedAnswer",          # recorded as the rollout's review error
    "benchflow.sandbox.copyout._Unsplittable",          # control flow: copy child by child
    "benchflow.sandbox.copyout_writer.Stop",            # control flow: a copy cap was reached
    "benchflow.sandbox.engine_api.EngineError",         # callers translate it, like the SDK's APIError
    "benchflow.sandbox.engine_api.NotFound",            # an EngineError
    "benchflow.sandbox.engine_api.ImageNotFound",       # an EngineError
    "benchflow.sandbox.engine_api.EngineUnreachable",   # an EngineError
    "benchflow.sandbox.local.holder.MissingTool",       # an OSError in the holder process
    "benchflow.sandbox.netns_block.BlockError",         # caught beside OSError in its module
    "benchflow.sandbox.session.SessionSetupError",      # wrapper whose cause the trial classifies
    "benchflow.train.prime_rl_site.ShimRefused",        # raised in Prime-RL's trainer, where BenchFlow is absent
    "benchflow.util.nofollow.UnsafeFile",               # an OSError for every reader
    "benchflow.verify.rewards.RewardError",             # a ValueError the verifier runner records
}

RUN_ON_IMPORT = {"benchflow.jobs.bridge.forward"}  # a script run inside the sandbox: importing it runs it


def _exception_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(benchflow.__path__, "benchflow."):
        if info.name.endswith("__main__") or info.name in RUN_ON_IMPORT:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency that is not installed
            continue
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_exception_class_is_a_bench_error_or_says_why_not():
    classes = _exception_classes()
    outside = {name for name, cls in classes.items() if not issubclass(cls, BenchError)}
    assert outside - NOT_BENCH_ERRORS == set()
    assert NOT_BENCH_ERRORS - set(classes) == set(), "allowlist names a class that no longer exists"


def test_one_interrupted():
    names = [name for name in _exception_classes() if name.rsplit(".", 1)[1] == "Interrupted"]
    assert names == ["benchflow.errors.Interrupted"]
