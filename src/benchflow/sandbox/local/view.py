"""The filesystem a ``local`` sandbox process sees, as bubblewrap arguments.

Nothing of the host is in the view but its system folders (:data:`.local.ns.SYSTEM`:
``/usr``, ``/etc``, the ``/bin``/``/lib`` links) and the host folders a spec
mounts on purpose (the model bridge). The view is assembled per exec on
bubblewrap's empty tmpfs root from

* the system folders, as the sandbox's holder mounted them in its own mount
  namespace under ``view/sys``: read-only, id-mapped, with the image layer's
  changes and the ``/etc`` filter (entries only host root may read are
  hidden) overlaid;
* the sandbox's private roots: writable folders (workspace, ``/logs``,
  ``/tmp``, ``/root``, ``/home``, ``/opt``, ``/var``, the image's own top-level
  folders, anything ``put()`` created) that live under the sandbox state
  folder on the host (seen as ``view/fs``) and are bound read-write on top,
  plus the spec's mounts, read-only (``view/ext/<n>``).

Host ``/root``, ``/home``, ``/srv``, ``/opt``, ``/var``, ``/run``, ``/tmp``,
the task and job folders and every host socket are simply not there.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import CapabilityError, InfraError
from benchflow.sandbox.local.dockerfile import SUGGESTION

# Top-level names never taken from the host or the layer: mounted fresh.
SPECIAL = frozenset({"proc", "dev", "sys"})


def is_whiteout(path: Path) -> bool:
    """An overlayfs whiteout (a 0/0 character device) marks a deleted entry."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


@dataclass
class Layout:
    """Everything needed to assemble the view of one sandbox."""

    fs: Path
    """Host folder holding the private roots (``fs/app`` is ``/app``)."""
    view: Path = Path("/nonexistent")
    """The holder's view folder (:data:`.local.ns.VIEW`): ``fs``, ``sys/<name>`` and ``ext/<n>`` below it are
    what bubblewrap binds, seen inside the holder's mount namespace."""
    system: dict[str, str | None] = field(default_factory=dict)
    """System folder name -> symlink target, or None for a folder mounted from ``sysroot``."""
    layer: Path | None = None
    filtered: frozenset[str] = frozenset()
    """Host paths hidden from the view (only host root may read them)."""
    roots: list[str] = field(default_factory=list)
    """Private roots (absolute paths), writable inside the sandbox."""
    external: dict[str, Path] = field(default_factory=dict)
    """Host folders mounted read-only (sandbox path -> host path, ``SandboxSpec.mounts``); also roots."""

    def private(self, path: str) -> Path:
        """The host path behind ``path`` of a private root (or of an external mount)."""
        for inside, host in self.external.items():
            if path == inside or path.startswith(inside.rstrip("/") + "/"):
                return host / path[len(inside):].lstrip("/")
        return self.fs / path.lstrip("/")

    def covering_root(self, path: str) -> str | None:
        """The private root ``path`` lies in (longest match), if any."""
        best = None
        for root in self.roots:
            if path == root or path.startswith(root.rstrip("/") + "/"):
                if best is None or len(root) > len(best):
                    best = root
        return best

    def _filtered(self, path: str) -> bool:
        return any(path == hidden or path.startswith(hidden + "/") for hidden in self.filtered)

    def locate(self, path: str) -> Path | None:
        """Where ``path`` of the image (system folders plus layer) lives on the host, if it is in the view."""
        names = parts(path)
        if not names:
            return Path("/")
        if names[0] not in self.system:
            return None
        if self.system[names[0]] is not None:  # a link such as /bin -> usr/bin
            return Path("/", *names) if len(names) == 1 else self.locate(
                "/" + "/".join([*parts(self.system[names[0]] or ""), *names[1:]]))
        if self.layer is not None:
            in_layer = self.layer.joinpath(*names)
            if is_whiteout(in_layer):
                return None
            if os.path.lexists(in_layer):
                return in_layer
        if self._filtered(path):
            return None
        host = Path("/", *names)
        return host if os.path.lexists(host) else None

    def bind_source(self, path: str) -> Path:
        """The path to bind for ``path`` of a system folder: inside the holder's mount of it."""
        return self.view.joinpath("sys", *parts(path))

    def view_path(self, root: str) -> Path:
        """The path to bind for private root ``root`` (or an external mount), in the holder's view folder."""
        for index, (inside, _) in enumerate(self.external.items()):
            if root == inside or root.startswith(inside.rstrip("/") + "/"):
                return self.view / "ext" / str(index) / root[len(inside):].lstrip("/")
        return self.view.joinpath("fs", *parts(root))

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists in the sandbox (private roots first, then the image)."""
        if self.covering_root(path):
            return os.path.lexists(self.private(path))
        return self.locate(path) is not None

    def listing(self, path: str) -> list[str]:
        """Names in system folder ``path`` of the image (host plus layer entries, minus deletions and the filter)."""
        names: set[str] = set()
        host = Path("/", *parts(path))
        if host.is_dir() and not (self.layer is not None and _opaque(self.layer.joinpath(*parts(path)))):
            names.update(os.listdir(host))
        if self.layer is not None:
            layer_dir = self.layer.joinpath(*parts(path))
            if layer_dir.is_dir() and not layer_dir.is_symlink():
                for entry in os.scandir(layer_dir):
                    if is_whiteout(Path(entry.path)):
                        names.discard(entry.name)
                    else:
                        names.add(entry.name)
        prefix = path.rstrip("/")
        return sorted(n for n in names if self.locate(f"{prefix}/{n}") is not None)


def _opaque(path: Path) -> bool:
    for attr in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(path, attr, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def filesystem_args(layout: Layout) -> list[str]:
    """bubblewrap arguments that build the view on bubblewrap's empty tmpfs root."""
    args: list[str] = []
    for name, target in sorted(layout.system.items()):
        child = f"/{name}"
        if child in layout.roots:
            continue
        if target is not None:
            args += ["--symlink", target, child]
        elif _needs_split(layout, child):
            args += ["--dir", child]
            _emit_dir(layout, child, args)
        else:
            args += ["--ro-bind", str(layout.bind_source(child)), child]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--ro-bind", "/sys", "/sys"]
    for root in sorted(layout.roots, key=lambda r: len(parts(r))):
        args += ["--ro-bind" if root in layout.external else "--bind", str(layout.view_path(root)), root]
    return args


