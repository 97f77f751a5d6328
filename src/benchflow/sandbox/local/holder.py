"""The namespace holder of one ``local`` sandox (or one image build), run as its own process.

Started with ``python -I -S holder.py <config json>`` (standard library
only, so it starts fast and imports nothing of the caller's environment). It

1. (as root) takes a new mount namespace of its own, owned by the host's user
   namespace, so that every mount it makes is invisible on the host and, once
   copied into a sandbox process's namespace, locked (read-only stays
   read-only, nothing can be unmounted to reveal what is below);
2. forks the namespace anchor: a child in new user, network, IPC and UTS
   namespaces, with ``lo`` up and no further user namespaces allowed in it. As root, the parent maps the child's ids
   ``0..count-1`` to the unprivileged host range ``base..base+count-1``;
   otherwise the child maps its one id to the caller's;
3. assembles the sandbox's view folder (a tmpfs over ``view``, in its own
   mount namespace only): each host system folder bound read-only, id-mapped
   (as root) so that host root's files show as the sandbox root's, overlays
   of the image layer (and the filter that hides what host root alone may
   read) over them, and the sandbox's own folders;
4. for ``network: slirp``, starts ``slirp4netns`` on the anchor's network
   namespace (a user-mode stack: the sandbox reaches out through NAT, never the
   host's own loopback), tied to this process with ``--exit-fd``; before it
   attaches, the anchor (which alone holds ``CAP_NET_ADMIN`` there: no sandbox
   process does) puts the cloud-metadata block in that namespace
   (:mod:`netns_block`: unreachable routes), or the sandbox does not start;
5. prints ``ready <mount-ns pid> <anchor pid> <id-mapped 0|1>`` and waits for
   stdin to close (the owner ended or died), then kills the anchor and exits;
   a failure is one line instead, ``missing <reason>`` for a program this
   machine lacks (another attempt fails the same way), else ``error <reason>``.

Every process of the sandbox later joins these namespaces with ``nsenter``.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
CLONE_NEWIPC, CLONE_NEWUTS = 0x08000000, 0x04000000
MS_REC, MS_PRIVATE, MS_RDONLY, MS_NOSUID, MS_NODEV = 0x4000, 0x40000, 1, 2, 4
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and aarch64 share these
OPEN_TREE_CLONE, AT_RECURSIVE, AT_EMPTY_PATH, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, 0x1000, 4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 1, 2, 4, 0x100000
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def clone(src: str, mode: str, userns: int | None) -> int:
    """A detached copy of the mount tree at ``src``: ``ro`` (read-only, nosuid, nodev, id-mapped through
    ``userns`` when given) or ``rw`` (nosuid, nodev)."""
    fd = _check(libc.syscall(SYS_OPEN_TREE, -100, src.encode(), OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE),
                f"open_tree {src}")
    flags = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (MOUNT_ATTR_RDONLY if mode == "ro" else 0)
    if userns is not None:
        flags |= MOUNT_ATTR_IDMAP
    attr = struct.pack("QQQQ", flags, 0, 0, userns if userns is not None else 0)
    buf = ctypes.create_string_buffer(attr, len(attr))
    try:
        _check(libc.syscall(SYS_MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH | AT_RECURSIVE, buf, len(attr)),
               f"mount_setattr {src}")
    except OSError:
        os.close(fd)
        raise
    return fd


def overlay(lower: list[str], upper: str | None, work: str | None, dst: str) -> None:
    os.makedirs(dst, exist_ok=True)
    opts = "lowerdir=" + ":".join(lower)
    flags = MS_NOSUID | MS_NODEV
    if upper and work:
        opts += f",upperdir={upper},workdir={work}"
    else:
        flags |= MS_RDONLY
    _check(libc.mount(b"overlay", dst.encode(), b"overlay", flags, opts.encode()), f"overlay {dst}")


def _mount_all(config: dict, userns: int | None) -> bool:
    """Assemble the view folder; returns whether system folders are id-mapped.

    Everything is cloned first, then a tmpfs covers ``config["view"]`` (in this mount namespace
    only) and the clones are attached below it: the sandbox's root, an unprivileged id on the
    host, could not walk the owner's folders (``/root/.cache``) to reach them where they are.
    """
    view = config["view"]
    mapped = userns is not None
    clones: list[tuple[int, str]] = []
    try:
        for src, dst, mode in config["binds"]:
            idmap = userns if mode == "ro-idmap" and mapped else None
            try:
                fd = clone(src, "ro" if mode.startswith("ro") else "rw", idmap)
            except OSError:
                if idmap is None:
                    raise
                mapped = False  # an older kernel or a filesystem without id-mapped mounts: plain binds
                fd = clone(src, "ro", None)
            clones.append((fd, dst))
        _check(libc.mount(b"tmpfs", view.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"), f"tmpfs {view}")
        for fd, dst in clones:
            target = os.path.join(view, dst)
            os.makedirs(target, exist_ok=True)
            _check(libc.syscall(SYS_MOVE_MOUNT, fd, b"", -100, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
                   f"move_mount {target}")
    finally:
        for fd, _ in clones:
            os.close(fd)
    for name in config.get("dirs", []):
        os.makedirs(os.path.join(view, name), exist_ok=True)
    for ovl in config["overlays"]:
        inside = [_in_view(view, path) for path in ovl["lower"]]
        upper, work = (_in_view(view, ovl[k]) if ovl.get(k) else None for k in ("upper", "work"))
        overlay(inside, upper, work, _in_view(view, ovl["dst"]))
    return mapped


def _in_view(view: str, path: str) -> str:
    """``@/x`` is ``x`` below the view folder; any other path is a host path."""
    return os.path.join(view, path[2:]) if path.startswith("@/") else path


def _lo_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, 0x8914, struct.pack("16sh", b"lo", 1))  # SIOCSIFFLAGS IFF_UP


def _metadata_block() -> dict:
    """:mod:`netns_block` (in the folder above this one), loaded by path: this process imports nothing."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "netns_block.py")
    namespace = {"__name__": "netns_block"}
    with open(path) as source:
        exec(compile(source.read(), path, "exec"), namespace)  # noqa: S102 - BenchFlow's own file
    return namespace


