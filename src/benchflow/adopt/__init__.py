"""Adopting an external benchmark: ``bench eval adopt``.

A benchmark adopted from another harness lives in ``benchmarks/<name>/``: a converter, a parity test
and a recorded parity experiment (the original harness's scores beside ours). The modules:

``package``   the benchmark slug and the scaffold of ``benchmarks/<name>/`` (templates in ``scaffold/``)
``convert``   the conversion prompt, which driver carries it out, and the host codex CLI
``agent_task`` the conversion as a one-off task, for a host without codex
``agent_run`` that task run through the agent layer, and the package copied back whole
``evidence``  parity_experiment.json (BenchFlow's and Harbor's published shapes) read as comparisons
``rerun``     ``parity_test.py --mode side-by-side`` run again for fresh evidence
``gate``      the parity gate: evidence + tolerance -> verdict, the verdict file, the issue draft

The structural round trip of one converted task is ``benchflow.tasks.roundtrip``.
"""
