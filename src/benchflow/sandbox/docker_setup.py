"""What a fresh container needs before a trial, done by its own main process at start.

The container's command runs the setup script as root, prints a marker line
with the script's exit status (and its output when it failed), then becomes
the keep-alive loop. :func:`benchflow.sandbox.docker.DockerSandbox.start`
attaches to the container before starting it and reads up to the marker, so
setup costs no extra exec round trip.

The script uses POSIX sh and the POSIX utilities ``mkdir``, ``chmod`` and
``chown`` only: ``useradd`` is used when the image has it, otherwise the user
is appended to ``/etc/passwd`` and ``/etc/group`` (and ``/etc/shadow`` when
present) with the next free uid from 1000, read with the shell's own ``read``.

Paths (contracts §2.1): ``/logs/agent``, ``/logs/artifacts`` and
``/logs/verifier`` mode 0777, ``/tmp`` 1777, the workspace owned by the
sandbox user. Before verification the verifier fence makes ``/logs/verifier``
afresh, root-owned 0755 (:mod:`benchflow.verify.fence`).

:func:`hardening` is the rest of the container's shape that keeps task code
in: no privilege gain through set-uid files, a small capability set, and a
process limit so that a fork bomb stays inside.
"""

from __future__ import annotations

import os

from benchflow.errors import ConfigError

KEPT_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE",
                     "SETGID", "SETUID", "SYS_CHROOT")
"""Every capability a sandbox's root keeps (all others are dropped): what package managers, ``chown``,
``useradd``, ``su``/``sshd`` and servers on low ports need. Dropped from Docker's defaults:
``MKNOD``, ``NET_RAW``, ``SETFCAP``, ``SETPCAP``. See docs/SECURITY.md."""

DEFAULT_PIDS_LIMIT = 4096
PIDS_LIMIT_ENV = "BENCHFLOW_DOCKER_PIDS_LIMIT"


def pids_limit() -> int:
    """The most processes (threads included) one sandbox may hold: ``BENCHFLOW_DOCKER_PIDS_LIMIT``,
    else 4096.

    Raises:
        ConfigError: the variable is not a whole number of at least 64.
    """
    raw = os.environ.get(PIDS_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_PIDS_LIMIT
    if not raw.isdigit() or int(raw) < 64:
        raise ConfigError(f"{PIDS_LIMIT_ENV}={raw!r}: give a whole number of processes, at least 64 "
                          f"(default {DEFAULT_PIDS_LIMIT})")
    return int(raw)


def hardening() -> dict[str, object]:
    """Host-config options of every sandbox container (``create_host_config`` keywords)."""
    return {"security_opt": ["no-new-privileges"], "cap_drop": ["ALL"], "cap_add": list(KEPT_CAPABILITIES),
            "pids_limit": pids_limit()}

SETUP = r"""
user=$1; wd=$2
mkdir -p /logs/agent /logs/verifier /logs/artifacts /tmp "$wd"
chmod 0777 /logs/agent /logs/artifacts /logs/verifier
chmod 1777 /tmp
[ -n "$user" ] || exit 0
found=; top=999
while IFS=: read -r name _ uid _ _ _ _; do
  [ "$name" = "$user" ] && found=1
  case "$uid" in ''|*[!0-9]*) continue ;; esac
  [ "$uid" -gt "$top" ] && [ "$uid" -lt 60000 ] && top=$uid
done < /etc/passwd
if [ -z "$found" ]; then
  shell=/bin/sh; [ -x /bin/bash ] && shell=/bin/bash
  if command -v useradd >/dev/null 2>&1; then
    useradd -m -s "$shell" "$user"
  else
    id=$((top + 1))
    echo "$user:x:$id:" >> /etc/group
    echo "$user:x:$id:$id::/home/$user:$shell" >> /etc/passwd
    [ -f /etc/shadow ] && echo "$user:!:19000::::::" >> /etc/shadow
    mkdir -p "/home/$user"
    chown "$id:$id" "/home/$user"
  fi
fi
case "$wd" in /) ;; *) chown -R "$user" "$wd" ;; esac
"""

READY = "__benchflow_setup__"

KEEPALIVE = "while read -r _; do :; done; while sleep 86400; do :; done"
"""Blocks on an open, silent stdin (the container has ``stdin_open``): needs no ``sleep``
binary, and dies on SIGTERM at once (docker-init is PID 1, so there is no grace wait). Podman
closes that stdin when the start's attach connection closes; then ``sleep`` keeps it alive."""

DONE = "/etc/.benchflow-setup"
"""Written by a setup that succeeded: the user and workdir it set up for. A container started from a
snapshot of a set-up sandbox (a branch's restore) finds it and skips the setup: the snapshot holds
the sandbox as it was, and setting up again would not only cost time: ``chown -R`` of the
workspace copies every file of the snapshot's layers up into the new container (overlay storage),
which makes the restore, and every later snapshot, as slow as the workspace is large."""

MAIN = f"""
setup() {{ set -e
{SETUP}
}}
want="$1 $2"; had=
[ -f {DONE} ] && read -r had < {DONE}
if [ "$had" = "$want" ]; then rc=0; else
  out=$( (setup "$@") 2>&1 ); rc=$?
  [ "$rc" = 0 ] && printf '%s\\n' "$want" 2>/dev/null > {DONE}
fi
[ "$rc" = 0 ] || printf '%s\\n' "$out"
echo "{READY} $rc"
{KEEPALIVE}
"""


def main_command(user: str | None, workdir: str) -> list[str]:
    """The container's command: set up for ``user`` (None: root only) and ``workdir``, report,
    then keep the container alive."""
    return ["/bin/sh", "-c", MAIN, "sh", user or "", workdir]


def parse_ready(output: str) -> tuple[int, str] | None:
    """(setup exit status, what setup printed) once the marker line is in ``output``; else None."""
    before, sep, rest = output.partition(READY + " ")
    if not sep or "\n" not in rest:
        return None
    status = rest.partition("\n")[0].strip()
    return (int(status) if status.isdigit() else 1), before


def resolve_workdir(spec_workdir: str | None, image_workdir: str | None) -> str:
    """The task's workdir, else the image's WORKDIR; ``/`` or unset becomes ``/root``."""
    chosen = spec_workdir or image_workdir or "/"
    return "/root" if chosen.rstrip("/") == "" else chosen
