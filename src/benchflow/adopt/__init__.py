"""Adopting an external benchmark: ``bench eval adopt``.

A benchmark adopted from another harness lives in ``benchmarks/<name>/``: a converter, a parity test
and a recorded parity experiment (the original harness's scores beside ours). The modules:

``package``   the benchmark slug and the scaffold of ``benchmarks/<name>/`` (templates in ``scaffold/``)
``convert``   the conversion prompt and the host codex CLI that carries it out
``evidence``  parity_experiment.json (BenchFlow's and Harbor's published shapes) read as comparisons
``rerun``     ``parity_test.py --mode side-by-side`` run again for fresh evidence
``gate``      the parity gate: evidence + tolerance -> verdict, the verdict file, the issue draft

The structural round trip of one converted task is ``benchflow.tasks.roundtrip``.
"""
