"""Codex account Apps turned off inside a trial's sandbox, and proven off, before the agent starts.

Codex loads "managed requirements" from ``/etc/codex/requirements.toml``: settings a user's config and
``-c`` overrides cannot loosen. ``disabled`` writes ``[features] apps = false`` there (root-owned, 0644;
an existing file is kept byte for byte, never loosened or replaced), then asks the installed Codex, as
the agent's user and with ``-c features.apps=true``, for its feature list: ``apps`` must come back
``false``. Anything else (a requirements file that is a link or writable by others, one that allows
Apps, a Codex that cannot answer) refuses the trial before its agent starts, with the opt-out named.
The agent must not be root: root could rewrite the file. ``inherit`` leaves the sandbox as it is.

The receipt (``codex_apps_policy.json``) says what was asked and applied, the requirements' sha256,
the native Codex version and the probe; it proves the configuration, not that a hosted App is absent.
"""

from __future__ import annotations

import hashlib
from typing import Any

from benchflow.errors import AgentError
from benchflow.sandbox.base import Sandbox

REQUIREMENTS = "/etc/codex/requirements.toml"
OPT_OUT = "pass --codex-apps-policy inherit (run config: codex_apps_policy: inherit) to leave account Apps as configured"
_ENSURE = r'''
f=/etc/codex/requirements.toml
{ [ -L /etc/codex ] || [ -L "$f" ]; } && { echo "/etc/codex or $f is a symbolic link" >&2; exit 3; }
mkdir -p /etc/codex && chown 0:0 /etc/codex && chmod 755 /etc/codex || exit 3
created=0
if [ ! -e "$f" ]; then
  t="$f.benchflow.$$"
  printf '[features]\napps = false\n' > "$t" && chmod 644 "$t" && mv "$t" "$f" || exit 3
  created=1
fi
set -- $(ls -ln "$f")
case "$1" in -????-??-?*) ;; *) echo "$f is writable by others than root ($1)" >&2; exit 3 ;; esac
[ "$3" = 0 ] || { echo "$f is owned by uid $3, not root" >&2; exit 3; }
echo "created=$created"
'''


def codex_command(harness: str) -> list[str]:
    """How the installed Codex is asked (the ACP adapter passes ``cli`` on to its native Codex)."""
    return ["/opt/benchflow/bin/codex"] if harness == "native" else ["/opt/benchflow/bin/codex-acp", "cli"]


def _refused(reason: str) -> AgentError:
    return AgentError(f"Codex Apps policy disabled could not be enforced: {reason}; {OPT_OUT}",
                      category="sandbox_setup")


async def enforce_disabled(sandbox: Sandbox, user: str | None, harness: str) -> dict[str, Any]:
    """Install and prove the disabled policy; the receipt's fields.

    Raises:
        AgentError: the policy could not be put in place or the probe did not show Apps off.
    """
    if user is None:
        raise _refused("the agent runs as root, which could rewrite the requirements")
    ensured = await sandbox.exec(["sh", "-c", _ENSURE], timeout=60)
    if not ensured.success:
        raise _refused(f"installing {REQUIREMENTS} failed ({(ensured.stderr or ensured.stdout).strip()[-200:]})")
    content = await sandbox.exec(["cat", REQUIREMENTS], timeout=60)
    codex = codex_command(harness)
    version = await sandbox.exec([*codex, "-V"], user=user, timeout=60, stdin=b"")
    probe = await sandbox.exec([*codex, "-c", "features.apps=true", "features", "list"], user=user, timeout=60,
                               stdin=b"")
    rows = [line.split() for line in probe.stdout.splitlines() if line.split()[:1] == ["apps"]]
    if not probe.success or len(rows) != 1 or rows[0][-1:] != ["false"]:
        found = " ".join(rows[0]) if len(rows) == 1 else f"rc={probe.return_code} {probe.stderr.strip()[-160:]}"
        raise _refused(f"Codex still reports Apps on with -c features.apps=true ({found}); the existing "
                       f"{REQUIREMENTS} does not turn them off")
    return {"mechanism": "managed_requirements", "requirements": REQUIREMENTS,
            "requirements_created": "created=1" in ensured.stdout,
            "requirements_sha256": hashlib.sha256(content.stdout.encode()).hexdigest(),
            "native_version": version.stdout.strip().removeprefix("codex-cli ") if version.success else None,
            "effective_apps": False, "override_probe": "cli_true_remains_false",
            "authenticated_tool_absence_verified": False}
