"""The verifier fence: when the tests arrive, nothing the agent started still runs and nothing it planted
is loaded by the verifier (contracts §2.2 step 1).

Run after the agent phase and before the verifier's files are uploaded:

1. Every process of the agent user is frozen, then killed. First, as the agent user,
   ``kill -STOP -1; kill -KILL -1``: the kernel signals every process that user may signal in one
   step that a concurrent ``fork`` cannot outrun (a fork racing it is aborted). The root script
   starts it through ``setpriv`` (else ``runuser``, else ``su``), so it costs no exec of its own.
   That is the script's only ``fork`` before the agent is gone: when the agent has filled the
   process table, the fork fails, the shell gives up, and the script runs once more without it.
   Then, as root, a
   loop over ``/proc`` stops every agent process it finds, kills them once a whole pass finds them
   all stopped, and repeats until none is left (or gives up: the trial's verification then fails
   as an error, never runs beside a live agent). The loop uses shell builtins only, so it works in
   a sandbox whose process table the agent has filled (``fork`` would fail there). When the table
   is so full that the engine cannot even start the fence's exec (return code 126), the exec is tried
   again in room the sandbox makes for it (:func:`~benchflow.sandbox.base.room_to_start`), held
   until the fence is done: a fork bomb cannot turn the agent's failed trial into an infra error.
2. ``/logs/verifier`` is made afresh: root-owned, 0755 (owned by ``verifier.user`` when that is set).
3. Unless ``verifier.hardening.cleanup_conftests`` is false, every ``conftest.py`` outside the
   verifier folder is deleted (they would change how pytest runs the tests).
4. With a non-root agent: ``sitecustomize.py``, ``usercustomize.py`` and ``*.pth`` are deleted from
   the folders of the system Pythons' path that the agent can write (Python runs them at start).
   The path is read with ``python -I -S`` so that nothing planted runs as root while it is read.
   Then, still with a non-root agent, what it wrote that the verifier would run in its stead: its
   files and packages at the top of the working folder named like a module of the standard
   library or pytest (:data:`SHADOWED_NAMES`: that folder is ``sys.path[0]`` of ``python -m pytest``
   run there, and of ``python x.py``), and its files in folders on the verifier's ``PATH`` that it
   can write. The verifier's environment is the image's own, as by hand; these files are what the
   agent could use to change it.
4b. Cached bytecode under the verifier folder's destination is deleted: only the upload's own
   sources are compiled there.
5. The trusted-plugins shim is written root-owned to :data:`~.environment.PLUGIN_DIR`; native tasks
   get ``/tests`` as a link to ``/verifier``.
6. Given a verifier folder (a small one, :data:`CARRY_MAX_BYTES`), its archive rides on the fence
   exec's stdin and is unpacked at ``/`` by the image's ``tar`` as the fence's last step, after the
   agent is gone: the verifier's upload costs no round trip of its own. Without ``tar`` the
   caller uploads it as before (:attr:`FenceReport.uploaded` is False). A root verifier then runs
   in the same exec (:func:`fence_then_run`), which sends ``/logs/verifier`` back when it ends.

A root agent is not fenced: it is trusted with the whole sandbox, and the processes it started
(servers a task's tests talk to) keep running, as the contract says.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import BenchError, VerifierError
from benchflow.sandbox.base import ExecResult, Sandbox, room_to_start

from .environment import PLUGIN_DIR, PLUGIN_MODULE
from .split_exec import run_split

STOP_ALL = "kill -STOP -1; kill -KILL -1; exit 0"
"""Run as the agent user: freeze, then kill, every process it owns except this shell."""

FENCE_ROUNDS = 2000

CARRY_MAX_BYTES = 4 << 20
"""The largest verifier archive the fence carries on its stdin (held in memory); a larger folder is
uploaded by the caller. Also the most of ``/logs/verifier`` that :func:`fence_then_run` sends back:
a larger one (``du``), or a stream past it (``dd``: a sparse file ``du`` counts small), is left to its
copy-out, so a verifier's big leftovers cost its own time budget nothing."""
_SEND_KIB = CARRY_MAX_BYTES // 1024 - 64
"""``du -sk`` of ``/logs/verifier`` at most this, the exec sends it back (room for tar's headers)."""

