"""The namespaces a ``local`` sandbox (or build) lives in, seen from the owner's side.

One holder process per sandbox (:mod:`.local.holder`) keeps a user namespace,
a network namespace, IPC and UTS namespaces and a mount namespace with the
system view; :meth:`Namespaces.prefix` is the ``nsenter`` argv every sandbox
process starts with, so all of a sandbox's processes share one network (a
forwarder started by one exec answers the next) while each keeps its own PID
namespace and filesystem view (bubblewrap, after the prefix).

Ids: as root, sandbox ids ``0..65535`` are host ids ``HOST_BASE..+65535``, one
range for every sandbox (they never see each other's files or processes):
root in a sandbox is an unprivileged nobody on the host, with no capability
outside its user namespace. Files a sandbox owns live on the host with those
ids (:func:`host_id`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import SandboxError

HOST_BASE = 1_300_000_000
"""First host id of the sandbox id range (as root); sandbox id N is host id HOST_BASE + N."""
ID_COUNT = 65536
SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
"""Top-level host folders a sandbox sees (read-only); nothing else of the host is in its view."""
FILTERED_TOP = ("etc",)
"""System folders scanned for entries only host root may read, which the view then hides."""
ROOT_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
             "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE")
"""What root in a sandbox keeps, inside its user namespace only: the Docker backend's set plus SETPCAP
(``setpriv`` needs it to drop to the sandbox user); notably no SYS_ADMIN (nothing can be mounted or
remounted), no MKNOD, no NET_RAW."""
HOLDER = Path(__file__).with_name("holder.py")
VIEW = Path("/tmp")
"""Where, in a holder's own mount namespace only, the view folder is (a tmpfs covering the host's
``/tmp`` there): every path a sandbox process binds is below it."""


SLIRP_PACKAGE = "apt-get install slirp4netns"
"""How a machine gets ``slirp4netns``, named by every message about it."""


def public_network_missing() -> str | None:
    """Why sandboxes and builds here cannot have a public network (``slirp4netns`` and a tun device it
    may open); None when they can. Nothing else needs it: ``none`` is a loopback-only namespace."""
    if shutil.which("slirp4netns") is None:
        return f"slirp4netns is not installed ({SLIRP_PACKAGE})"
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        return "/dev/net/tun, which slirp4netns needs, is missing or not usable"
    return None


def tool_path(name: str) -> str:
    """The absolute path of a host tool (the sandbox's own PATH must not decide which one runs)."""
    return shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin") or name


def privileged() -> bool:
    return os.geteuid() == 0


def host_id(sandbox_id: int) -> int:
    """The host uid/gid behind ``sandbox_id`` (as root: the mapped range; else the caller's own id)."""
    return HOST_BASE + sandbox_id if privileged() else (os.getuid() if sandbox_id == 0 else sandbox_id)


def chown_tree(path: Path, uid: int = 0, gid: int = 0) -> None:
    """Give ``path`` (and all below it, links not followed) to sandbox ``uid:gid`` (as root only)."""
    if not privileged():
        return
    owner = (host_id(uid), host_id(gid))
    os.lchown(path, *owner)
    if path.is_dir() and not path.is_symlink():
        for folder, dirs, files in os.walk(path):
            for name in dirs + files:
                os.lchown(os.path.join(folder, name), *owner)


def system_names() -> dict[str, str | None]:
    """The host's system folders: name -> symlink target (``bin`` -> ``usr/bin``), or None for a folder."""
    found: dict[str, str | None] = {}
    for name in SYSTEM:
        path = Path("/", name)
        if path.is_symlink():
            found[name] = os.readlink(path)
        elif path.is_dir():
            found[name] = None
    return found


def hidden_paths() -> list[str]:
    """Entries of the filtered system folders that others may not read (``/etc/shadow``, private keys)."""
    hidden: list[str] = []
    for top in FILTERED_TOP:
        for folder, dirs, files in os.walk(f"/{top}"):
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                need = 0o5 if stat.S_ISDIR(mode) else 0o4
                if not stat.S_ISLNK(mode) and mode & need != need:
                    hidden.append(path)
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in hidden]
    return hidden


