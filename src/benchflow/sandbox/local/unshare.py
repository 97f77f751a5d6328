"""The same sandbox without bubblewrap: util-linux ``unshare`` plus a small sh script.

The local backend describes every process as a bubblewrap command line (run
after ``nsenter`` into the sandbox's user, network, IPC and UTS namespaces).
Where ``bwrap`` is not installed, :func:`translate` turns that command line
(which only ever uses the options listed in ``_ARITY``) into ``unshare`` with
new mount and PID (and network) namespaces, running a POSIX sh script that
builds the same view on a tmpfs, ``pivot_root``s into it and execs the
command with the same capability bounding set (``setpriv``). ``--kill-child``
plus ``setpriv --pdeathsig`` play the part of ``--die-with-parent``: killing
the ``unshare`` process, or BenchFlow dying, kills the namespace's init and so
every process in it. The environment is inherited, never put on a command line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

_ARITY = {"--die-with-parent": 0, "--unshare-pid": 0, "--unshare-net": 0, "--chdir": 1, "--dir": 1,
          "--tmpfs": 1, "--proc": 1, "--dev": 1, "--bind": 2, "--ro-bind": 2, "--symlink": 2,
          "--cap-drop": 1, "--cap-add": 1}

# $R is the new root (a tmpfs, or a bind of the build overlay). Every mount stays in
# this mount namespace (propagation private), so nothing is left on the host.
_SCRIPT = r"""
set -e
_bf_R=$1; shift
mount -t tmpfs -o mode=0755 tmpfs "$_bf_R"
_bf_target() { case "$1" in /) printf %s "$_bf_R" ;; *) printf %s "$_bf_R$1" ;; esac; }
_bf_mkpoint() {
  if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")"; [ -e "$2" ] || : > "$2"; fi
}
_bf_cwd=/
while [ "$1" != -- ]; do
  case "$1" in
    bind|ro-bind)
      _bf_t=$(_bf_target "$3"); _bf_mkpoint "$2" "$_bf_t"; mount --rbind "$2" "$_bf_t"
      [ "$1" = ro-bind ] && mount -o remount,bind,ro "$_bf_t"
      shift 3 ;;
    symlink) _bf_t=$(_bf_target "$3"); mkdir -p "$(dirname "$_bf_t")"; ln -s "$2" "$_bf_t"; shift 3 ;;
    dir) mkdir -p "$(_bf_target "$2")"; shift 2 ;;
    tmpfs) _bf_t=$(_bf_target "$2"); mkdir -p "$_bf_t"; mount -t tmpfs -o mode=1777 tmpfs "$_bf_t"; shift 2 ;;
    proc) _bf_t=$(_bf_target "$2"); mkdir -p "$_bf_t"; mount -t proc proc "$_bf_t"; shift 2 ;;
    dev)
      _bf_t=$(_bf_target "$2"); mkdir -p "$_bf_t"; mount -t tmpfs -o mode=0755 tmpfs "$_bf_t"
      for _bf_n in null zero full random urandom tty; do
        : > "$_bf_t/$_bf_n"; mount --bind "/dev/$_bf_n" "$_bf_t/$_bf_n"
      done
      mkdir -p "$_bf_t/pts" "$_bf_t/shm"; mount -t devpts -o newinstance,ptmxmode=0666 devpts "$_bf_t/pts"
      ln -s pts/ptmx "$_bf_t/ptmx"; ln -s /proc/self/fd "$_bf_t/fd"
      ln -s /proc/self/fd/0 "$_bf_t/stdin"; ln -s /proc/self/fd/1 "$_bf_t/stdout"
      ln -s /proc/self/fd/2 "$_bf_t/stderr"
      shift 2 ;;
    chdir) _bf_cwd=$2; shift 2 ;;
    *) echo "local sandbox: unknown view op $1" >&2; exit 125 ;;
  esac
done
shift
cd "$_bf_R"
# pivot_root(".", ".") stacks the old root over the new one; detaching it needs no
# put-old folder, so a read-only new root works too.
pivot_root . .
umount -l .
cd "$_bf_cwd"
# The script stays PID 1 (as bubblewrap's own init does) so the command gets normal
# signal handling; stdin is handed on explicitly since a background job would lose it.
exec 3<&0
"$@" <&3 3<&- &
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
        return [shutil.which("bwrap") or "bwrap", *bwrap_args]
    newroot.mkdir(parents=True, exist_ok=True)
    return translate(bwrap_args, newroot)


def translate(bwrap_argv: list[str], newroot: Path) -> list[str]:
    """``unshare`` argv equivalent to ``bwrap_argv`` (everything after the ``bwrap`` word).

    ``newroot`` is an empty host folder used as the mountpoint of the new root.
    """
    setpriv = shutil.which("setpriv") or "setpriv"
    namespaces = ["--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"]
    ops: list[str] = []
    caps: list[str] = []
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
        elif word == "--cap-drop":
            caps = [] if values[0] == "ALL" else [c for c in caps if c != values[0]]
        elif word == "--cap-add":
            caps.append(values[0])
        elif word in ("--bind", "--ro-bind", "--symlink", "--dir", "--tmpfs", "--proc", "--dev", "--chdir"):
            ops += [word[2:], *values]
    bounding = ",".join(["-all", *(f"+{c.lower().removeprefix('cap_')}" for c in caps)])
    command = [setpriv, f"--bounding-set={bounding}", "--inh-caps=-all", "--", *bwrap_argv[i + 1:]]
    return [setpriv, "--pdeathsig", "KILL", "--", shutil.which("unshare") or "unshare", *namespaces,
            "sh", "-c", _SCRIPT, "sh", str(newroot), *ops, "--", *command]