CANNOT_START = 126
"""An exec's return code when the engine could not start it (in the fence's own exec, nothing else
returns it: the script runs no command of its own there)."""
START_TRIES = 3
"""How often the fence's exec is tried again in the room the sandbox makes (:func:`_start`)."""

# $1 agent user  $2 verifier user  $3 link|no  $4 plugin dir  $5 plugin module  $6 1|0 cleanup conftests
# $7 workspace  $8 verifier folder  $9 the plugin  ${10} 1|0 stdin is a tar to unpack at /
# ${11} the module names an agent's file must not shadow  ${12} the verifier's PATH ('' = this exec's)
# ${13} 1|0 kill -1 as the agent first; ${14} (optional) a nonce: once done, print "NONCE fenced", run
# ${15}... (the verifier), print "NONCE verified" and an archive of /logs/verifier (cut past the carry
# limit), and exit with the verifier's code. Until the agent is gone: builtins only, no fork (but that one).
_PREPARE = r"""
u=$1; vu=$2; link=$3; plugins=$4; module=$5; conftests=$6; wd=$7; vdir=$8; plugin=$9; carry=${10}
shadowed=" ${11} "; vpath=${12:-$PATH}; stopall=${13}; nonce=${14}; uid=; gid=
[ -n "$nonce" ] && shift 14
case "$u" in
  '') ;;
  *[!0-9]*) while IFS=: read -r n _ i g _; do [ "$n" = "$u" ] && { uid=$i; gid=$g; break; }; done < /etc/passwd ;;
  *) uid=$u; gid=$u ;;
esac
[ "$uid" = 0 ] && uid=
if [ -n "$uid" ] && [ "$stopall" = 1 ]; then
  if command -v setpriv >/dev/null 2>&1; then
    setpriv --reuid="$uid" --regid="$gid" --clear-groups /bin/sh -c '__STOP_ALL__' 2>/dev/null
  elif command -v runuser >/dev/null 2>&1; then runuser -u "$u" -- /bin/sh -c '__STOP_ALL__' 2>/dev/null
  elif command -v su >/dev/null 2>&1; then su -s /bin/sh -c '__STOP_ALL__' "$u" </dev/null >/dev/null 2>&1
  fi
fi
if [ -n "$uid" ]; then
  round=0; frozen=0
  while :; do
    round=$((round + 1)); seen=0; moving=0
    for d in /proc/[0-9]*; do
      s=; ids=
      while read -r k a b c e; do
        case "$k" in State:) s=$a ;; Uid:) ids=" $a $b $c $e "; break ;; esac
      done < "$d/status" 2>/dev/null
      case "$ids" in *" $uid "*) ;; *) continue ;; esac
      if [ $frozen = 1 ]; then kill -KILL "${d#/proc/}" 2>/dev/null; else kill -STOP "${d#/proc/}" 2>/dev/null; fi
      case "$s" in Z) ;; T|t) seen=$((seen + 1)) ;; *) seen=$((seen + 1)); moving=$((moving + 1)) ;; esac
    done
    [ $seen = 0 ] && break
    if [ $round -ge __ROUNDS__ ]; then
      echo "$seen process(es) of user $u still alive after $round rounds" >&2; exit 3
    fi
    if [ $moving = 0 ]; then frozen=1; else frozen=0; fi
  done
fi
{ rm -rf /logs/verifier && mkdir -p /logs/verifier && chmod 755 /logs/verifier; } || exit 4
[ -n "$vu" ] && chown "$vu" /logs/verifier 2>/dev/null
[ "$link" = link ] && { [ -e /tests ] || [ -L /tests ] || ln -s /verifier /tests; }
rm -rf "$plugins" && mkdir -p "$plugins" && chmod 755 "$plugins" \
  && printf '%s' "$plugin" > "$plugins/$module.py" && chmod 644 "$plugins/$module.py"
clean_conftests() {  # a function: its set -- leaves the caller's "$@" (the verifier's argv) alone
  rootdev=$(stat -c %d / 2>/dev/null)
  set -- /
  for p in "$wd" /tmp /var/tmp /dev/shm /home /root /logs; do
    [ -d "$p" ] || continue
    [ -n "$rootdev" ] && [ "$(stat -c %d "$p" 2>/dev/null)" = "$rootdev" ] && continue
    set -- "$@" "$p"
  done
  find "$@" -xdev \( -path /proc -o -path /sys -o -path /verifier -o -path /tests -o -path "$vdir" \
    -o -path "$plugins" \) -prune -o -name conftest.py ! -type d -print -exec rm -f {} + 2>/dev/null \
    | while IFS= read -r f; do echo "conftest $f"; done
}
[ "$conftests" = 1 ] && clean_conftests
if [ -n "$uid" ]; then
  names='( -name sitecustomize.py -o -name usercustomize.py -o -name *.pth )'
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -I -S -c 'import site, sys
print("\n".join(sys.path + site.getsitepackages()))' 2>/dev/null
  done | while IFS= read -r dir; do
    [ -d "$dir" ] || continue
    set -f
    if [ -n "$(find -H "$dir" -maxdepth 0 -type d \( -user "$uid" -o -perm -0002 -o \( -group "$gid" -perm -0020 \) \) \
               2>/dev/null)" ]; then
      find -H "$dir" -mindepth 1 -maxdepth 1 $names ! -type d -print -exec rm -f {} + 2>/dev/null
    else
      find -H "$dir" -mindepth 1 -maxdepth 1 $names -type f \( -user "$uid" -o -perm -0002 \) -print \
        -exec rm -f {} + 2>/dev/null
    fi
    set +f
  done | while IFS= read -r f; do echo "startup $f"; done
  # What the agent wrote in the working folder under the name of a module the verifier's Python or
  # pytest imports: that folder is sys.path[0] of `python -m pytest` and of `python x.py` run there.
  [ -d "$wd" ] && find "$wd" -mindepth 1 -maxdepth 1 -user "$uid" 2>/dev/null | while IFS= read -r f; do
    n=${f##*/}; n=${n%%.*}
    case "$shadowed" in *" $n "*) ;; *) continue ;; esac
    case "${f##*/}" in "$n".py|"$n".pyc|"$n".so|"$n".*.so) ;; *) [ -f "$f/__init__.py" ] || continue ;; esac
    rm -rf "$f" && echo "shadow $f"
  done
  # Programs the agent put in folders on the verifier's PATH that it can write.
  IFS=:; set -f
  for dir in $vpath; do
    [ -d "$dir" ] || continue
    [ -n "$(find -H "$dir" -maxdepth 0 -type d \( -user "$uid" -o -perm -0002 -o \( -group "$gid" -perm -0020 \) \) \
               2>/dev/null)" ] || continue
    find -H "$dir" -mindepth 1 -maxdepth 1 ! -type d -user "$uid" -print -exec rm -f {} + 2>/dev/null \
      | while IFS= read -r f; do echo "path $f"; done
  done
  unset IFS; set +f
fi
# Bytecode left where the verifier's files arrive: only the upload's own files are loaded there.
for d in "$vdir" /tests; do
  [ -d "$d" ] && [ ! -L "$d" ] && find "$d" \( -name __pycache__ -o -name '*.pyc' \) -prune -exec rm -rf {} + 2>/dev/null
done
if [ "$carry" = 1 ]; then
  if command -v tar >/dev/null 2>&1; then
    tar -xf - -C / || { echo "tar could not unpack the verifier folder" >&2; exit 5; }
    echo uploaded
  else
    cat > /dev/null; carry=0
  fi
fi
[ -n "$nonce" ] || exit 0
echo "$nonce fenced"
[ "$carry" = 1 ] || exit 0
"$@"; rc=$?
printf '\n%s verified\n' "$nonce"
size=$(du -sk /logs/verifier 2>/dev/null) && [ "${size%%[!0-9]*}" -le __SEND_KIB__ ] && command -v dd >/dev/null \
  && tar -cf - -C /logs verifier 2>/dev/null | dd bs=4096 count=__SEND_BLOCKS__ 2>/dev/null
exit $rc
""".replace("__ROUNDS__", str(FENCE_ROUNDS)).replace("__STOP_ALL__", STOP_ALL) \
    .replace("__SEND_KIB__", str(_SEND_KIB)).replace("__SEND_BLOCKS__", str(_SEND_KIB // 4 + 1))

_TRUSTED_PLUGINS = Path(__file__).with_name("trusted_plugins.py")

_PYTEST_MODULES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "tomli", "exceptiongroup",
                   "pygments", "colorama")
_NOT_IMPORTED = {"test", "this", "antigravity", "idlelib", "turtledemo", "__hello__", "__phello__"}
"""Standard-library names no verifier imports and agents use for files of their own (``test.py``)."""
SHADOWED_NAMES = " ".join(sorted((set(sys.stdlib_module_names) - _NOT_IMPORTED) | set(_PYTEST_MODULES)))
"""Module names a file the agent wrote in the working folder must not have: there it comes before the
standard library and pytest on ``sys.path`` of a ``python -m pytest`` (or ``python x.py``) run there."""


@dataclass
class FenceReport:
    """What the fence removed: conftest.py files and Python start-up files (paths in the sandbox)."""

    conftests: list[str] = field(default_factory=list)
    startup_files: list[str] = field(default_factory=list)
    shadowing: list[str] = field(default_factory=list)
    """The agent's files in the working folder named like a module of the standard library or pytest."""
    path_programs: list[str] = field(default_factory=list)
    """The agent's files in folders on the verifier's ``PATH`` that it could write."""
    uploaded: bool = False
    """The verifier folder handed to :func:`fence` is in place (unpacked by the fence itself)."""

    def warnings(self, workdir: str) -> list[str]:
        """One line per kind of removal a task author should know about."""
        out = []
        inside = [p for p in self.conftests if p.startswith(workdir.rstrip("/") + "/")]
        if inside:
            out.append(f"removed conftest.py outside the verifier folder before verifying: {', '.join(inside[:5])}"
                       + (f" and {len(inside) - 5} more" if len(inside) > 5 else "")
                       + " (verifier.hardening.cleanup_conftests: false keeps them)")
        if self.startup_files:
            out.append("removed Python start-up files from folders on Python's path that the agent could write: "
                       + ", ".join(self.startup_files[:5]))
        if self.shadowing:
            out.append("removed the agent's files that shadow a module of Python or pytest in the working folder: "
                       + ", ".join(self.shadowing[:5]))
        if self.path_programs:
            out.append("removed the agent's programs from folders on the verifier's PATH that it could write: "
                       + ", ".join(self.path_programs[:5]))
        return out


def is_root(user: str | None) -> bool:
    return user is None or user in ("root", "0")


async def stop_agent_processes(sandbox: Sandbox, agent_user: str | None) -> None:
    """Kill every process of a non-root agent user in one step (``kill -1`` as that user): nothing it
    started can change the workspace afterwards. Best effort: :func:`fence`'s root pass follows."""
    if is_root(agent_user):
        return
    try:
        await sandbox.exec(["sh", "-c", STOP_ALL], user=agent_user, timeout=60)
    except BenchError:
        pass


async def fence(sandbox: Sandbox, *, agent_user: str | None, verifier_user: str | None, link_tests: bool,
                verifier_dir: str, workdir: str, cleanup_conftests: bool,
                carry: Path | None = None, verifier_path: str | None = None) -> FenceReport:
    """Stop the agent and clean the sandbox for the verifier (see the module docstring); ``carry``:
    a local verifier folder to put at ``verifier_dir`` in the same exec when it is small;
    ``verifier_path``: the verifier's ``PATH`` when the task sets one (else the image's).

    Raises:
        VerifierError: category ``verifier_infra`` when the agent's processes could not all be
            stopped, ``/logs/verifier`` could not be made, or the carried folder not unpacked.
    """
    archive = _carried(carry, verifier_dir)
    args = _args(agent_user, verifier_user, link_tests, verifier_dir, workdir, cleanup_conftests, archive,
                 verifier_path)
    room = _Room()
    async with room:
        for stop_all in ("1", "0"):
            result = await _start(sandbox, ["sh", "-c", _PREPARE, "fence", *args, stop_all], archive, room)
            if result.return_code in (0, 3, 4, 5) or result.timed_out:
                break
            # the shell gave up (a fork failed: the agent filled the process table): the loop alone
    _check(result)
    return _report(result.stdout)


async def _start(sandbox: Sandbox, cmd: list[str], archive: bytes | None, room: _Room) -> ExecResult:
    """The fence's exec. One that could not start (:data:`CANNOT_START`: the agent holds every pid the
    sandbox may have) runs again, up to :data:`START_TRIES` times, in the room the sandbox makes for a
    root exec (:func:`~benchflow.sandbox.base.room_to_start`), held by ``room`` until the fence is done."""
    result = await sandbox.exec(cmd, stdin=archive, timeout=FENCE_TIMEOUT)
    for _ in range(START_TRIES):
        if result.return_code != CANNOT_START or result.timed_out:
            break
        await room.enter(sandbox)
        result = await sandbox.exec(cmd, stdin=archive, timeout=FENCE_TIMEOUT)
    return result


class _Room(contextlib.AsyncExitStack):
    """The fence's hold on :func:`~benchflow.sandbox.base.room_to_start`: entered once, on the first
    exec that could not start, left when the fence is done."""

    entered = False

    async def enter(self, sandbox: Sandbox) -> None:
        if not self.entered:
            self.entered = True
            await self.enter_async_context(room_to_start(sandbox))


async def fence_then_run(sandbox: Sandbox, argv: list[str], *, env: dict[str, str], cwd: str | None,
                         timeout: float, agent_user: str | None, link_tests: bool, verifier_dir: str,
                         workdir: str, cleanup_conftests: bool,
                         carry: Path) -> tuple[FenceReport, ExecResult | None, bytes | None]:
    """:func:`fence` and then, in the same exec as root, ``argv`` (the verifier, as root, with ``env``
    and ``cwd``): one exec round trip less. The fence has :data:`FENCE_TIMEOUT` seconds, as on its
    own; ``argv`` has ``timeout`` from the moment the fence's ``NONCE fenced`` line reaches the host
    (a nonce the agent cannot know; :mod:`.split_exec`), exactly as in an exec of its own. Once
    ``argv`` ends, the same exec sends ``/logs/verifier`` back as an archive (after a ``NONCE
    verified`` line): no copy-out round trip either, when it is at most :data:`CARRY_MAX_BYTES`.

    Returns the fence's report, ``argv``'s result with ``argv``'s own output only (after that line)
    or None when ``argv`` did not run: the folder was not carried (too big, no ``tar``: upload it,
    then run ``argv``), or the fence's shell gave up, in which case :func:`fence` ran again on its own
    (it is idempotent); and the archive of ``/logs/verifier`` (its top entry ``verifier``), or None
    when it did not come whole (``argv`` ran out of time, the archive was over the cap): copy it out.

    Raises:
        VerifierError: as :func:`fence`.
    """
    archive = _carried(carry, verifier_dir)
    if archive is None:
        return await fence(sandbox, agent_user=agent_user, verifier_user=None, link_tests=link_tests,
                           verifier_dir=verifier_dir, workdir=workdir, cleanup_conftests=cleanup_conftests,
                           verifier_path=env.get("PATH")), None, None
    nonce = secrets.token_hex(12)
    args = _args(agent_user, None, link_tests, verifier_dir, workdir, cleanup_conftests, archive,
                 env.get("PATH"))
    split = await run_split(sandbox, ["sh", "-c", _PREPARE, "fence", *args, "1", nonce, *argv],
                            line=f"{nonce} fenced", first_timeout=FENCE_TIMEOUT, timeout=timeout,
                            stdin=archive, env=env, cwd=cwd, trailer=f"{nonce} verified", trailer_cap=CARRY_MAX_BYTES)
    if not split.reached:
        if split.result.return_code in (3, 4, 5) or split.result.timed_out:
            _check(split.result)
        return await fence(sandbox, agent_user=agent_user, verifier_user=None, link_tests=link_tests,
                           verifier_dir=verifier_dir, workdir=workdir, cleanup_conftests=cleanup_conftests,
                           carry=carry, verifier_path=env.get("PATH")), None, None
    report = _report(split.head)
    if not report.uploaded:
        return report, None, None
    return report, split.result, (split.trailer or None if not split.result.timed_out else None)


def _args(agent_user: str | None, verifier_user: str | None, link_tests: bool, verifier_dir: str, workdir: str,
          cleanup_conftests: bool, archive: bytes | None, verifier_path: str | None) -> list[str]:
    return [agent_user if not is_root(agent_user) else "", verifier_user or "", "link" if link_tests else "no",
            PLUGIN_DIR, PLUGIN_MODULE, "1" if cleanup_conftests else "0", workdir, verifier_dir,
            _TRUSTED_PLUGINS.read_text(), "1" if archive is not None else "0", SHADOWED_NAMES, verifier_path or ""]


def _check(result: ExecResult) -> None:
    """Raise for a fence that did not finish (see :func:`fence`)."""
    if result.return_code == 3 or result.timed_out:
        detail = result.stderr.strip()[-300:] or "timed out"
        raise VerifierError(f"verifier crashed: the agent's processes could not be stopped before "
                            f"verification ({detail})", category="verifier_infra")
    if result.return_code == 4:
        raise VerifierError("verifier crashed: /logs/verifier could not be made for the verifier: "
                            f"{result.stderr.strip()[-300:]}", category="verifier_infra")
    if result.return_code not in (0, 5):  # the shell gave up twice: never verify beside a live agent
        raise VerifierError(f"verifier crashed: the fence did not finish (rc={result.return_code}): "
                            f"{result.stderr.strip()[-300:]}", category="verifier_infra")
    if result.return_code == 5:
        raise VerifierError("verifier crashed: Failed to add verifier directory to sandbox: "
                            f"{result.stderr.strip()[-300:]}", category="verifier_infra")


def _report(stdout: str) -> FenceReport:
    report = FenceReport()
    for line in stdout.splitlines():
        kind, _, path = line.partition(" ")
        if kind == "uploaded":
            report.uploaded = True
        elif kind == "conftest":
            report.conftests.append(path)
        elif kind == "startup":
            report.startup_files.append(path)
        elif kind == "shadow":
            report.shadowing.append(path)
        elif kind == "path":
            report.path_programs.append(path)
    return report


FENCE_TIMEOUT = 300.0
"""Seconds the fence has to finish, on its own or before the verifier in :func:`fence_then_run`."""



def _carried(folder: Path | None, remote: str) -> bytes | None:
    """The archive of ``folder`` at ``remote`` when it is at most :data:`CARRY_MAX_BYTES`, else None."""
    if folder is None or not folder.is_dir():
        return None
    total = 0
    for base, _, files in os.walk(folder):  # links are not followed: they are packed as links
        for name in files:
            total += os.lstat(os.path.join(base, name)).st_size
            if total > CARRY_MAX_BYTES:
                return None
    from benchflow.sandbox.tarstream import pack

    with pack(folder, remote) as archive:
        data = archive.read(CARRY_MAX_BYTES + 1)
    return data if len(data) <= CARRY_MAX_BYTES else None