def make_filter(target: Path, hidden: list[str]) -> set[str]:
    """Whiteouts for ``hidden`` under ``target`` (an overlay lower); returns the top names it covers.

    The folders on the way get the host folder's mode and the sandbox root as owner, so the view
    shows them as the host has them.
    """
    tops: set[str] = set()
    target.mkdir(parents=True, exist_ok=True)
    for path in hidden:
        names = path.strip("/").split("/")
        tops.add(names[0])
        for depth in range(1, len(names)):
            folder = target.joinpath(*names[:depth])
            if not folder.is_dir():
                folder.mkdir()
                os.chmod(folder, stat.S_IMODE(os.stat(Path("/", *names[:depth])).st_mode))
                chown_tree(folder)
        os.mknod(target.joinpath(*names), stat.S_IFCHR | 0o600, 0)
    return tops


@dataclass
class Namespaces:
    """A running holder and the namespace files every sandbox process enters."""

    process: subprocess.Popen
    id_mapped: bool
    fds: dict[str, int] = field(default_factory=dict)

    def prefix(self) -> list[str]:
        """``nsenter`` into the holder's namespaces (the fds are passed to the child, see :attr:`pass_fds`)."""
        keep = [] if privileged() else ["--preserve-credentials"]  # the caller's one id is root there already
        return [tool_path("nsenter"), *keep, *(f"--{kind}=/proc/self/fd/{fd}" for kind, fd in self.fds.items()),
                "--"]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return tuple(self.fds.values())

    def close(self) -> None:
        """Kill the holder (its anchor and slirp4netns go with it) and forget the namespaces. Never awaits."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


async def start(*, tag: Path, hostname: str, binds: list[tuple[str, str, str]], overlays: list[dict],
                network: str, dirs: tuple[str, ...] = (), timeout: float = 30.0) -> Namespaces:
    """Start a holder for ``tag`` (a state folder, named on its command line so cleanup finds it).

    ``binds`` are (host path, path below the view folder, ``ro-idmap``/``ro``/``rw``); ``overlays`` have
    ``lower`` (and ``upper``/``work`` for a build) and ``dst``, where ``@/x`` names ``x`` below the view.

    Raises:
        SandboxError: the namespaces could not be made (the holder's one-line reason).
    """
    config = {"privileged": privileged(), "base": HOST_BASE, "count": ID_COUNT, "hostname": hostname,
              "binds": binds, "overlays": overlays, "network": network, "tag": str(tag), "view": str(VIEW),
              "dirs": list(dirs)}
    process = subprocess.Popen([sys.executable, "-I", "-S", str(HOLDER), json.dumps(config)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    holder = Namespaces(process, False)
    try:
        assert process.stdout is not None
        raw = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), timeout)
        line = raw.decode(errors="replace").split()
        if len(line) != 4 or line[0] != "ready":
            reason = " ".join(line[1:]) if line else "the namespace holder exited"
            missing = bool(line) and line[0] == "missing"  # a program this machine lacks: attempted once
            raise SandboxError(f"local sandbox namespaces: {reason}", deterministic=missing)
        mnt_pid, ns_pid, holder.id_mapped = int(line[1]), int(line[2]), line[3] == "1"
        kinds = [("user", ns_pid), ("net", ns_pid), ("ipc", ns_pid), ("uts", ns_pid), ("mount", mnt_pid)]
        for kind, pid in kinds:
            name = "mnt" if kind == "mount" else kind
            holder.fds[kind] = os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY)
        return holder
    except BaseException as exc:
        holder.close()
        if isinstance(exc, asyncio.TimeoutError):
            raise SandboxError("local sandbox namespaces: the holder did not answer in time") from exc
        raise
