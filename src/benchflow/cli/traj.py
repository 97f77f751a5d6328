"""``bench traj``: upload a redacted trajectory to a BenchFlow Hub and check it was verified.

``--direct`` (an Azure container with local credentials) and ``traj setup`` are
separate modules (:mod:`benchflow.traj.direct`, :mod:`benchflow.traj.setup`);
their options are shown only once those modules are part of this build.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import typer

upload_cmd = typer.Typer(add_completion=False)
status_cmd = typer.Typer(add_completion=False)
setup_cmd = typer.Typer(add_completion=False)

_HAS_DIRECT = importlib.util.find_spec("benchflow.traj.direct") is not None
_HAS_SETUP = importlib.util.find_spec("benchflow.traj.setup") is not None
_LAST = "last-upload.txt"


def _state_dir() -> Path:
    from benchflow.util.cache_dir import cache_root

    return cache_root() / "traj"


@upload_cmd.command(help="Inspect, redact, confirm, and upload trajectory JSONL.\n\nEvery file is redacted "
                         "on this machine (as bench bundle redacts), the first --preview-steps redacted steps are "
                         "shown, and nothing is sent until you confirm. The capture goes to the hub at "
                         "$BENCHFLOW_HUB_URL with the token in $BENCHFLOW_HUB_TOKEN; the hub checks it again and "
                         "marks it verified.")
def upload(
    path: Path | None = typer.Argument(None, metavar="PATH",
                                       help="Trajectory JSONL file, directory, or trial directory"),
    github_id: str | None = typer.Option(None, "--github-id", help="Contributor GitHub username (inferred from "
                                         "gh/git when omitted)"),
    email: str | None = typer.Option(None, "--email", help="Contributor email stored in the manifest (inferred "
                                     "from git when omitted)"),
    source_id: str | None = typer.Option(None, "--source-id", help="Stable contributor source identifier"),
    repo: bool = typer.Option(True, "--repo/--no-repo", help="Tag the upload with the session's repository "
                              "(owner/name from its git remote) as the source id"),
    workspace: bool = typer.Option(True, "--workspace/--no-workspace", help="Attach an explicitly selected "
                                   "workspace folder as a zip (use --workspace-dir; skipped over 1 GiB)"),
    workspace_dir: Path | None = typer.Option(None, "--workspace-dir", help="Workspace folder to attach instead "
                                              "of auto-detection"),
    direct: bool = typer.Option(False, "--direct", hidden=not _HAS_DIRECT,
                                help="Upload with local Azure credentials"),
    container_url: str | None = typer.Option(None, "--container-url", hidden=not _HAS_DIRECT,
                                             help="Azure container URL for --direct"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and stage without uploading"),
    preview_steps: int = typer.Option(5, "--preview-steps", min=0, help="Number of redacted trajectory steps to "
                                      "preview"),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="After uploading, wait until the capture is "
                              "verified in storage (BENCHFLOW_TRAJ_WAIT_SECONDS overrides the budget)"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Upload without asking for confirmation"),
) -> None:
    import tempfile

    from benchflow.errors import UserError
    from benchflow.traj.identity import contributor
    from benchflow.traj.sources import find_sources
    from benchflow.traj.stage import stage

    if path is None:
        raise UserError("give the trajectory to upload: a .jsonl file, a folder or a trial folder")
    if (direct or container_url) and not _HAS_DIRECT:
        raise UserError("--direct is not part of this build; upload to a hub ($BENCHFLOW_HUB_URL)")
    if container_url and not direct:
        raise UserError("--container-url is used with --direct; add --direct to upload to that container")
    if direct:
        from benchflow.traj.direct import check_container_url

        check_container_url(container_url)
    if workspace_dir is not None and not workspace_dir.is_dir():
        raise UserError(f"--workspace-dir {workspace_dir}: no such folder")
    sources = find_sources(path)
    who = contributor(path.resolve(), github_id, email, source_id, repo)
    dest = _state_dir() / "staged" if dry_run else Path(tempfile.mkdtemp(prefix="bench-traj-"))
    dest.mkdir(parents=True, exist_ok=True)
    try:
        capture = stage(sources, who, dest, preview_steps=preview_steps,
                        workspace_dir=workspace_dir if workspace else None)
        _show(capture, sources)
        if dry_run:
            typer.echo(f"Dry run: nothing was sent. Capture {capture.digest} ({capture.size} bytes) staged at "
                       f"{capture.path}")
            return
        if not yes and not typer.confirm("Upload this redacted trajectory?", default=False):
            typer.echo("Not uploaded.", err=True)
            raise typer.Exit(1)
        if direct:
            from benchflow.traj.direct import direct_upload

            result = direct_upload(capture, container_url=container_url)
            typer.echo(f"Uploaded {capture.digest} ({result.bytes} bytes in {len(result.blobs)} blob(s)) to "
                       f"{result.container}/{result.prefix}/")
            return
        raise typer.Exit(_to_hub(capture, wait))
    finally:
        if not dry_run:
            import shutil

            shutil.rmtree(dest, ignore_errors=True)


def _show(capture, sources) -> None:
    lines = sum(entry.get("lines", 0) for entry in capture.manifest["files"])
    typer.echo(f"Inspected {len(sources)} file(s), {lines} line(s); contributor "
               f"{capture.manifest['contributor']['source_id'] or 'unknown'}")
    typer.echo(f"Masked for you: {capture.masked} value(s)")
    for item in capture.manifest["left_out"]:
        typer.echo(f"Left out: {item['path']} ({item['reason']})")
    workspace = capture.manifest["workspace"]
    if workspace_reason := (None if workspace["included"] else workspace.get("reason")):
        typer.echo(f"Workspace: not attached ({workspace_reason})")
    else:
        typer.echo(f"Workspace: {workspace['files']} file(s) attached as workspace.zip")
    if capture.preview:
        typer.echo(f"Preview (first {len(capture.preview)} redacted step(s)):")
        for line in capture.preview:
            typer.echo(f"  {line}")


def _to_hub(capture, wait: bool) -> int:
    from benchflow.hub.client import HubClient, hub_url
    from benchflow.traj.hub_upload import send, wait_budget
    from benchflow.traj.hub_upload import wait as wait_for
    from benchflow.util.atomic import write_text

    budget = wait_budget() if wait else 0.0
    with HubClient(hub_url(None)) as client:
        answer = send(client, capture.path)
        write_text(_state_dir() / _LAST, answer["digest"] + "\n")
        typer.echo(f"Uploaded {answer['digest']} ({capture.size} bytes): {answer['status']}")
        if not wait or answer["status"] in ("verified", "rejected"):
            final = answer
        else:
            final = wait_for(client, answer["digest"], budget)
    return _report(final, waited=wait, budget=budget)


def _report(state: dict, *, waited: bool, budget: float = 0.0) -> int:
    digest, status = state["digest"], state["status"]
    if status == "verified":
        typer.echo(f"{digest}: verified")
        return 0
    if status == "rejected":
        typer.echo(f"{digest}: rejected: {state.get('reason')}", err=True)
        return 1
    if waited:
        typer.echo(f"{digest}: not verified within {budget:g}s; check later with bench traj status {digest}",
                   err=True)
        return 1
    typer.echo(f"{digest}: {status}; check with bench traj status {digest}")
    return 0


@status_cmd.command(help="Check whether an uploaded trajectory is verified in storage.\n\nAsks the hub at "
                         "$BENCHFLOW_HUB_URL; exit 0 when verified, 1 when rejected or not verified yet.")
def status(
    digest: str | None = typer.Argument(None, metavar="DIGEST",
                                        help="Capture digest printed by bench traj upload (sha256:…)"),
) -> None:
    import re

    from benchflow.errors import UserError
    from benchflow.hub.client import HubClient, hub_url
    from benchflow.traj.hub_upload import status as ask

    if digest is None:
        last = _state_dir() / _LAST
        if not last.is_file():
            raise UserError("give the capture digest bench traj upload printed (sha256:…)")
        digest = last.read_text().strip()
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise UserError(f"{digest!r}: a capture digest is sha256: and 64 hex digits, as bench traj upload prints")
    with HubClient(hub_url(None)) as client:
        state = ask(client, digest)
    code = _report(state, waited=False)
    raise typer.Exit(code if state["status"] != "received" else 1)


@setup_cmd.command(hidden=not _HAS_SETUP,
                   help="Install the submit skill, or print the prompt to send to an agent.")
def setup(
    yes: bool = typer.Option(False, "--yes", "-y", help="Install the skill without prompts"),
    prompt: bool = typer.Option(False, "--prompt", help="Print the copy-paste agent prompt and exit"),
    list_: bool = typer.Option(False, "--list", help="List recent local sessions and exit"),
) -> None:
    from benchflow.errors import UserError

    if not _HAS_SETUP:
        raise UserError("bench traj setup is not part of this build")
    from benchflow.traj import setup as skill

    if prompt:
        typer.echo(skill.PROMPT, nl=False)
        return
    if list_:
        sessions = skill.recent_sessions()
        if not sessions:
            typer.echo("No local sessions found (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp).", err=True)
        for session in sessions:
            typer.echo(f"{skill.age(session.modified)}\t{session.agent}\t{session.size}\t{session.path}")
        return
    targets = skill.skill_targets()
    if not targets:
        typer.echo("No agent folder found here (~/.claude, ~/.codex, ~/.gemini, …): nothing to install into. "
                   "Use bench traj setup --prompt to paste the instructions instead.", err=True)
        raise typer.Exit(1)
    pending = [t for t in targets if not t.up_to_date]
    for target in targets:
        typer.echo(f"{target.agent}\t{target.folder}\t{'up to date' if target.up_to_date else 'to install'}")
    if pending and not yes and not typer.confirm(f"Install the submit skill into {len(pending)} folder(s)?",
                                                 default=True):
        typer.echo("Not installed.", err=True)
        raise typer.Exit(1)
    written = skill.install(pending)
    typer.echo(f"Installed the {skill.SKILL_NAME} skill in {len(written)} folder(s); "
               f"{len(targets) - len(written)} already up to date.")
