"""Preparing a ``local`` sandbox's own folders at start: roots, users, ownership.

Mirrors what the Docker backend's setup script does inside a container
(``/logs/*`` 0777, ``/tmp`` 1777, the sandbox user created with the next free
uid from 1000 and owning the workspace), but from the host side, on the
sandbox's private folders. Owners are sandbox ids, stored as the host ids
they map to (:func:`.local.ns.host_id`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchflow.sandbox.local import ns as local_ns
from benchflow.sandbox.local.layer import LocalImage
from benchflow.sandbox.local.view import Layout, is_whiteout

STANDARD_ROOTS = ("/tmp", "/root", "/home", "/logs", "/opt", "/var")
VAR_DIRS = ("/var/tmp", "/var/log", "/var/cache", "/var/lib")
LOG_DIRS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: str


ROOT = User("root", 0, 0, "/root")


def resolve_workdir(spec_workdir: str | None, image_workdir: str | None) -> str:
    """The task's workdir, else the image's WORKDIR; ``/`` becomes ``/root``."""
    chosen = spec_workdir or image_workdir or "/"
    return "/root" if chosen.rstrip("/") == "" else chosen.rstrip("/")


def initial_roots(image: LocalImage, workdir: str) -> list[str]:
    roots = list(STANDARD_ROOTS)
    for name in image.layer_only:
        if f"/{name}" not in roots:
            roots.append(f"/{name}")
    probe = Layout(fs=Path("/"), roots=roots)
    if probe.covering_root(workdir) is None:
        roots.append(workdir)
    return roots


def holder_mounts(layout: Layout, image: LocalImage, filter_dir: Path | None) -> tuple[list, list[dict]]:
    """The holder's binds and overlays for ``layout`` (see :func:`.local.ns.start`): each system folder
    id-mapped, under the image layer's changes and the filter where there are any."""
    filtered = set(os.listdir(filter_dir)) if filter_dir is not None else set()
    binds: list[tuple[str, str, str]] = []
    overlays: list[dict] = []
    if layout.layer is not None and image.overlay_dirs:
        binds.append((str(layout.layer), "image", "ro"))
    if filter_dir is not None:
        binds.append((str(filter_dir), "filter", "ro"))
    for name, target in layout.system.items():
        if target is not None:
            continue
        lower = [f"@/{where}/{name}" for where, used in (("image", name in image.overlay_dirs and layout.layer),
                                                         ("filter", name in filtered)) if used]
        if not lower:
            binds.append((f"/{name}", f"sys/{name}", "ro-idmap"))
            continue
        binds.append((f"/{name}", f"host/{name}", "ro-idmap"))
        overlays.append({"lower": [*lower, f"@/host/{name}"], "dst": f"@/sys/{name}"})
    return binds, overlays


