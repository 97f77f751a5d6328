"""The ``local`` sandbox's image: a copy-on-write layer over the host's system folders, cached.

``RUN`` steps execute in the same view a sandbox gets (:mod:`.local.view`),
never the host's ``/``: the layer folder is the root, and each host system
folder is an overlay (lower: the host folder, id-mapped and filtered as in a
sandbox; upper: the layer's folder of that name) mounted by a build holder
(:mod:`.local.ns`), inside the same unprivileged user namespace, with a network
namespace of its own (``slirp4netns`` for a build network of ``host``; where
slirp4netns is missing, loopback only, and a ``RUN`` step that fails then says
it may need network and names the package).
``COPY``/``ADD`` stage the build-context files (or a heredoc's text) on the host (ownership 0:0 or
``--chown``, ``--chmod``, archives unpacked for ``ADD``) and copy them into the
same view, so symlinks such as ``/bin`` -> ``usr/bin`` resolve as they would in
a container. The finished layer is renamed into place under
``<cache>/local/images/<key>`` with ``image.json`` written last; a second build
with the same key finds it and runs nothing.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchflow.errors import BuildError, CapabilityError
from benchflow.sandbox import ca, local_exec
from benchflow.sandbox.local import ns as local_ns
from benchflow.sandbox.local.dockerfile import (
    SUGGESTION,
    CopyStep,
    ImagePlan,
    MkdirStep,
    RunStep,
    WriteStep,
)
from benchflow.sandbox.local.unshare import wrap
from benchflow.sandbox.local.view import SPECIAL, is_whiteout
from benchflow.util import atomic
from benchflow.util.tarfile_filters import tarfile

log = logging.getLogger(__name__)

STAGE_MOUNT = "/tmp/.benchflow-stage"
SKELETON = (("root", 0o700), ("home", 0o755), ("opt", 0o755), ("srv", 0o755), ("mnt", 0o755),
            ("media", 0o755), ("run", 0o755), ("var", 0o755), ("var/tmp", 0o1777), ("var/lib", 0o755),
            ("var/cache", 0o755), ("var/log", 0o755))
_COPY_SCRIPT = r"""
set -e
mode=$1; src=$2; dest=$3
if [ "$mode" = dir ]; then
  mkdir -p "$dest"; cp -a "$src"/. "$dest"/