def _anchor(config: dict, up: int, down: int) -> None:
    """The child: new namespaces, then wait (it holds them) until the parent goes."""
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        block = _metadata_block() if config["network"] == "slirp" else None
        flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
        if not config["privileged"]:
            flags |= CLONE_NEWNS
        _check(libc.unshare(flags), "unshare")
        _lo_up()
        if block is not None:  # no pinned neighbours: slirp answers ARP for 10.0.2.0/24 alone
            block["install"](pin=False)
        with open("/proc/sys/user/max_user_namespaces", "w") as limit:  # for this namespace: no nested ones,
            limit.write("0")  # so no process in the sandbox can get capabilities back in a new one
        name = config["hostname"].encode()
        _check(libc.sethostname(name, len(name)), "sethostname")
        os.write(up, b"u")
        if os.read(down, 1) != b"m":
            os._exit(1)
        if not config["privileged"]:
            _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
            _mount_all(config, None)
        os.write(up, b"k")
        os.read(down, 1)  # EOF: the parent is gone
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which reports it on
        os.write(up, f"E{exc}".encode()[:500])
    os._exit(0)


def _write_maps(pid: int, config: dict) -> None:
    if config["privileged"]:
        line = f"0 {config['base']} {config['count']}\n"
        maps = (("uid_map", line), ("gid_map", line))
    else:
        with open(f"/proc/{pid}/setgroups", "w") as handle:
            handle.write("deny")
        maps = (("uid_map", f"0 {os.geteuid()} 1\n"), ("gid_map", f"0 {os.getegid()} 1\n"))
    for name, line in maps:
        with open(f"/proc/{pid}/{name}", "w") as handle:
            handle.write(line)


class MissingTool(OSError):
    """A program this machine lacks: reported as ``missing <reason>``, so the owner does not try again.
    Not a BenchError: raised in the holder process, an OSError so its OSError report carries it."""


def _slirp(pid: int, privileged: bool) -> None:
    """Attach slirp4netns (tap0, 10.0.2.0/24, DNS at 10.0.2.3) and wait until it says it is ready."""
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()  # exit_w stays open in this process: slirp4netns exits with us
    userns = [] if privileged else [f"--userns-path=/proc/{pid}/ns/user"]
    argv = ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback", *userns,
            f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", str(pid), "tap0"]
    try:
        subprocess.Popen(argv, pass_fds=(ready_w, exit_r), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        raise MissingTool("slirp4netns is not installed (apt-get install slirp4netns)") from None
    os.close(ready_w)
    os.close(exit_r)
    if os.read(ready_r, 1) != b"1":
        raise OSError("slirp4netns did not start (is it installed? apt-get install slirp4netns)")
    os.close(ready_r)


def main() -> None:
    config = json.loads(sys.argv[1])
    if config["privileged"]:
        _check(libc.unshare(CLONE_NEWNS), "unshare mount")
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(up_r)
        os.close(down_w)
        _anchor(config, up_w, down_r)
    os.close(up_w)
    os.close(down_r)
    try:
        status = os.read(up_r, 500)
        if status != b"u":
            raise OSError(status[1:].decode(errors="replace") or "the namespace anchor died")
        _write_maps(pid, config)
        os.write(down_w, b"m")
        status = os.read(up_r, 500)
        if status != b"k":
            raise OSError(status[1:].decode(errors="replace") or "the namespace anchor died")
        mapped = False
        if config["privileged"]:
            userns = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
            mapped = _mount_all(config, userns)
            os.close(userns)
        if config["network"] == "slirp":
            _slirp(pid, config["privileged"])
        mnt_pid = os.getpid() if config["privileged"] else pid
        sys.stdout.write(f"ready {mnt_pid} {pid} {int(mapped)}\n")
        sys.stdout.flush()
        sys.stdin.buffer.read()
    except BaseException as exc:  # noqa: BLE001 - one line for the owner, then exit
        kind = "missing" if isinstance(exc, MissingTool) else "error"
        sys.stdout.write(f"{kind} {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}\n")
        sys.stdout.flush()
    finally:
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
