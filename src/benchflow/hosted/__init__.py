"""Hosted environments as a source of tasks (``bench run --source-env owner/name[@version]``).

A hosted environment is a Python package on Prime Intellect's Environments Hub whose ``load_environment``
returns a verifiers ``Environment`` (a dataset and a rubric). BenchFlow does not run it in a sandbox: it asks
the hub's API where the package is (:mod:`.prime_hub`), installs it with its verifiers in a venv of its own
under the cache (:mod:`.install`, never into BenchFlow's environment), runs verifiers' ``vf-eval`` there for
N examples x M rollouts against the model endpoint (:mod:`.vf_eval`), and records every rollout as a trial
of an ordinary job folder (:mod:`.record`, :mod:`.run`), so ``bench results``, ``compare``, ``view`` and
``train convert`` read it. The run reaches the engine through the ``run_job`` point of
``jobs.extensions`` (:mod:`.feature`).
"""

from __future__ import annotations

from benchflow.errors import BenchError


class HostedEnvError(BenchError):
    """The hosted environment could not be fetched, installed or run (its hub, pip or vf-eval said why)."""

    category = "hosted_env_error"