elif [ -d "$dest" ]; then
  cp -a "$src"/* "$dest"/
else
  mkdir -p "$(dirname "$dest")"; cp -a "$src"/* "$dest"
fi
"""


@dataclass(frozen=True)
class LocalImage:
    """A built (or trivially empty) local image."""

    key: str
    base: str
    env: dict[str, str]
    workdir: str
    user: str | None
    layer: str | None = None
    """Host folder of the upper layer; None when the Dockerfile changes no file."""
    overlay_dirs: tuple[str, ...] = ()
    """Top-level host folders the layer changes (shown through an overlay)."""
    hidden: tuple[str, ...] = ()
    """Top-level entries the layer deleted."""
    layer_only: tuple[str, ...] = ()
    """Top-level entries only the layer has (copied into each sandbox at start)."""

    @classmethod
    def load(cls, path: Path) -> LocalImage:
        data = json.loads(path.read_text())
        for name in ("overlay_dirs", "hidden", "layer_only"):
            data[name] = tuple(data[name])
        return cls(**data)


LAYER_FORMAT = "2"
"""Layers of format 1 were built as host root over the host's ``/``; they are never reused."""


def image_key(cache_key: str, plan: ImagePlan, ca_bundle: bytes | None = None, *, offline: bool = False) -> str:
    """``offline``: RUN steps that asked for network ran without (a layer not reused once they can have it)."""
    ca = hashlib.sha256(ca_bundle).hexdigest() if ca_bundle else ""
    body = f"{cache_key}\0{plan.digest()}\0{ca}\0{LAYER_FORMAT}\0{local_ns.privileged()}"
    return hashlib.sha256((body + ("\0offline" if offline else "")).encode()).hexdigest()[:32]


def _wants_network(plan: ImagePlan, build_network: str) -> bool:
    return build_network == "host" and any(isinstance(s, RunStep) and s.network != "none" for s in plan.steps)


def offline_reason(plan: ImagePlan, build_network: str) -> str | None:
    """Why RUN steps that want the build network run with loopback only here; None when they get it
    (or none wants it: a build that needs no network never needs slirp4netns)."""
    return local_ns.public_network_missing() if _wants_network(plan, build_network) else None


def images_dir(cache_root: Path) -> Path:
    return cache_root / "local" / "images"


def _passwd_entry(layer: Path, user: str) -> tuple[int, int, str]:
    """uid, gid and home of ``user`` (a name or number) as the image so far defines it."""
    for candidate in (layer / "etc" / "passwd", Path("/etc/passwd")):
        if candidate.is_file() and not is_whiteout(candidate):
            for line in candidate.read_text(errors="replace").splitlines():
                fields = line.split(":")
                if len(fields) > 5 and user in (fields[0], fields[2]):
                    return int(fields[2]), int(fields[3]), fields[5] or "/"
            break
    if user.isdigit():
        return int(user), int(user), "/"
    raise BuildError(f"USER {user}: no such user in the image's /etc/passwd")


class _Builder:
    def __init__(self, plan: ImagePlan, context: Path | None, work: Path, *, network: str,
                 deadline: float, ca_bundle: bytes | None, leave_out: tuple[str, ...] = (),
                 offline: str | None = None) -> None:
        self.plan, self.context, self.work = plan, context, work
        self.leave_out = leave_out
        """Top-level context entries no COPY/ADD takes (a no-skill run's ``skills``)."""
        self.upper, self.ovl_work = work / "layer", work / "ovl-work"
        self.stage = work / "stage"
        self.network, self.deadline = network, deadline
        self.offline = offline
        """Why RUN steps run with loopback only although the build network is ``host`` (:func:`offline_reason`)."""
        self.ca_bundle = ca_bundle
        self.log: list[str] = []
        self._live: set[asyncio.subprocess.Process] = set()
        self._ns: local_ns.Namespaces | None = None
        self._system = local_ns.system_names()

    async def build(self) -> None:
        for d in (self.upper, self.ovl_work, self.stage):
            d.mkdir(parents=True)
        for folder, mode in SKELETON:  # what a base image has; the host's own folders are not in the view
            (self.upper / folder).mkdir(parents=True, exist_ok=True)
            os.chmod(self.upper / folder, mode)
        local_ns.chown_tree(self.upper)
        if self.ca_bundle:  # trusted from the first RUN on, like the Docker backend's injected COPY
            bundle = self.upper / ca.CA_PATH.lstrip("/")
            bundle.parent.mkdir(parents=True)
            bundle.write_bytes(self.ca_bundle)
            local_ns.chown_tree(self.upper / ca.CA_PATH.strip("/").split("/")[0])
        await self._start_holder()
        try:
            for step in self.plan.steps:
                if isinstance(step, RunStep):
                    await self._run(step)
                elif isinstance(step, CopyStep):
                    await self._copy(step)
                elif isinstance(step, WriteStep):
                    await self._write(step)
                elif isinstance(step, MkdirStep):
                    await self._in_layer(["mkdir", "-p", step.path], f"WORKDIR {step.path}", "/", network="none")
        finally:
            self.close()

    async def _start_holder(self) -> None:
        """The build's namespaces: each system folder an overlay whose upper is the layer's folder."""
        filter_dir = self.work / "filter"
        filtered = local_ns.make_filter(filter_dir, local_ns.hidden_paths()) if local_ns.privileged() else set()
        binds = [(str(self.work), "w", "rw"), (str(self.stage), "stage", "ro")]  # upper and work: one mount
        if filtered:
            binds.append((str(filter_dir), "filter", "ro"))
        overlays = []
        for name, target in self._system.items():
            if target is not None:
                (self.upper / name).symlink_to(target)  # the layer root is the view's root
                continue
            for d in (self.upper / name, self.ovl_work / name):
                d.mkdir(parents=True, exist_ok=True)
                os.chmod(d, stat.S_IMODE(os.stat(f"/{name}").st_mode))
            local_ns.chown_tree(self.upper / name)
            binds.append((f"/{name}", f"host/{name}", "ro-idmap"))
            lower = [f"@/filter/{name}"] if name in filtered else []
            overlays.append({"lower": [*lower, f"@/host/{name}"], "upper": f"@/w/layer/{name}",
                             "work": f"@/w/ovl-work/{name}", "dst": f"@/sys/{name}"})
        network = "slirp" if _wants_network(self.plan, self.network) and self.offline is None else "none"
        self._ns = await local_ns.start(tag=self.work, hostname="buildkitsandbox", binds=binds,
                                        overlays=overlays, network=network, dirs=("newroot",))

    def _bwrap(self, argv: list[str], *, cwd: str, user: str | None, network: str) -> list[str]:
        view = local_ns.VIEW
        cmd = ["--bind", str(view / "w" / "layer"), "/"]
        for name, target in self._system.items():
            if target is None:
                cmd += ["--bind", str(view / "sys" / name), f"/{name}"]
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--ro-bind", "/sys", "/sys",
                "--tmpfs", "/tmp", "--ro-bind", str(view / "stage"), STAGE_MOUNT, "--unshare-pid",
                "--die-with-parent", *cap_args()]
        if network == "none" and self.network == "host":
            cmd.append("--unshare-net")
        cmd += ["--chdir", cwd, "--"]
        if user:
            uid, gid, _ = _passwd_entry(self.upper, user)
            cmd += [local_ns.tool_path("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--"]
        assert self._ns is not None
        return [*self._ns.prefix(), *wrap(cmd + argv, view / "newroot")]

    async def _in_layer(self, argv: list[str], what: str, cwd: str, *, env: dict[str, str] | None = None,
                        user: str | None = None, network: str | None = None) -> None:
        wanted = (network or self.network) == "host"
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise BuildError(f"build timed out before {what}", log_tail=self._tail())
        env = env or {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        argv = self._bwrap(argv, cwd=cwd, user=user, network=network or self.network)
        assert self._ns is not None
        result = await local_exec.run(argv, stdin=None, timeout=remaining, output_cap=1 << 20, live=self._live,
                                      env=env, pass_fds=self._ns.pass_fds)
        self.log += [f"--> {what}", result.stdout, result.stderr]
        if result.timed_out:
            raise BuildError(f"build timed out during {what}", log_tail=self._tail())
        if result.return_code != 0:
            why = f"{what} failed with exit code {result.return_code}"
            if wanted and self.offline:  # the one line says what would let it reach the network
                why += f"; this build step may need network, and it ran with none: {self.offline}"
            raise BuildError(why, log_tail=self._tail())

    async def _run(self, step: RunStep) -> None:
        network = "host" if step.network == "host" else ("none" if step.network == "none" else None)
        shown = " ".join(step.argv[-1:]) if len(step.argv) > 2 else " ".join(step.argv)
        home = _passwd_entry(self.upper, step.user)[2] if step.user else "/root"
        env = {"HOME": home, **dict(step.env), **(ca.ca_env() if self.ca_bundle else {})}
        await self._in_layer(list(step.argv), f"RUN {shown[:100]}", step.workdir, env=env,
                             user=step.user, network=network)

    async def _copy(self, step: CopyStep) -> None:
        payload = self.stage / str(step.line or len(os.listdir(self.stage)))
        payload.mkdir()
        mode = "dir" if step.dest_is_dir else "file"
        for src in self._sources(step):
            if step.extract and src.is_file() and tarfile.is_tarfile(src):
                with tarfile.open(src) as archive:
                    archive.extractall(payload, filter="tar")
                mode = "dir"
            elif src.is_dir():
                shutil.copytree(src, payload, symlinks=True, dirs_exist_ok=True, ignore=self._ignore)
                mode = "dir"
            else:
                shutil.copy2(src, payload / src.name)
        kind = "ADD" if step.extract else "COPY"
        await self._place(payload, mode, step, f"{kind} {' '.join(step.sources)} {step.dest}")

    async def _write(self, step: WriteStep) -> None:
        """``COPY <<EOF dest``: each heredoc a file of mode 0644 (or ``--chmod``), copied like a COPY's."""
        payload = self.stage / f"inline-{step.line or len(os.listdir(self.stage))}"
        payload.mkdir()
        for name, content in step.files:
            (payload / name).write_text(content)
            os.chmod(payload / name, 0o644)
        names = " ".join(f"<<{name}" for name, _ in step.files)
        await self._place(payload, "dir" if step.dest_is_dir else "file", step, f"COPY {names} {step.dest}")

    async def _place(self, payload: Path, mode: str, step: CopyStep | WriteStep, what: str) -> None:
        """Give the staged ``payload`` its owner and mode and copy it to ``step.dest`` inside the layer."""
        uid, gid = _passwd_entry(self.upper, step.chown.split(":")[0])[:2] if step.chown else (0, 0)
        if step.chown and ":" in step.chown:
            group = step.chown.split(":", 1)[1]
            gid = int(group) if group.isdigit() else gid
        for path in [payload, *payload.rglob("*")]:
            os.lchown(path, local_ns.host_id(uid), local_ns.host_id(gid))
            if step.chmod is not None and not path.is_symlink() and path != payload:
                os.chmod(path, step.chmod)
        await self._in_layer(["sh", "-c", _COPY_SCRIPT, "sh", mode, f"{STAGE_MOUNT}/{payload.name}", step.dest],
                             what, "/", network="none")

    def _left_out(self, path: Path) -> bool:
        try:
            parts = path.relative_to(self.context.resolve()).parts if self.context else ()
        except ValueError:
            return False
        return bool(parts) and parts[0] in self.leave_out

    def _ignore(self, folder: str, names: list[str]) -> set[str]:
        """For ``copytree``: the left-out entries when copying the context's top folder."""
        return {n for n in names if self._left_out(Path(folder).resolve() / n)}

    def _sources(self, step: CopyStep) -> list[Path]:
        kind = "ADD" if step.extract else "COPY"
        if self.context is None:
            raise CapabilityError(f"{kind} at line {step.line} needs a build context; {SUGGESTION}")
        found: list[Path] = []
        root = self.context.resolve()
        for pattern in step.sources:
            matches = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else [root / pattern]
            matches = [m for m in matches if os.path.lexists(m) and not self._left_out(m)]
            if not matches:
                raise BuildError(f"{kind} {pattern}: not found in the build context {self.context}")
            for match in matches:
                if not str(match.resolve()).startswith(str(root)):
                    raise BuildError(f"{kind} {pattern}: resolves outside the build context")
            found += matches
        return found

    def _tail(self) -> str:
        return "\n".join("\n".join(self.log).splitlines()[-40:])

    def kill(self) -> None:
        for proc in list(self._live):
            local_exec.kill(proc)
        self.close()

    def close(self) -> None:
        if self._ns is not None:
            self._ns.close()


def _summarise(upper: Path) -> dict[str, tuple[str, ...]]:
    """Which top-level entries of a finished layer change system folders, and which are its own."""
    system = local_ns.system_names()
    overlay, only = [], []
    for entry in sorted(os.scandir(upper), key=lambda e: e.name):
        name = entry.name
        if name in SPECIAL or name == "tmp" or is_whiteout(Path(entry.path)):
            continue
        if name in system and system[name] is None and entry.is_dir(follow_symlinks=False):
            if os.listdir(entry.path):
                overlay.append(name)
        elif name in system and entry.is_symlink() and os.readlink(entry.path) == system[name]:
            continue
        else:
            only.append(name)
    return {"overlay_dirs": tuple(overlay), "hidden": (), "layer_only": tuple(only)}


def cap_args() -> list[str]:
    """bubblewrap arguments keeping only :data:`.local.ns.ROOT_CAPS` (inside the user namespace)."""
    args = ["--cap-drop", "ALL"]
    for cap in local_ns.ROOT_CAPS:
        args += ["--cap-add", cap]
    return args


async def ensure_image(plan: ImagePlan, *, cache_key: str, context: Path | None, cache_root: Path,
                       build_network: str, timeout: float, ca_bundle: bytes | None = None,
                       leave_out: tuple[str, ...] = ()) -> LocalImage:
    """The image for ``plan``: found in the cache, or built once (concurrent builders wait on a lock).
    ``leave_out``: top-level context entries no COPY/ADD takes (``cache_key`` must tell the two apart)."""
    offline = offline_reason(plan, build_network)
    key = image_key(cache_key, plan, ca_bundle, offline=offline is not None)
    plain = LocalImage(key=key, base=plan.base, env=dict(plan.env), workdir=plan.workdir, user=plan.user)
    if not plan.has_layer_steps:
        return plain
    if os.geteuid() != 0:
        raise CapabilityError("RUN/COPY steps need an overlayfs layer, which the local sandbox mounts "
                              f"only when BenchFlow runs as root; {SUGGESTION}")
    target = images_dir(cache_root) / key
    manifest = target / "image.json"
    if manifest.is_file():
        log.info("local image %s: cached", key[:12])
        return LocalImage.load(manifest)
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = await asyncio.to_thread(_lock, target.parent / f"{key}.lock")
    try:
        if manifest.is_file():
            return LocalImage.load(manifest)
        work = target.parent / f"{key}.tmp-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        builder = _Builder(plan, context, work, network=build_network,
                           deadline=time.monotonic() + timeout, ca_bundle=ca_bundle, leave_out=leave_out,
                           offline=offline)
        try:
            await builder.build()
        except BaseException:
            builder.kill()
            shutil.rmtree(work, ignore_errors=True)
            raise
        atomic.write_text(work / "build.log", "\n".join(builder.log))
        for scratch in (builder.ovl_work, builder.stage, work / "filter"):
            shutil.rmtree(scratch, ignore_errors=True)
        image = LocalImage(**{**asdict(plain), "layer": str(target / "layer"), **_summarise(builder.upper)})
        atomic.write_text(work / "image.json", json.dumps(asdict(image), indent=2))
        shutil.rmtree(target, ignore_errors=True)
        os.rename(work, target)
        log.info("local image %s: built (%d steps)%s", key[:12], len(plan.steps),
                 f", RUN steps with no network: {offline}" if offline else "")
        return image
    finally:
        lock.close()


def _lock(path: Path):
    handle = open(path, "a")  # noqa: SIM115 - closed by the caller
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle
