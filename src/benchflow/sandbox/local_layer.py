"""The ``local`` sandbox's image: a copy-on-write layer over the host root, cached.

``RUN`` steps execute in a writable overlay (lower: the host root, upper: the
layer folder) mounted in a private mount namespace, inside bubblewrap.
``COPY``/``ADD`` stage the build-context files on the host (ownership 0:0 or
``--chown``, ``--chmod``, archives unpacked for ``ADD``) and copy them into the
same overlay, so symlinks of the host root (``/bin`` -> ``usr/bin``) resolve as
they would in a container. The finished layer is renamed into place under
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
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchflow.errors import BuildError, CapabilityError
from benchflow.sandbox import ca, local_exec
from benchflow.sandbox.local_dockerfile import (
    SUGGESTION,
    CopyStep,
    ImagePlan,
    MkdirStep,
    RunStep,
)
from benchflow.sandbox.local_unshare import wrap
from benchflow.sandbox.local_view import SPECIAL, is_whiteout
from benchflow.util import atomic

log = logging.getLogger(__name__)

STAGE_MOUNT = "/tmp/.benchflow-stage"
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


def image_key(cache_key: str, plan: ImagePlan, ca_bundle: bytes | None = None) -> str:
    ca = hashlib.sha256(ca_bundle).hexdigest() if ca_bundle else ""
    return hashlib.sha256(f"{cache_key}\0{plan.digest()}\0{ca}".encode()).hexdigest()[:32]


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
                 deadline: float, cover: tuple[str, ...], ca_bundle: bytes | None) -> None:
        self.plan, self.context, self.work = plan, context, work
        self.upper, self.ovl_work, self.merged = work / "layer", work / "ovl-work", work / "merged"
        self.stage = work / "stage"
        self.network, self.deadline, self.cover = network, deadline, cover
        self.ca_bundle = ca_bundle
        self.log: list[str] = []
        self._live: set[asyncio.subprocess.Process] = set()

    async def build(self) -> None:
        for d in (self.upper, self.ovl_work, self.merged, self.stage):
            d.mkdir(parents=True)
        if self.ca_bundle:  # trusted from the first RUN on, like the Docker backend's injected COPY
            bundle = self.upper / ca.CA_PATH.lstrip("/")
            bundle.parent.mkdir(parents=True)
            bundle.write_bytes(self.ca_bundle)
        for step in self.plan.steps:
            if isinstance(step, RunStep):
                await self._run(step)
            elif isinstance(step, CopyStep):
                await self._copy(step)
            elif isinstance(step, MkdirStep):
                await self._in_layer(["mkdir", "-p", step.path], f"WORKDIR {step.path}", "/", network="none")

    def _bwrap(self, argv: list[str], *, cwd: str, env: dict[str, str], user: str | None,
               network: str) -> list[str]:
        opts = f"lowerdir=/,upperdir={self.upper},workdir={self.ovl_work}"
        script = 'mount -t overlay overlay -o "$1" "$2" || exit 125; shift 2; exec "$@"'
        cmd = ["--bind", str(self.merged), "/", "--proc", "/proc", "--dev", "/dev",
               "--tmpfs", "/dev/shm", "--ro-bind", "/sys", "/sys", "--tmpfs", "/tmp",
               "--ro-bind", str(self.stage), STAGE_MOUNT, "--unshare-pid", "--unshare-ipc",
               "--die-with-parent", "--clearenv"]
        for path in self.cover:
            cmd += ["--tmpfs", path]
        if network == "none":
            cmd.append("--unshare-net")
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        cmd += ["--chdir", cwd, "--"]
        if user:
            uid, gid, _ = _passwd_entry(self.upper, user)
            cmd += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                    "--bounding-set=-all", "--"]
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", opts,
                str(self.merged), *wrap(cmd + argv, self.work / "newroot")]

    async def _in_layer(self, argv: list[str], what: str, cwd: str, *, env: dict[str, str] | None = None,
                        user: str | None = None, network: str | None = None) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise BuildError(f"build timed out before {what}", log_tail=self._tail())
        env = env or {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        argv = self._bwrap(argv, cwd=cwd, env=env, user=user, network=network or self.network)
        result = await local_exec.run(argv, stdin=None, timeout=remaining, output_cap=1 << 20, live=self._live)
        self.log += [f"--> {what}", result.stdout, result.stderr]
        if result.timed_out:
            raise BuildError(f"build timed out during {what}", log_tail=self._tail())
        if result.return_code != 0:
            raise BuildError(f"{what} failed with exit code {result.return_code}", log_tail=self._tail())

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
                shutil.copytree(src, payload, symlinks=True, dirs_exist_ok=True)
                mode = "dir"
            else:
                shutil.copy2(src, payload / src.name)
        uid, gid = _passwd_entry(self.upper, step.chown.split(":")[0])[:2] if step.chown else (0, 0)
        if step.chown and ":" in step.chown:
            group = step.chown.split(":", 1)[1]
            gid = int(group) if group.isdigit() else gid
        for path in [payload, *payload.rglob("*")]:
            os.lchown(path, uid, gid)
            if step.chmod is not None and not path.is_symlink() and path != payload:
                os.chmod(path, step.chmod)
        kind = "ADD" if step.extract else "COPY"
        await self._in_layer(["sh", "-c", _COPY_SCRIPT, "sh", mode, f"{STAGE_MOUNT}/{payload.name}", step.dest],
                             f"{kind} {' '.join(step.sources)} {step.dest}", "/", network="none")

    def _sources(self, step: CopyStep) -> list[Path]:
        kind = "ADD" if step.extract else "COPY"
        if self.context is None:
            raise CapabilityError(f"{kind} at line {step.line} needs a build context; {SUGGESTION}")
        found: list[Path] = []
        root = self.context.resolve()
        for pattern in step.sources:
            matches = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else [root / pattern]
            matches = [m for m in matches if os.path.lexists(m)]
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


def _summarise(upper: Path, hostroot: Path = Path("/")) -> dict[str, tuple[str, ...]]:
    overlay, hidden, only = [], [], []
    for entry in sorted(os.scandir(upper), key=lambda e: e.name):
        name = entry.name
        if name in SPECIAL or name == "tmp":
            continue
        if is_whiteout(Path(entry.path)):
            hidden.append(name)
        elif entry.is_dir(follow_symlinks=False) and (hostroot / name).is_dir() \
                and not (hostroot / name).is_symlink() and f"/{name}" not in ("/root", "/home", "/logs"):
            overlay.append(name)
        else:
            only.append(name)
    return {"overlay_dirs": tuple(overlay), "hidden": tuple(hidden), "layer_only": tuple(only)}


async def ensure_image(plan: ImagePlan, *, cache_key: str, context: Path | None, cache_root: Path,
                       build_network: str, timeout: float, ca_bundle: bytes | None = None) -> LocalImage:
    """The image for ``plan``: found in the cache, or built once (concurrent builders wait on a lock)."""
    key = image_key(cache_key, plan, ca_bundle)
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
                           deadline=time.monotonic() + timeout, cover=(str(cache_root),), ca_bundle=ca_bundle)
        try:
            await builder.build()
        except BaseException:
            builder.kill()
            shutil.rmtree(work, ignore_errors=True)
            raise
        atomic.write_text(work / "build.log", "\n".join(builder.log))
        for scratch in (builder.ovl_work, builder.merged, builder.stage, work / "newroot"):
            shutil.rmtree(scratch, ignore_errors=True)
        image = LocalImage(**{**asdict(plain), "layer": str(target / "layer"), **_summarise(builder.upper)})
        atomic.write_text(work / "image.json", json.dumps(asdict(image), indent=2))
        shutil.rmtree(target, ignore_errors=True)
        os.rename(work, target)
        log.info("local image %s: built (%d steps)", key[:12], len(plan.steps))
        return image
    finally:
        lock.close()


def _lock(path: Path):
    handle = open(path, "a")  # noqa: SIM115 - closed by the caller
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle
