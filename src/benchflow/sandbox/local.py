"""The embedded ``local`` sandbox: Linux namespaces through bubblewrap, no daemon.

A sandbox is a folder on the host (``<cache>/local/sandboxes/<id>``) holding
its writable state; every ``exec`` is one ``bwrap`` invocation (or, without
bubblewrap, ``unshare`` — see :mod:`local_unshare`) into that state with fresh PID, IPC and UTS namespaces (and a network namespace with
only ``lo`` for ``no-network``). The host root is visible read-only; the
workspace, ``/logs``, ``/tmp``, ``/root``, ``/home`` and whatever ``put()``
creates are private and writable (see :mod:`local_view`). Running as root,
commands for the sandbox user drop to its uid with ``setpriv``; the image's
``RUN`` layer comes from :mod:`local_layer`.

Honest limits: no cpu/memory limits, no GPUs, no multi-service tasks, no
``allowlist`` network, and the host's system folders stay read-only (a task
that installs into ``/usr`` at run time needs ``--sandbox docker``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from benchflow.errors import CapabilityError, InfraError, SandboxError
from benchflow.sandbox import ca, local_exec, local_leftovers
from benchflow.sandbox.base import (
    DEFAULT_OUTPUT_CAP_BYTES,
    Backend,
    Capabilities,
    ExecResult,
    OwnedSandbox,
    SandboxSpec,
)
from benchflow.sandbox.copyout import CopyReport, copy_out_tree
from benchflow.sandbox.local_cache import LocalCache
from benchflow.sandbox.local_dockerfile import (
    DEFAULT_PATH,
    SUGGESTION,
    ImagePlan,
    parse_dockerfile,
)
from benchflow.sandbox.local_layer import LocalImage, ensure_image
from benchflow.sandbox.local_setup import (
    ROOT,
    User,
    copy_argv,
    ensure_user,
    find_user,
    initial_roots,
    populate,
    resolve_workdir,
)
from benchflow.sandbox.local_state import cache_root, sandboxes_dir, start_ticks, sweep
from benchflow.sandbox.local_unshare import tool, wrap
from benchflow.sandbox.local_view import Layout, filesystem_args, parts, premount
from benchflow.util import atomic

log = logging.getLogger(__name__)

CAPABILITIES = Capabilities(network_modes=frozenset({"no-network", "public"}), snapshots=True, gpus=False,
                            multi_service=False, build_from_dockerfile=True, resource_limits=False,
                            host_mounts=True, image_layers=False, keep=False)


_WARNED_FROM: set[tuple[str, str]] = set()
"""(task, base image) pairs already warned about in this process: the warning is said once."""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "task"


def _norm(remote: str) -> str:
    if not remote.startswith("/") or ".." in parts(remote):
        raise ValueError(f"remote path must be absolute and without '..': {remote!r}")
    return "/" + "/".join(parts(remote))


class LocalSandbox:
    """One sandbox of the ``local`` backend (see the module docstring)."""

    capabilities = CAPABILITIES

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._image: LocalImage | None = None
        self._id: str | None = None
        self._state: Path | None = None
        self._layout: Layout | None = None
        self._fs_args: list[str] | None = None
        self._users: dict[str, User] = {"root": ROOT}
        self._workdir = "/root"
        self._live: set[asyncio.subprocess.Process] = set()
        self._watchers: set[asyncio.Future[int]] = set()
        self._stopped = False
        self._snapshots = 0

    @property
    def sandbox_id(self) -> str | None:
        return self._id

    @property
    def workdir(self) -> str:
        return self._workdir

    @property
    def state_dir(self) -> Path | None:
        """The host folder holding this sandbox's writable state (None before start)."""
        return self._state

    # -- build ---------------------------------------------------------------------------------

    def plan(self) -> ImagePlan:
        """The Dockerfile subset this sandbox will honour; refuses what it cannot (CapabilityError)."""
        spec = self.spec
        if spec.image:
            raise CapabilityError(f"prebuilt image {spec.image!r} cannot run in the local sandbox "
                                  f"(the host root stands in for images); {SUGGESTION}")
        if spec.network_mode not in CAPABILITIES.network_modes:
            raise CapabilityError(f"network mode {spec.network_mode!r} is not enforced by the local "
                                  f"sandbox (it has: no-network, public); {SUGGESTION}")
        env_dir = spec.environment_dir
        if env_dir is None:
            return ImagePlan(base="host")
        if (env_dir / "docker-compose.yaml").exists() or (env_dir / "docker-compose.yml").exists():
            raise CapabilityError(f"{env_dir}/docker-compose.yaml: multi-service tasks cannot run in the "
                                  f"local sandbox; {SUGGESTION}")
        dockerfile = env_dir / spec.dockerfile
        if not dockerfile.is_file():
            return ImagePlan(base="host")
        plan = parse_dockerfile(dockerfile.read_text(errors="replace"), path=str(dockerfile),
                                base_image_override=spec.base_image_override)
        if (spec.name, plan.base) not in _WARNED_FROM:
            _WARNED_FROM.add((spec.name, plan.base))
            log.warning("%s: FROM %s is recorded; the local sandbox uses the host root in its place",
                        spec.name, plan.base or "(none)")
        return plan

    async def build(self) -> None:
        if self._image is not None:
            return
        plan = self.plan()
        bundle = ca.read_bundle(self.spec.ca_bundle) if self.spec.ca_bundle is not None else None
        self._image = await ensure_image(plan, cache_key=self.spec.cache_key, context=self.spec.environment_dir,
                                         cache_root=cache_root(), build_network=self.spec.build_network,
                                         timeout=self.spec.build_timeout_sec, ca_bundle=bundle)

    # -- start / stop --------------------------------------------------------------------------

    async def start(self) -> None:
        if self._stopped:
            raise SandboxError(f"{self.spec.name}: this sandbox was stopped; create a new one")
        if self._id is not None:
            return
        await self.build()
        if self._stopped:  # stop() ran while the image was building
            raise SandboxError(f"{self.spec.name}: this sandbox was stopped while it was being built")
        assert self._image is not None
        self._id = f"{_slug(self.spec.name)}-{secrets.token_hex(4)}"
        self._state = sandboxes_dir() / self._id
        try:
            self._prepare(self._image)  # in the loop on purpose: a cancellation cannot race the cleanup
        except (OSError, subprocess.CalledProcessError) as exc:
            self._remove_state()
            raise SandboxError(f"{self.spec.name}: the local sandbox did not start: {exc}") from exc
        except BaseException:
            self._remove_state()
            raise

    def _prepare(self, image: LocalImage) -> None:
        assert self._state is not None
        self._state.mkdir(parents=True, mode=0o700)
        atomic.write_text(self._state / "owner.json", json.dumps({
            "id": self._id, "name": self.spec.name, "pid": os.getpid(), "created": time.time(),
            "start_ticks": start_ticks(os.getpid()), "labels": dict(self.spec.labels),
            "image": image.key if image.layer else None}, indent=2))
        self._workdir = resolve_workdir(self.spec.workdir, image.workdir)
        mounts = self._state / "mounts"
        for name in image.overlay_dirs:
            (mounts / name).mkdir(parents=True)
        layout = Layout(fs=self._state / "fs", mounts=mounts,
                        layer=Path(image.layer) if image.layer else None, overlay_dirs=image.overlay_dirs,
                        hidden=frozenset(image.hidden), roots=initial_roots(image, self._workdir),
                        cover=(str(cache_root()),))
        populate(layout, image)
        for inside, host in self.spec.mounts.items():
            inside = _norm(inside)
            layout.external[inside] = Path(host)
            if inside not in layout.roots:
                layout.roots.append(inside)
        if self.spec.ca_bundle is not None and layout.locate(ca.CA_PATH) is None:
            self._new_root(layout, ca.CA_PATH, False)
            layout.private(ca.CA_PATH).write_bytes(ca.read_bundle(self.spec.ca_bundle))
        user = self.spec.sandbox_user
        if user and user != "root":
            if os.geteuid() == 0:
                self._users[user] = ensure_user(layout, user, self._workdir)
            else:
                log.warning("%s: not running as root, so commands for %r run as the invoking user",
                            self.spec.name, user)
        self._layout = layout

    async def stop(self) -> None:
        """Kill every process and remove the state folder. Idempotent, never raises.

        Nothing in here awaits, so a cancellation cannot interrupt it halfway.
        """
        self._stopped = True
        try:
            local_exec.kill_all(self._live)
            self._remove_state()
        except Exception:  # noqa: BLE001 - stop must never raise; the leftover is logged
            log.exception("%s: stopping local sandbox %s", self.spec.name, self._id)

    def _remove_state(self) -> None:
        if self._state is not None and self._state.exists():
            sweep(self._state)
            shutil.rmtree(self._state, ignore_errors=True)

    # -- exec ----------------------------------------------------------------------------------

    def _require(self) -> Layout:
        if self._layout is None or self._stopped:
            raise InfraError(f"{self.spec.name}: the local sandbox is not running (start it first)")
        return self._layout

    def _user(self, user: str | None) -> User:
        if user is None or user in ("root", "0"):
            return ROOT
        if user in self._users:
            return self._users[user]
        for known in self._users.values():
            if str(known.uid) == user:
                return known
        if os.geteuid() != 0:
            return ROOT  # one uid only in an unprivileged user namespace
        found = find_user(self._require(), user)
        if found is None:
            if user.isdigit():
                return User(user, int(user), int(user), "/")
            raise InfraError(f"{self.spec.name}: no user {user!r} in the sandbox's /etc/passwd")
        self._users[user] = found
        return found

    def command(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                cwd: str | None = None) -> list[str]:
        """The host argv that runs ``cmd`` inside this sandbox."""
        layout = self._require()
        who = self._user(user)
        if self._fs_args is None:
            self._fs_args = filesystem_args(layout)
        assert self._id is not None and self._image is not None
        argv = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--hostname", self._id[-20:]]
        if self.spec.network_mode == "no-network":
            argv.append("--unshare-net")
        if os.geteuid() != 0:
            argv += ["--unshare-user", "--uid", str(who.uid), "--gid", str(who.gid)]
        argv += self._fs_args
        trust = ca.ca_env() if self.spec.ca_bundle is not None else {}
        full_env = {"PATH": DEFAULT_PATH, **trust, **self._image.env, **self.spec.env,
                    "HOME": who.home, "USER": who.name, "LOGNAME": who.name, "HOSTNAME": self._id[-20:],
                    **(env or {})}
        argv.append("--clearenv")
        for key, value in full_env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", cwd or self._workdir, "--"]
        if who.uid != 0 and os.geteuid() == 0:
            argv += ["setpriv", f"--reuid={who.uid}", f"--regid={who.gid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--"]
        assert self._state is not None
        return [*premount(layout), *wrap(argv + list(cmd), self._state / "newroot")]

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        argv = self.command(cmd, user=user, env=env, cwd=cwd)
        return await local_exec.run(argv, stdin=stdin, timeout=timeout, output_cap=output_cap, live=self._live)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None) -> local_exec.LocalProcess:
        proc = await local_exec.spawn(self.command(cmd, user=user, env=env, cwd=cwd), stdin=True)
        self._live.add(proc)
        watcher = asyncio.ensure_future(proc.wait())  # forget the process once it is gone
        watcher.add_done_callback(lambda _: self._live.discard(proc))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return local_exec.LocalProcess(proc)

    # -- files ---------------------------------------------------------------------------------

    def _private_target(self, layout: Layout, remote: str) -> Path:
        """The host path of ``remote`` inside a private root, refusing paths through sandbox-made links."""
        root = layout.covering_root(remote)
        assert root is not None
        base = os.path.realpath(layout.private(root))
        target = layout.private(remote)
        parent = os.path.realpath(target.parent) if remote != root else os.path.dirname(base)
        if remote != root and not (parent == base or parent.startswith(base + "/")):
            raise InfraError(f"{remote}: a symlink in the sandbox leads outside its own folders")
        return target

    def _new_root(self, layout: Layout, remote: str, is_dir: bool) -> None:
        """Make ``remote`` writable: the first missing folder on its way becomes a private root."""
        probe = ""
        for name in parts(remote):
            probe = f"{probe}/{name}"
            if not layout.exists(probe):
                break
        else:
            if is_dir or os.path.isdir(layout.locate(remote) or "/"):
                raise CapabilityError(f"put {remote}: the local sandbox keeps the host's {remote} read-only "
                                      f"(writable: the workspace, /logs, /tmp, /root, /home and new paths); "
                                      f"{SUGGESTION}")
        if probe != remote or is_dir:
            layout.private(probe).mkdir(parents=True, exist_ok=True)
        else:
            layout.private(probe).parent.mkdir(parents=True, exist_ok=True)
        layout.roots.append(probe)
        self._fs_args = None

    async def put(self, local: Path, remote: str) -> None:
        local = Path(local)
        if not local.exists() and not local.is_symlink():
            raise FileNotFoundError(f"put: {local} does not exist")
        layout = self._require()
        remote = _norm(remote)
        if layout.covering_root(remote) is None:
            self._new_root(layout, remote, local.is_dir())
        target = self._private_target(layout, remote)
        await self._host_command(copy_argv(local, target), f"put {remote}")

    async def get(self, remote: str, local: Path) -> CopyReport:
        layout = self._require()
        remote = _norm(remote)
        if layout.covering_root(remote) is not None:
            source = self._private_target(layout, remote)
        else:
            source = layout.locate(remote)
        if source is None or not os.path.lexists(source):
            raise FileNotFoundError(f"get: {remote} does not exist in the sandbox")
        return await asyncio.to_thread(copy_out_tree, Path(source), Path(local))

    async def _host_command(self, argv: list[str], what: str) -> None:
        """Run a host-side helper (``cp``) that ``stop()`` can kill like any sandbox process."""
        done = await local_exec.run(argv, stdin=None, timeout=None, output_cap=4096, live=self._live)
        if done.return_code != 0:
            raise InfraError(f"{self.spec.name}: {what} failed: {done.stderr.strip()[-300:]}")

    # -- snapshots -----------------------------------------------------------------------------

    async def snapshot(self) -> str:
        layout = self._require()
        assert self._state is not None
        self._snapshots += 1
        ref = f"{self._id}@{self._snapshots}"
        target = self._state / "snapshots" / str(self._snapshots)
        target.mkdir(parents=True)
        await self._host_command(["cp", "-a", str(layout.fs), str(target / "fs")], "snapshot")
        atomic.write_text(target / "roots.json", json.dumps(layout.roots))
        return ref

    async def restore(self, ref: str) -> None:
        """Kill every running process and put the private folders back as they were at ``ref``."""
        layout = self._require()
        assert self._state is not None
        sandbox, _, number = ref.partition("@")
        source = self._state / "snapshots" / number
        if sandbox != self._id or not number.isdigit() or not source.is_dir():
            raise SandboxError(f"{self.spec.name}: unknown snapshot {ref!r}")
        local_exec.kill_all(self._live)
        shutil.rmtree(layout.fs)
        await self._host_command(["cp", "-a", str(source / "fs"), str(layout.fs)], "restore")
        layout.roots[:] = json.loads((source / "roots.json").read_text())
        self._fs_args = None


