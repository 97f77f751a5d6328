"""The filesystem a ``local`` sandbox process sees, as bubblewrap arguments.

The view is assembled per exec from three sources:

* the host root, bound read-only entry by entry (so new top-level paths such
  as ``/oracle`` can still be mounted on bubblewrap's tmpfs root);
* the image layer (the copy-on-write upper dir the ``RUN``/``COPY`` steps
  produced): a top-level host folder the layer changed is shown through a
  read-only overlay ``layer/D : /D`` mounted in a private mount namespace just
  before bubblewrap runs; entries that exist only in the layer were copied into
  the sandbox's own folders at start;
* the sandbox's private roots: writable folders (workspace, ``/logs``,
  ``/tmp``, ``/root``, ``/home``, anything ``put()`` created) that live under
  the sandbox state folder on the host and are bound read-write on top, plus
  the host folders the spec asks to mount.

Host paths that must stay out of sight (the BenchFlow cache with other
sandboxes' state) are covered with an empty tmpfs.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Top-level names never taken from the host: mounted fresh or always private.
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
    mounts: Path
    """Host folder with one empty mountpoint per overlaid top-level folder."""
    layer: Path | None = None
    overlay_dirs: tuple[str, ...] = ()
    hidden: frozenset[str] = frozenset()
    roots: list[str] = field(default_factory=list)
    """Private roots (absolute paths), writable inside the sandbox."""
    cover: tuple[str, ...] = ()
    """Host paths hidden behind an empty tmpfs."""
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

    def locate(self, path: str) -> Path | None:
        """Where ``path`` of the image (host root plus layer) really lives on the host, if it exists."""
        names = parts(path)
        if not names:
            return Path("/")
        if names[0] in self.hidden:
            return None
        if self.layer is not None:
            in_layer = self.layer.joinpath(*names)
            if is_whiteout(in_layer):
                return None
            if os.path.lexists(in_layer):
                return in_layer
        host = Path("/", *names)
        return host if os.path.lexists(host) else None

    def bind_source(self, path: str) -> Path:
        """The path to bind for ``path``: inside the overlay mount for an overlaid folder."""
        names = parts(path)
        if names[0] in self.overlay_dirs:
            return self.mounts.joinpath(*names)
        return self.locate(path) or Path("/", *names)

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists in the sandbox (private roots first, then the image)."""
        if self.covering_root(path):
            return os.path.lexists(self.private(path))
        return self.locate(path) is not None

    def listing(self, path: str) -> list[str]:
        """Names in folder ``path`` of the image (host entries plus layer entries, minus deletions)."""
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
        if path in ("", "/"):
            names -= self.hidden | SPECIAL
        return sorted(names)


def _opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, "trusted.overlay.opaque", follow_symlinks=False) == b"y"
    except OSError:
        return False


def premount(layout: Layout) -> list[str]:
    """argv prefix that mounts the layer overlays privately, or ``[]`` when none are needed.

    ``unshare`` without ``--fork`` execs in place, so the pid the caller holds
    stays the one of bubblewrap that follows.
    """
    if not layout.overlay_dirs or layout.layer is None:
        return []
    pairs: list[str] = []
    for name in layout.overlay_dirs:
        pairs += [f"ro,lowerdir={layout.layer / name}:/{name}", str(layout.mounts / name)]
    script = ('while [ "$1" != -- ]; do mount -t overlay overlay -o "$1" "$2" || exit 125; shift 2; done; '
              'shift; exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *pairs, "--"]


def filesystem_args(layout: Layout) -> list[str]:
    """bubblewrap arguments that build the view on bubblewrap's empty tmpfs root."""
    args: list[str] = []
    _emit_dir(layout, "/", args)
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--ro-bind", "/sys", "/sys"]
    for root in sorted(layout.roots, key=lambda r: len(parts(r))):
        args += ["--ro-bind" if root in layout.external else "--bind", str(layout.private(root)), root]
    for path in layout.cover:
        if not layout.covering_root(path) and os.path.isdir(path):
            args += ["--tmpfs", path]
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
