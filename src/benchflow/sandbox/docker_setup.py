"""What a fresh container needs before a trial, done by its own main process at start.

The container's command runs the setup script as root, prints a marker line
with the script's exit status (and its output when it failed), then becomes
the keep-alive loop. :func:`benchflow.sandbox.docker.sandbox.DockerSandbox.start`
attaches to the container before starting it and reads up to the marker, so
setup costs no extra exec round trip.

The script uses POSIX sh and the POSIX utilities ``mkdir``, ``chmod``, ``chown``
and ``cp`` only. The user is made as ``useradd -m`` makes it, without ``useradd``
(which takes about 0.1 s of every start, most of it syncing the files it writes):
appended to ``/etc/passwd``, ``/etc/group`` (and ``/etc/shadow``, ``/etc/gshadow``,
``/etc/subuid``, ``/etc/subgid`` when present) with the next uid from 1000 that is
free as a uid and as a gid (read with the shell's own ``read``), a home from
``/etc/skel`` unless it exists already, with ``login.defs``' ``HOME_MODE`` (else
its ``UMASK``). Every image gets the same, with or without ``useradd``.

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
while IFS=: read -r _ _ gid _; do
  case "$gid" in ''|*[!0-9]*) continue ;; esac
  [ "$gid" -gt "$top" ] && [ "$gid" -lt 60000 ] && top=$gid
done < /etc/group
if [ -z "$found" ]; then
  case "$user" in
    [a-z_]*[!a-z0-9_-]* | [!a-z_]*) echo "invalid user name $user (as useradd: [a-z_][a-z0-9_-]*)" >&2; exit 1 ;;
  esac
  shell=/bin/sh; [ -x /bin/bash ] && shell=/bin/bash
  id=$((top + 1)); home=/home/$user; mode=; mask=022
  if [ -f /etc/login.defs ]; then
    while read -r key value _; do
      case "$key" in HOME_MODE) mode=$value ;; UMASK) mask=$value ;; esac
    done < /etc/login.defs
  fi
  echo "$user:x:$id:" >> /etc/group
  echo "$user:x:$id:$id::$home:$shell" >> /etc/passwd
  if [ -f /etc/shadow ]; then echo "$user:!:19000:0:99999:7:::" >> /etc/shadow; fi
  if [ -f /etc/gshadow ]; then echo "$user:!::" >> /etc/gshadow; fi
  for f in /etc/subuid /etc/subgid; do
    [ -f "$f" ] || continue
    next=100000
    while IFS=: read -r _ start count; do
      case "$start$count" in ''|*[!0-9]*) continue ;; esac
      [ $((start + count)) -gt "$next" ] && next=$((start + count))
    done < "$f"
    echo "$user:$next:65536" >> "$f"
  done
  if [ ! -e "$home" ]; then
    umask "$mask"; mkdir -p "$home"  # only what follows is the setup's own chown
    if [ -d /etc/skel ]; then cp -a /etc/skel/. "$home/"; fi
    chown -R "$id:$id" "$home"
    if [ -n "$mode" ]; then chmod "$mode" "$home"; fi
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
