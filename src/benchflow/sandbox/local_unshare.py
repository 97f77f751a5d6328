"""The same sandbox without bubblewrap: util-linux ``unshare`` plus a small sh script.

The local backend describes every process as a bubblewrap command line. Where
``bwrap`` is not installed, :func:`translate` turns that command line (which
only ever uses the options listed in ``_ARITY``) into ``unshare`` with new
mount/PID/IPC/UTS (and network) namespaces, running a POSIX sh script that
builds the same view on a tmpfs, ``pivot_root``s into it and execs the
command. ``--kill-child`` plus ``setpriv --pdeathsig`` play the part of
``--die-with-parent``: killing the ``unshare`` process, or BenchFlow dying,
kills the namespace's init and so every process in it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

_ARITY = {"--die-with-parent": 0, "--unshare-pid": 0, "--unshare-ipc": 0, "--unshare-uts": 0,
          "--unshare-net": 0, "--unshare-user": 0, "--clearenv": 0, "--hostname": 1, "--uid": 1, "--gid": 1,
          "--chdir": 1, "--dir": 1, "--tmpfs": 1, "--proc": 1, "--dev": 1, "--setenv": 2, "--bind": 2,
          "--ro-bind": 2, "--symlink": 2}

# $R is the new root (a tmpfs, or a bind of the build overlay). Every mount stays in
# this mount namespace (propagation private), so nothing is left on the host.
_SCRIPT = r"""
set -e
R=$1; shift
mount -t tmpfs -o mode=0755 tmpfs "$R"
target() { case "$1" in /) printf %s "$R" ;; *) printf %s "$R$1" ;; esac; }
mkpoint() {
  if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")"; [ -e "$2" ] || : > "$2"; fi
}
hostname_=; cwd=/
while [ "$1" != -- ]; do
  case "$1" in
    bind|ro-bind)
      t=$(target "$3"); mkpoint "$2" "$t"; mount --bind "$2" "$t"
      [ "$1" = ro-bind ] && mount -o remount,bind,ro "$t"
      shift 3 ;;
    symlink) t=$(target "$3"); mkdir -p "$(dirname "$t")"; ln -s "$2" "$t"; shift 3 ;;
    dir) mkdir -p "$(target "$2")"; shift 2 ;;
    tmpfs) t=$(target "$2"); mkdir -p "$t"; mount -t tmpfs -o mode=1777 tmpfs "$t"; shift 2 ;;
    proc) t=$(target "$2"); mkdir -p "$t"; mount -t proc proc "$t"; shift 2 ;;
    dev)
      t=$(target "$2"); mkdir -p "$t"; mount -t tmpfs -o mode=0755 tmpfs "$t"
      for n in null zero full random urandom tty; do : > "$t/$n"; mount --bind "/dev/$n" "$t/$n"; done
      mkdir -p "$t/pts" "$t/shm"; mount -t devpts -o newinstance,ptmxmode=0666 devpts "$t/pts"
      ln -s pts/ptmx "$t/ptmx"; ln -s /proc/self/fd "$t/fd"
      ln -s /proc/self/fd/0 "$t/stdin"; ln -s /proc/self/fd/1 "$t/stdout"; ln -s /proc/self/fd/2 "$t/stderr"
      shift 2 ;;
    hostname) hostname_=$2; shift 2 ;;
    chdir) cwd=$2; shift 2 ;;
    *) echo "local sandbox: unknown view op $1" >&2; exit 125 ;;
  esac
done
shift
[ -z "$hostname_" ] || printf %s "$hostname_" > /proc/sys/kernel/hostname
cd "$R"
# pivot_root(".", ".") stacks the old root over the new one; detaching it needs no
# put-old folder, so a read-only new root works too.
pivot_root . .
umount -l .
cd "$cwd"
# The script stays PID 1 (as bubblewrap's own init does) so the command gets normal
# signal handling; stdin is handed on explicitly since a background job would lose it.
exec 3<&0
/usr/bin/env -i "$@" <&3 3<&- &
wait $!
"""


def tool() -> str:
    """``bwrap`` when installed, else ``unshare`` (``BENCHFLOW_LOCAL_TOOL`` forces one)."""
    forced = os.environ.get("BENCHFLOW_LOCAL_TOOL")
    if forced in ("bwrap", "unshare"):
        return forced
    return "bwrap" if shutil.which("bwrap") else "unshare"


def wrap(bwrap_args: list[str], newroot: Path) -> list[str]:
    """The host argv for a sandbox process described by bubblewrap arguments."""
    if tool() == "bwrap":
        return ["bwrap", *bwrap_args]
    newroot.mkdir(parents=True, exist_ok=True)
    return translate(bwrap_args, newroot)


def translate(bwrap_argv: list[str], newroot: Path) -> list[str]:
    """``unshare`` argv equivalent to ``bwrap_argv`` (everything after the ``bwrap`` word).

    ``newroot`` is an empty host folder used as the mountpoint of the new root.
    """
    namespaces = ["--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--ipc", "--uts"]
    if os.geteuid() != 0:
        namespaces = ["--user", "--map-root-user", *namespaces]
    ops: list[str] = []
    env: list[str] = []
    i = 0
    while i < len(bwrap_argv):
        word = bwrap_argv[i]
        if word == "--":
            break
        if word not in _ARITY:
            raise ValueError(f"no unshare equivalent for bwrap option {word}")
        values = bwrap_argv[i + 1:i + 1 + _ARITY[word]]
        i += 1 + _ARITY[word]
        if word == "--unshare-net":
            namespaces.append("--net")
        elif word == "--setenv":
            env.append(f"{values[0]}={values[1]}")
        elif word in ("--bind", "--ro-bind", "--symlink", "--dir", "--tmpfs", "--proc", "--dev",
                      "--hostname", "--chdir"):
            ops += [word[2:], *values]
    command = bwrap_argv[i + 1:]
    return ["setpriv", "--pdeathsig", "KILL", "--", "unshare", *namespaces, "sh", "-c", _SCRIPT, "sh", str(newroot), *ops, "--", *env, *command]
