"""How much of the reference CLI answers: walk bench's command tree against the CLI reference.

Reads the reference's sections (``bench A B`` heading, its ``Options`` table: one ``--flag | type | …`` row
each) and bench's own Click tree (hidden commands and options included), and prints: leaf commands of the
reference that bench has / lacks, and option rows that bench accepts / does not, per command and in total.
A "leaf" is a reference command with no subcommands of its own in the reference.

Usage: .venv/bin/python scripts/cli_coverage.py REFERENCE.txt [--missing]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HEADING = re.compile(r"^(bench(?: [a-z][a-z0-9-]*)*)(?: \(0\.10\))?$")
LISTED = re.compile(r"^(bench(?: [a-z][a-z0-9-]*)+)(?: \(0\.10\))? \|")
"""A row of the reference's command tables (``bench eval run | Run … |``): every command it names."""
JOINED = re.compile(r"\](bench(?: [a-z][a-z0-9-]*)+)$")
"""A usage line run together with the next section's heading (``bench x [OPTIONS]bench y z``): that heading."""
ROW = re.compile(r"^(--[a-z0-9][a-z0-9-]*)(?: \(0\.10\))?(?:, (-[a-zA-Z]))? \|")


def reference(path: Path) -> tuple[dict[str, set[str]], set[str]]:
    """(each detailed section's option rows, every command the tables list)."""
    commands: dict[str, set[str]] = {}
    listed: set[str] = set()
    current = None
    for line in path.read_text().splitlines():
        named = LISTED.match(line.strip())
        if named:
            listed.add(named.group(1))
        heading = HEADING.match(line.strip()) or JOINED.search(line.strip())
        if heading:
            current = heading.group(1)
            commands.setdefault(current, set())
            continue
        row = ROW.match(line.strip())
        if row and current:
            commands[current].add(row.group(1))
    return commands, listed


def ours() -> dict[str, set[str]]:
    import click

    from benchflow.cli.app import build_app

    root = build_app()
    out: dict[str, set[str]] = {}

    def walk(cmd: click.Command, path: str, ctx: click.Context) -> None:
        out[path] = {opt for p in cmd.params for opt in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]
                     if opt.startswith("--")}
        if hasattr(cmd, "list_commands"):  # a group (bench's lazy groups are groups by their methods)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, f"{path} {name}", click.Context(sub, parent=ctx, info_name=name))

    walk(root, "bench", click.Context(root, info_name="bench"))
    from benchflow.cli.app import GROUP_DEFAULTS

    for group, default in GROUP_DEFAULTS.items():  # ``bench cache --json`` runs ``bench cache list --json``
        out[f"bench {group}"] |= out.get(f"bench {group} {default}", set())
    return out


def main() -> int:
    (ref, listed), have = reference(Path(sys.argv[1])), ours()
    leaves = sorted(c for c in listed | set(ref) if not any(o.startswith(c + " ") for o in listed | set(ref)))
    present = [c for c in leaves if c in have]
    rows = [(c, f) for c in sorted(ref) for f in sorted(ref[c])]
    accepted = [(c, f) for c, f in rows if f in have.get(c, set())]
    print(f"leaf commands: {len(present)} of {len(leaves)} present")
    print(f"option rows (of the commands with a detailed section): {len(accepted)} of {len(rows)} accepted")
    if "--missing" in sys.argv:
        for c in leaves:
            if c not in have:
                print(f"missing command: {c}")
        for c, f in rows:
            if (c, f) not in accepted and c in have:
                print(f"missing option: {c} {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
