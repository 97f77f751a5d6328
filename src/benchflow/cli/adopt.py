"""``bench eval adopt``: scaffold, convert and parity-check an external benchmark (``benchflow.adopt``).

One command with three modes (convert by default, ``--scaffold-only``, ``--verify``), and the older
spellings old scripts call, each a command of its own over the same actions: ``bench adopt
init|convert|verify`` and ``bench agent create|run|verify`` (hidden rows of ``cli/app.py``, which
print their deprecation line).

Exit codes: 0 done (``--verify``: parity confirmed); 1 the gate did not pass, Codex (or the sandboxed
agent) failed, or ``--rerun``'s parity_test.py failed; 2 bad input (one line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from benchflow.adopt.convert import DEFAULT_CODEX_BIN
from benchflow.adopt.gate import DEFAULT_TOLERANCE

adopt_cmd = typer.Typer(add_completion=False)
init_cmd = typer.Typer(add_completion=False)
convert_cmd = typer.Typer(add_completion=False)
verify_cmd = typer.Typer(add_completion=False)

HELP = """Adopt an external benchmark into benchflow.

Default (convert): bench eval adopt <source> scaffolds benchmarks/<name>/ if missing, then drives the codex \
conversion. --scaffold-only only writes the package; --verify runs the parity gate for the named benchmark."""

TARGET_HELP = ("In convert mode (default) the SOURCE repo/path to adopt; in --verify / --scaffold-only mode the "
               "benchmark SLUG.")
CODEX_CONFIG_HELP = ("Codex config override as key=value, passed to codex as -c key=value; repeatable (e.g. -c "
                     "service_tier=flex to work around host ~/.codex/config.toml drift)")
RERUN_HELP = ("Independently re-execute parity_test.py --mode side-by-side and score its fresh output, instead of "
              "the recorded parity_experiment.json")


def scaffold_action(slug: str, benchmarks_dir: Optional[Path]) -> None:
    from benchflow.adopt.package import scaffold_benchmark

    result = scaffold_benchmark(benchmarks_dir, slug)
    typer.echo(f"Scaffolded {result.path}/")
    for rel in result.files:
        typer.echo(f"  {rel}")


def convert_action(source: str, *, name: Optional[str], model: Optional[str], dry_run: bool, codex_bin: str,
                   codex_config: list[str], benchmarks_dir: Optional[Path]) -> None:
    """Run the conversion prompt with the host's Codex (scaffolding the package first if missing), or,
    without Codex on the host, with a BenchFlow agent in a sandbox (``adopt/agent_run.py``)."""
    from benchflow.adopt import convert
    from benchflow.adopt.package import benchmark_dir, slug_from_source, validate_slug

    slug = validate_slug(name) if name is not None else slug_from_source(source)
    bench = benchmark_dir(benchmarks_dir, slug)
    overrides = convert.check_overrides(codex_config)
    driver = convert.choose_driver(codex_bin, named=codex_bin != DEFAULT_CODEX_BIN)
    if driver.agent:
        _convert_with_agent(convert.source_for_prompt(source), slug, bench, agent=driver.agent, model=model,
                            dry_run=dry_run, overrides=overrides, says=driver.says(codex_bin))
        return
    workdir = bench.parent.resolve().parent
    prompt = convert.adoption_prompt(convert.source_for_prompt(source), slug, bench, workdir)
    argv = convert.launch_command(prompt, workdir=workdir, codex_bin=codex_bin, model=model, overrides=overrides)
    if dry_run:
        typer.echo(convert.shell_line(argv))
        return
    argv[0] = convert.find_codex(codex_bin)
    typer.echo(driver.says(codex_bin), err=True)
    if bench.exists():
        typer.echo(f"Converting into the existing {bench}/")
    else:
        scaffold_action(slug, benchmarks_dir)
    typer.echo(f"Running codex in {workdir} (model: {model or 'codex default'})")
    code = convert.run_codex(argv, cwd=workdir, on_line=typer.echo)
    if code != 0:
        typer.echo(f"codex exited {code}; {bench}/ is as it left it", err=True)
        raise typer.Exit(1)
    typer.echo(f"codex finished; check parity with: {_verify_line(slug, bench)}")


def _convert_with_agent(source: str, slug: str, bench: Path, *, agent: str, model: Optional[str], dry_run: bool,
                        overrides: list[str], says: str) -> None:
    from benchflow.adopt import agent_task, convert
    from benchflow.errors import UserError

    if overrides:
        raise UserError(f"--codex-config: only the host's Codex CLI takes -c options and there is none on PATH "
                        f"(agent {agent} in a sandbox does not); install Codex, or drop -c")
    typer.echo(says, err=True)
    if dry_run:
        image = agent_task.image()
        typer.echo(f"agent {agent} in a BenchFlow sandbox (image {image}, model {model or 'the agent default'}); "
                   f"{source} -> {convert.SANDBOX_WORKDIR}/source; the package comes back to {bench}/")
        typer.echo(convert.sandbox_prompt(source, slug))
        return
    from benchflow.adopt.agent_run import convert_in_sandbox

    typer.echo(f"Converting {source} into {bench}/ with agent {agent} (model: {model or 'the agent default'})")
    result = convert_in_sandbox(source, slug, bench, agent=agent, model=model, say=typer.echo)
    reward = (result.get("rewards") or {}).get("reward")
    typer.echo(f"wrote {bench}/" + ("" if reward == 1.0 else " (some files the guide asks for are still missing: "
                                    "see the trial's verifier/ log)"))
    typer.echo(f"check parity with: {_verify_line(slug, bench)}")


def _verify_line(slug: str, bench: Path) -> str:
    more = "" if bench.parent.name == "benchmarks" else f" --benchmarks-dir {bench.parent}"
    return f"bench eval adopt {slug} --verify{more}"


def verify_action(slug: str, *, benchmarks_dir: Optional[Path], tolerance: float, issue_out: Optional[Path],
                  roundtrip_task: Optional[Path], rerun: bool) -> None:
    """Run the parity gate, print the verdict, exit 0 only when it passed."""
    from benchflow.adopt.gate import issue_draft, run_gate, score_text
    from benchflow.adopt.package import benchmark_dir

    bench = benchmark_dir(benchmarks_dir, slug)
    if rerun:
        typer.echo(f"Running {bench / 'parity_test.py'} --mode side-by-side", err=True)
    result = run_gate(bench, tolerance=tolerance, rerun=rerun, roundtrip_task=roundtrip_task)
    typer.echo(f"verdict: {result.verdict}")
    if result.evidence is None:
        typer.echo(f"evidence: none ({bench / 'parity_experiment.json'} does not exist)")
    else:
        typer.echo(f"evidence: {result.evidence.source}")
        criteria, rewards = result.evidence.criteria, result.evidence.rewards
        if criteria:
            typer.echo(f"criteria: {sum(c.agree for c in criteria)}/{len(criteria)} agree")
        for c in result.disagreements:
            typer.echo(f"  differs: {c.where}: original {c.original!r}, converted {c.converted!r}")
        if rewards:
            typer.echo(f"rewards: {len(rewards)} pair{'s' * (len(rewards) != 1)}, max abs delta "
                       f"{result.max_abs_delta:.4f} (tolerance {tolerance:g})")
        for r in result.exceeding:
            typer.echo(f"  over tolerance: {r.where}: original {score_text(r.original)}, converted "
                       f"{score_text(r.converted)}, delta {r.delta:.4f}")
    if result.roundtrip is not None:
        typer.echo(f"round-trip: {result.roundtrip.status} ({result.roundtrip.task_dir})")
        for m in result.roundtrip.mismatches:
            typer.echo(f"  {m.path}: {m.reason}")
    typer.echo(result.says[0].upper() + result.says[1:] + ".")
    typer.echo(f"wrote {result.verdict_path}")
    if not result.passed and result.verdict != "insufficient-evidence":
        _issue(issue_draft(result), issue_out)
    raise typer.Exit(0 if result.passed else 1)


def _issue(draft: str, issue_out: Optional[Path]) -> None:
    from benchflow.errors import UserError
    from benchflow.util import atomic

    if issue_out is None:
        typer.echo("")
        typer.echo(draft, nl=False)
        return
    try:
        atomic.write_text(issue_out, draft)
    except OSError as exc:
        raise UserError(f"--issue-out {issue_out}: cannot be written ({exc.strerror}); pick another path") from None
    typer.echo(f"issue draft: {issue_out}")


def _refuse_other_modes(mode: str, given: dict[str, bool]) -> None:
    from benchflow.errors import UserError

    wrong = [flag for flag, present in given.items() if present]
    if wrong:
        raise UserError(f"{', '.join(wrong)}: not used {mode}; drop {'it' if len(wrong) == 1 else 'them'}")


@adopt_cmd.command(help=HELP)
def adopt(
    target: Optional[str] = typer.Argument(None, help=TARGET_HELP, show_default=False),
    name: Optional[str] = typer.Option(None, "--name",
                                       help="Benchmark slug for convert mode (default: derived from source)"),
    verify: bool = typer.Option(False, "--verify", help="Run the parity gate for the named benchmark"),
    scaffold_only: bool = typer.Option(False, "--scaffold-only", help="Only scaffold the package, do not convert"),
    model: Optional[str] = typer.Option(None, "--model", help="Model for the codex driver"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the launch command, do not run"),
    codex_bin: str = typer.Option(DEFAULT_CODEX_BIN, "--codex-bin", help="Host codex binary"),
    codex_config: Optional[list[str]] = typer.Option(None, "--codex-config", "-c", help=CODEX_CONFIG_HELP),
    benchmarks_dir: Optional[Path] = typer.Option(None, "--benchmarks-dir", help="Target benchmarks/ directory"),
    tolerance: float = typer.Option(DEFAULT_TOLERANCE, "--tolerance", help="Max abs reward delta (statistical)"),
    issue_out: Optional[Path] = typer.Option(None, "--issue-out", help="Write the divergence issue draft here"),
    roundtrip_task: Optional[Path] = typer.Option(None, "--roundtrip-task",
                                                  help="Also run the structural round-trip check on this task dir"),
    rerun: bool = typer.Option(False, "--rerun", help=RERUN_HELP),
) -> None:
    from benchflow.errors import UserError

    if verify and scaffold_only:
        raise UserError("--verify and --scaffold-only: pick one mode")
    if target is None:
        raise UserError("missing TARGET: give the SOURCE repo/path to convert, or the benchmark SLUG with "
                        "--verify or --scaffold-only")
    convert_flags = {"--name": name is not None, "--model": model is not None, "--dry-run": dry_run,
                     "--codex-bin": codex_bin != DEFAULT_CODEX_BIN, "--codex-config": bool(codex_config)}
    verify_flags = {"--tolerance": tolerance != DEFAULT_TOLERANCE, "--issue-out": issue_out is not None,
                    "--roundtrip-task": roundtrip_task is not None, "--rerun": rerun}
    if verify:
        _refuse_other_modes("with --verify", convert_flags)
        verify_action(target, benchmarks_dir=benchmarks_dir, tolerance=tolerance, issue_out=issue_out,
                      roundtrip_task=roundtrip_task, rerun=rerun)
    elif scaffold_only:
        _refuse_other_modes("with --scaffold-only", {**convert_flags, **verify_flags})
        scaffold_action(target, benchmarks_dir)
    else:
        _refuse_other_modes("without --verify (convert mode)", verify_flags)
        convert_action(target, name=name, model=model, dry_run=dry_run, codex_bin=codex_bin,
                       codex_config=codex_config or [], benchmarks_dir=benchmarks_dir)


@init_cmd.command(help="Scaffold benchmarks/<name>/ for a new benchmark adoption (deprecated alias).")
def init(
    name: str = typer.Argument(..., help="Benchmark slug (lowercase, hyphenated)"),
    benchmarks_dir: Optional[Path] = typer.Option(None, "--benchmarks-dir", help="Target benchmarks/ directory"),
) -> None:
    scaffold_action(name, benchmarks_dir)


@convert_cmd.command(help="Drive the conversion workflow by launching the host codex CLI (deprecated alias).")
def convert(
    source: str = typer.Argument(..., help="Source benchmark repo or local path"),
    name: Optional[str] = typer.Option(None, "--name", help="Benchmark slug (default: from source)"),
    model: Optional[str] = typer.Option(None, "--model", help="Model for the codex driver"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the launch command, do not run"),
    codex_bin: str = typer.Option(DEFAULT_CODEX_BIN, "--codex-bin", help="Host codex binary"),
    codex_config: Optional[list[str]] = typer.Option(None, "--codex-config", "-c", help=CODEX_CONFIG_HELP),
) -> None:
    convert_action(source, name=name, model=model, dry_run=dry_run, codex_bin=codex_bin,
                   codex_config=codex_config or [], benchmarks_dir=None)


@verify_cmd.command(help="Run the parity gate for an adopted benchmark; emit a verdict (deprecated alias).")
def verify(
    name: str = typer.Argument(..., help="Adopted benchmark slug"),
    benchmarks_dir: Optional[Path] = typer.Option(None, "--benchmarks-dir", help="Target benchmarks/ directory"),
    tolerance: float = typer.Option(DEFAULT_TOLERANCE, "--tolerance", help="Max abs reward delta (statistical)"),
    issue_out: Optional[Path] = typer.Option(None, "--issue-out", help="Write the divergence issue draft here"),
    roundtrip_task: Optional[Path] = typer.Option(None, "--roundtrip-task",
                                                  help="Also run the structural round-trip check on this task dir"),
    rerun: bool = typer.Option(False, "--rerun", help=RERUN_HELP),
) -> None:
    verify_action(name, benchmarks_dir=benchmarks_dir, tolerance=tolerance, issue_out=issue_out,
                  roundtrip_task=roundtrip_task, rerun=rerun)