def _needs_split(layout: Layout, path: str) -> bool:
    """Whether folder ``path`` must be rebuilt child by child (a private root below it needs a new mountpoint)."""
    prefix = path.rstrip("/") + "/"
    for root in layout.roots:
        if root.startswith(prefix):
            below = parts(root[len(prefix):])
            probe = path.rstrip("/")
            for name in below:
                probe = f"{probe}/{name}"
                if layout.locate(probe) is None:
                    return True
    return False


def _emit_dir(layout: Layout, path: str, args: list[str]) -> None:
    for name in layout.listing(path):
        child = f"{path.rstrip('/')}/{name}"
        if child in layout.roots:
            continue
        real = layout.locate(child)
        if real is None:
            continue
        if os.path.islink(real):
            args += ["--symlink", os.readlink(real), child]
        elif real.is_dir() and _needs_split(layout, child):
            args += ["--dir", child]
            _emit_dir(layout, child, args)
        else:
            args += ["--ro-bind", str(layout.bind_source(child)), child]


def private_target(layout: Layout, remote: str) -> Path:
    """The host path of ``remote`` inside a private root, refusing paths through sandbox-made links."""
    root = layout.covering_root(remote)
    assert root is not None
    base = os.path.realpath(layout.private(root))
    target = layout.private(remote)
    parent = os.path.realpath(target.parent) if remote != root else os.path.dirname(base)
    if remote != root and not (parent == base or parent.startswith(base + "/")):
        raise InfraError(f"{remote}: a symlink in the sandbox leads outside its own folders")
    return target


def new_root(layout: Layout, remote: str, is_dir: bool, *, replace: bool = False) -> None:
    """Make ``remote`` writable: the first missing folder on its way becomes a private root.

    An existing system file becomes a private root only with ``replace`` (the sandbox's own
    ``/etc/resolv.conf``); ``put`` over one is refused like any read-only path.
    """
    probe = ""
    for name in parts(remote):
        probe = f"{probe}/{name}"
        if not layout.exists(probe):
            break
    else:
        if is_dir or os.path.isdir(layout.locate(remote) or "/") or not replace:
            raise CapabilityError(f"put {remote}: the local sandbox keeps the host's {remote} read-only "
                                  f"(writable: the workspace, /logs, /tmp, /root, /home, /opt, /var and "
                                  f"new paths); {SUGGESTION}")
    if probe != remote or is_dir:
        layout.private(probe).mkdir(parents=True, exist_ok=True)
    else:
        layout.private(probe).parent.mkdir(parents=True, exist_ok=True)
    layout.roots.append(probe)