class LocalBackend(Backend):
    name = "local"
    capabilities = CAPABILITIES

    def available(self) -> tuple[bool, str]:
        """A real namespace probe with the tool this machine would use (bwrap, else unshare)."""
        chosen = tool()
        if shutil.which(chosen) is None:
            return False, "neither bubblewrap (bwrap) nor util-linux unshare is installed"
        probe = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-ipc",
                 "--unshare-uts", "--unshare-net", "--die-with-parent", "--", "true"]
        if chosen == "bwrap" and os.geteuid() != 0:
            probe[:0] = ["--unshare-user"]
        scratch = Path(tempfile.mkdtemp(prefix="bf-local-probe-"))
        try:
            done = subprocess.run(wrap(probe, scratch / "root"), capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"{chosen} namespace probe failed: {exc}"
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode != 0:
            return False, f"{chosen} namespace probe failed: {done.stderr.strip()[-200:]}"
        mode = "as root: RUN layers via overlayfs, sandbox user via setpriv" if os.geteuid() == 0 \
            else "unprivileged: user namespace, no RUN layers, one uid"
        name = "bubblewrap" if chosen == "bwrap" else "util-linux unshare"
        return True, f"{name} namespaces work ({mode})"

    def create(self, spec: SandboxSpec) -> LocalSandbox:
        return LocalSandbox(spec)

    def exists(self, sandbox_id: str) -> bool:
        return local_leftovers.exists(sandbox_id)

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        return local_leftovers.list_owned(self.name, owner)

    def remove(self, ids: list[str]) -> dict[str, str]:
        return local_leftovers.remove(ids)

    @property
    def cache(self) -> LocalCache:
        return LocalCache()


BACKEND = LocalBackend()