def populate(layout: Layout, image: LocalImage) -> None:
    """Create every private root, seeded with what the image layer holds at that path."""
    for root in layout.roots:
        target = layout.private(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        seed = Path(image.layer, root.lstrip("/")) if image.layer else None
        if seed is not None and os.path.lexists(seed) and not is_whiteout(seed):
            if seed.is_dir() and not seed.is_symlink():
                target.mkdir(parents=True, exist_ok=True)
                _copy_tree(seed, target)
            else:
                subprocess.run(["cp", "-a", str(seed), str(target)], check=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
    for d in (*LOG_DIRS, *VAR_DIRS):
        layout.private(d).mkdir(parents=True, exist_ok=True)
    for d in LOG_DIRS:
        os.chmod(layout.private(d), 0o777)
    for d in ("/tmp", "/var/tmp"):
        os.chmod(layout.private(d), 0o1777)
    os.chmod(layout.private("/root"), 0o700)
    for d in ("/home", "/opt", "/var"):
        os.chmod(layout.private(d), 0o755)
    if local_ns.privileged():
        owner = local_ns.host_id(0)
        for folder, dirs, files in os.walk(layout.fs):
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                if os.lstat(path).st_uid < owner:  # made here, not copied from the (already mapped) layer
                    os.lchown(path, owner, owner)


def _copy_tree(source: Path, target: Path) -> None:
    """``cp -a`` (owners, modes, links, xattrs kept) minus overlay whiteouts."""
    subprocess.run(["cp", "-a", f"{source}/.", f"{target}/"], check=True)
    for dirpath, dirnames, filenames in os.walk(target):
        for name in filenames + dirnames:
            path = Path(dirpath, name)
            if is_whiteout(path):
                path.unlink()


def _read_table(layout: Layout, name: str) -> list[str]:
    remote = f"/etc/{name}"
    path = layout.private(remote) if layout.covering_root(remote) else layout.locate(remote)
    if path is None or not path.is_file():
        return []
    return path.read_text(errors="replace").splitlines()


def find_user(layout: Layout, name: str) -> User | None:
    """``name`` (or a numeric uid) as the sandbox's ``/etc/passwd`` knows it."""
    for line in _read_table(layout, "passwd"):
        fields = line.split(":")
        if len(fields) >= 7 and name in (fields[0], fields[2]) and fields[2].isdigit() and fields[3].isdigit():
            return User(fields[0], int(fields[2]), int(fields[3]), fields[5] or "/")
    return None


def resolve_user(known: dict[str, User], layout: Layout, user: str | None) -> User:
    """``user`` (a name or uid; None is root) as the sandbox knows it, remembered in ``known``.

    Raises:
        LookupError: a name the sandbox's ``/etc/passwd`` does not have.
    """
    if user is None or user in ("root", "0"):
        return ROOT
    if user in known:
        return known[user]
    for candidate in known.values():
        if str(candidate.uid) == user:
            return candidate
    if not local_ns.privileged():
        return ROOT  # one uid only in an unprivileged user namespace
    found = find_user(layout, user)
    if found is None:
        if user.isdigit():
            return User(user, int(user), int(user), "/")
        raise LookupError(user)
    known[user] = found
    return found


def write_private(layout: Layout, remote: str, data: bytes) -> None:
    """A file of the sandbox's own (0644, its root's), in a private root."""
    target = layout.private(remote)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    os.chmod(target, 0o644)
    local_ns.chown_tree(target)


def ensure_user(layout: Layout, name: str, workdir: str) -> User:
    """``name`` as the image knows it, or added to private copies of ``/etc/passwd`` and ``/etc/group``."""
    user = find_user(layout, name)
    if user is not None:
        _own(layout, user, workdir)
        return user
    passwd = _read_table(layout, "passwd")
    uids = [int(f[2]) for f in (line.split(":") for line in passwd) if len(f) > 2 and f[2].isdigit()]
    uid = max([999, *(u for u in uids if u < 60000)]) + 1
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    group = _read_table(layout, "group")
    for table, lines, entry in (("passwd", passwd, f"{name}:x:{uid}:{uid}::/home/{name}:{shell}"),
                                ("group", group, f"{name}:x:{uid}:")):
        target = layout.private(f"/etc/{table}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join([*lines, entry]) + "\n")
        os.chmod(target, 0o644)
        local_ns.chown_tree(target)
        if f"/etc/{table}" not in layout.roots:
            layout.roots.append(f"/etc/{table}")
    user = User(name, uid, uid, f"/home/{name}")
    _own(layout, user, workdir)
    return user


def _own(layout: Layout, user: User, workdir: str) -> None:
    home = layout.private(user.home) if layout.covering_root(user.home) else None
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        local_ns.chown_tree(home, user.uid, user.gid)
    if workdir != "/" and layout.covering_root(workdir):
        top = layout.private(workdir)
        top.mkdir(parents=True, exist_ok=True)
        local_ns.chown_tree(top, user.uid, user.gid)


def copy_argv(source: Path, target: Path) -> list[str]:
    """Host-side copy for ``put``/``get``: ``target`` becomes ``source`` (a file replaces, a folder merges).

    Clears what is in the way first; the returned ``cp`` keeps modes, times and
    links, and leaves the copies owned by the caller (the caller gives copies
    into a sandbox to its root, like the Docker backend's root-owned tar members).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    is_dir = source.is_dir() and not source.is_symlink()
    if target.is_symlink() or (target.exists() and target.is_dir() != is_dir):
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    cp = ["cp", "-a", "--no-preserve=ownership"]
    if is_dir:
        target.mkdir(exist_ok=True)
        return [*cp, f"{source}/.", f"{target}/"]
    return [*cp, str(source), str(target)]
