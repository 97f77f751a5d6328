"""The embedded ``local`` sandbox: Linux namespaces through bubblewrap, no daemon.

A sandbox is a folder on the host (``<cache>/local/sandboxes/<id>``) holding
its writable state, and a holder process (:mod:`.local.ns`) keeping its user,
network, IPC and UTS namespaces and the mount namespace with its system view.
Every ``exec`` enters those namespaces (``nsenter``) and runs one ``bwrap``
(or, without bubblewrap, ``unshare`` — see :mod:`.local.unshare`) with a fresh
PID namespace and the view of :mod:`.local.view`: the host's system folders
read-only, and the workspace, ``/logs``, ``/tmp``, ``/root``, ``/home``,
``/opt``, ``/var`` and whatever ``put()`` creates private and writable.

Running as root, root in the sandbox is an unprivileged id range on the host
(:data:`.local.ns.HOST_BASE`), keeps a Docker-like capability set inside its
user namespace only (no ``CAP_SYS_ADMIN``), and other users drop to their uid
with ``setpriv``. ``no-network`` has loopback only; ``public`` goes out
through ``slirp4netns`` (never the host's network namespace, never its
loopback; where it is missing, ``public`` runs as ``no-network``:
:func:`.local.probe.capabilities`). All execs of one sandbox share its
network, so a forwarder one exec starts answers the next. Environment values
reach the process through its environment, never a command line. The image's
``RUN`` layer comes from :mod:`.local.layer`.

Honest limits: no cpu/memory limits, no GPUs, no multi-service tasks, no
``allowlist`` network, and the host's system folders stay read-only (a task
that installs into ``/usr`` at run time needs ``--sandbox docker``).
See docs/SECURITY.md.
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
import time
from collections.abc import Mapping
from pathlib import Path

from benchflow.errors import CapabilityError, InfraError, SandboxError
from benchflow.sandbox import bundled_skills, ca, local_exec
from benchflow.sandbox.base import (
    DEFAULT_OUTPUT_CAP_BYTES,
    ExecResult,
    MetadataBlock,
    SandboxSpec,
)
from benchflow.sandbox.copyout import CopyReport, copy_out_tree
from benchflow.sandbox.docker_setup import pids_limit
from benchflow.sandbox.local import ns as local_ns
from benchflow.sandbox.local import probe as local_probe
from benchflow.sandbox.local.dockerfile import (
    DEFAULT_PATH,
    SUGGESTION,
    ImagePlan,
    parse_dockerfile,
)
from benchflow.sandbox.local.layer import LocalImage, cap_args, ensure_image
from benchflow.sandbox.local.setup import (
    ROOT,
    User,
    copy_argv,
    ensure_user,
    holder_mounts,
    initial_roots,
    populate,
    resolve_user,
    resolve_workdir,
    write_private,
)
from benchflow.sandbox.local.state import cache_root, sandboxes_dir, start_ticks, sweep
from benchflow.sandbox.local.unshare import wrap
from benchflow.sandbox.local.view import (
    Layout,
    filesystem_args,
    new_root,
    parts,
    private_target,
)
from benchflow.util import atomic

log = logging.getLogger(__name__)

CAPABILITIES = local_probe.capabilities()
SLIRP_DNS = "10.0.2.3"
METADATA_BLOCK = ("unreachable routes for 169.254.0.0/16, 100.100.100.200 and fd00:ec2::254 in the sandbox's "
                  "network namespace, put there by its namespace holder, which the agent cannot change (no "
                  "CAP_NET_ADMIN); slirp4netns answers ARP for 10.0.2.0/24 alone, so a socket bound to tap0 "
                  "gets no further")


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
        self._ns: local_ns.Namespaces | None = None
        self._owner: dict[str, object] = {}
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
        if CAPABILITIES.network_for(spec.network_mode) is None:
            raise CapabilityError(f"network mode {spec.network_mode!r} is not enforced by the local "
                                  f"sandbox (it has: {', '.join(sorted(CAPABILITIES.network_modes))}); "
                                  f"{SUGGESTION}")
        env_dir = spec.environment_dir
        if env_dir is None:
            return ImagePlan(base="host")
        if (env_dir / "docker-compose.yaml").exists() or (env_dir / "docker-compose.yml").exists():
            raise CapabilityError(f"{env_dir}/docker-compose.yaml: multi-service tasks cannot run in the "
                                  f"local sandbox; {SUGGESTION}")
        dockerfile = env_dir / spec.dockerfile
        if not dockerfile.is_file():
            return ImagePlan(base="host")
        text = dockerfile.read_text(errors="replace")
        if self._leaves_out_skills():
            text = bundled_skills.without_skill_copies(text)
        plan = parse_dockerfile(text, path=str(dockerfile), base_image_override=spec.base_image_override)
        if (spec.name, plan.base) not in _WARNED_FROM:
            _WARNED_FROM.add((spec.name, plan.base))
            log.warning("%s: FROM %s is recorded; the local sandbox uses the host's system folders in its place",
                        spec.name, plan.base or "(none)")
        return plan

    def _leaves_out_skills(self) -> bool:
        """A no-skill run: the task's ``environment/skills/`` stays out of the image (:mod:`.bundled_skills`)."""
        return not self.spec.bundled_skills and bundled_skills.present(self.spec.environment_dir)

    async def build(self) -> None:
        if self._image is not None:
            return
        plan = self.plan()
        bundle = ca.read_bundle(self.spec.ca_bundle) if self.spec.ca_bundle is not None else None
        strip = self._leaves_out_skills()
        self._image = await ensure_image(plan, cache_key=self.spec.cache_key + ("\0no-task-skills" if strip else ""),
                                         context=self.spec.environment_dir,
                                         cache_root=cache_root(), build_network=self.spec.build_network,
                                         timeout=self.spec.build_timeout_sec, ca_bundle=bundle,
                                         leave_out=(bundled_skills.FOLDER,) if strip else ())

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
            binds, overlays = self._prepare(self._image)
            self._ns = await local_ns.start(tag=self._state, hostname=self._id[-20:], binds=binds,
                                            overlays=overlays, network=self._network(), dirs=("newroot",))
            userns = os.readlink(f"/proc/self/fd/{self._ns.fds['user']}")  # what cleanup finds its processes by
            atomic.write_text(self._state / "owner.json", json.dumps({**self._owner, "userns": userns}, indent=2))
        except (OSError, subprocess.CalledProcessError) as exc:
            self._teardown()
            raise SandboxError(f"{self.spec.name}: the local sandbox did not start: {exc}") from exc
        except BaseException:
            self._teardown()
            raise
        if self._stopped:  # stop() ran while the namespaces were being made
            self._teardown()
            raise SandboxError(f"{self.spec.name}: this sandbox was stopped while it was starting")

    def _network(self) -> str:
        return "slirp" if CAPABILITIES.network_for(self.spec.network_mode) == "public" else "none"

    async def enforce_metadata_block(self) -> MetadataBlock:
        """See :func:`benchflow.sandbox.base.enforce_metadata_block`: the holder put the block in the
        sandbox's network namespace before slirp4netns attached (a sandbox it failed for never started)."""
        if self._network() != "slirp":
            return MetadataBlock(True, "no network: the sandbox has only loopback")
        return MetadataBlock(True, METADATA_BLOCK)

    def _prepare(self, image: LocalImage) -> tuple[list[tuple[str, str]], list[dict]]:
        """The state folder and the view; returns the holder's binds and overlays."""
        assert self._state is not None
        self._state.mkdir(parents=True, mode=0o700)
        self._owner = {"id": self._id, "name": self.spec.name, "pid": os.getpid(), "created": time.time(),
                       "start_ticks": start_ticks(os.getpid()), "labels": dict(self.spec.labels),
                       "image": image.key if image.layer else None}
        atomic.write_text(self._state / "owner.json", json.dumps(self._owner, indent=2))
        self._workdir = resolve_workdir(self.spec.workdir, image.workdir)
        system = local_ns.system_names()
        hidden = local_ns.hidden_paths() if local_ns.privileged() else []
        filtered = local_ns.make_filter(self._state / "filter", hidden) if hidden else set()
        layer = Path(image.layer) if image.layer else None
        layout = Layout(fs=self._state / "fs", view=local_ns.VIEW, system=system, layer=layer,
                        filtered=frozenset(hidden), roots=initial_roots(image, self._workdir))
        binds, overlays = holder_mounts(layout, image, self._state / "filter" if filtered else None)
        populate(layout, image)
        for inside, host in self.spec.mounts.items():
            inside = _norm(inside)
            binds.append((str(host), f"ext/{len(layout.external)}", "ro"))
            layout.external[inside] = Path(host)
            if inside not in layout.roots:
                layout.roots.append(inside)
        binds.append((str(layout.fs), "fs", "rw"))
        if self._network() == "slirp":  # the host's resolver is not reachable from the sandbox's network
            self._private_file(layout, "/etc/resolv.conf", f"nameserver {SLIRP_DNS}\n".encode())
        if self.spec.ca_bundle is not None and layout.locate(ca.CA_PATH) is None:
            self._private_file(layout, ca.CA_PATH, ca.read_bundle(self.spec.ca_bundle))
        user = self.spec.sandbox_user
        if user and user != "root":
            if local_ns.privileged():
                self._users[user] = ensure_user(layout, user, self._workdir)
            else:
                log.warning("%s: not running as root, so commands for %r run as the invoking user",
                            self.spec.name, user)
        self._layout = layout
        return binds, overlays

    def _private_file(self, layout: Layout, remote: str, data: bytes) -> None:
        if layout.covering_root(remote) is None:
            self._new_root(layout, remote, False, replace=True)
        write_private(layout, remote, data)

    async def stop(self) -> None:
        """Kill every process, the namespaces, and remove the state folder. Idempotent, never raises.

        Nothing in here awaits, so a cancellation cannot interrupt it halfway.
        """
        self._stopped = True
        try:
            self._teardown()
        except Exception:  # noqa: BLE001 - stop must never raise; the leftover is logged
            log.exception("%s: stopping local sandbox %s", self.spec.name, self._id)

    def _teardown(self) -> None:
        local_exec.kill_all(self._live)
        if self._ns is not None:
            self._ns.close()
        self._remove_state()

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
        try:
            return resolve_user(self._users, self._require(), user)
        except LookupError:
            raise InfraError(f"{self.spec.name}: no user {user!r} in the sandbox's /etc/passwd") from None

    def command(self, cmd: list[str], *, user: str | None = None, cwd: str | None = None) -> list[str]:
        """The host argv that runs ``cmd`` inside this sandbox (started with :attr:`pass_fds` passed on)."""
        layout = self._require()
        who = self._user(user)
        if self._fs_args is None:
            self._fs_args = filesystem_args(layout)
        assert self._ns is not None and self._state is not None
        argv = ["--die-with-parent", "--unshare-pid", *cap_args(), *self._fs_args,
                "--chdir", cwd or self._workdir, "--"]
        if who.uid != 0 and local_ns.privileged():
            argv += [local_ns.tool_path("setpriv"), f"--reuid={who.uid}", f"--regid={who.gid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--"]
        if local_ns.privileged():  # a fork bomb stops at the limit (the sandbox cannot raise a hard limit)
            limit = pids_limit()
            argv += [local_ns.tool_path("prlimit"), f"--nproc={limit}:{limit}", "--"]
        return [*self._ns.prefix(), *wrap(argv + list(cmd), local_ns.VIEW / "newroot")]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The namespace fds a process started from :meth:`command` must inherit."""
        return self._ns.pass_fds if self._ns is not None else ()

    def environment(self, user: str | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment of a sandbox process (handed over as its environment, never as argv)."""
        who = self._user(user)
        assert self._id is not None and self._image is not None
        trust = ca.ca_env() if self.spec.ca_bundle is not None else {}
        return {"PATH": DEFAULT_PATH, **trust, **self._image.env, **self.spec.env, "HOME": who.home,
                "USER": who.name, "LOGNAME": who.name, "HOSTNAME": self._id[-20:], **(env or {})}

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        argv = self.command(cmd, user=user, cwd=cwd)
        return await local_exec.run(argv, stdin=stdin, timeout=timeout, output_cap=output_cap, live=self._live,
                                    env=self.environment(user, env), pass_fds=self.pass_fds)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None) -> local_exec.LocalProcess:
        proc = await local_exec.spawn(self.command(cmd, user=user, cwd=cwd), stdin=True,
                                      env=self.environment(user, env), pass_fds=self.pass_fds)
        self._live.add(proc)
        watcher = asyncio.ensure_future(proc.wait())  # forget the process once it is gone
        watcher.add_done_callback(lambda _: self._live.discard(proc))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return local_exec.LocalProcess(proc)

    # -- files ---------------------------------------------------------------------------------

    def _new_root(self, layout: Layout, remote: str, is_dir: bool, *, replace: bool = False) -> None:
        new_root(layout, remote, is_dir, replace=replace)
        self._fs_args = None

    async def put(self, local: Path, remote: str) -> None:
        local = Path(local)
        if not local.exists() and not local.is_symlink():
            raise FileNotFoundError(f"put: {local} does not exist")
        layout = self._require()
        remote = _norm(remote)
        if layout.covering_root(remote) is None:
            self._new_root(layout, remote, local.is_dir())
        target = private_target(layout, remote)
        await self._host_command(copy_argv(local, target), f"put {remote}")
        if local_ns.privileged() and target.is_relative_to(layout.fs):
            await asyncio.to_thread(local_ns.chown_tree, target)  # owned by the sandbox's root

    async def get(self, remote: str, local: Path) -> CopyReport:
        layout = self._require()
        remote = _norm(remote)
        if layout.covering_root(remote) is not None:
            source = private_target(layout, remote)
        else:
            source = layout.locate(remote)
        if source is None or not os.path.lexists(source):
            raise FileNotFoundError(f"get: {remote} does not exist in the sandbox")
        report = await asyncio.to_thread(copy_out_tree, Path(source), Path(local))
        for hidden in layout.filtered:  # a system folder copied whole leaves out what the view hides
            if hidden.startswith(remote.rstrip("/") + "/"):
                doomed = Path(local) / hidden[len(remote.rstrip("/")) + 1:]
                if doomed.is_dir() and not doomed.is_symlink():
                    shutil.rmtree(doomed, ignore_errors=True)
                elif os.path.lexists(doomed):
                    doomed.unlink()
        return report

    async def _host_command(self, argv: list[str], what: str) -> None:
        """Run a host-side helper (``cp``) that ``stop()`` can kill like any sandbox process."""
        done = await local_exec.run(argv, stdin=None, timeout=None, output_cap=4096, live=self._live)
        if done.return_code != 0:
            raise InfraError(f"{self.spec.name}: {what} failed: {done.stderr.strip()[-300:]}")

    # -- snapshots -----------------------------------------------------------------------------

    async def snapshot(self, *, retain: bool = False) -> str:
        """A copy of the private folders in this sandbox's state (copy-on-write where the host
        filesystem can reflink); it goes with the sandbox, so it cannot be retained."""
        if retain:
            raise CapabilityError(f"{self.spec.name}: a local sandbox's snapshots are removed with it "
                                  "and cannot be retained; use --sandbox docker")
        layout = self._require()
        assert self._state is not None
        self._snapshots += 1
        ref = f"{self._id}@{self._snapshots}"
        target = self._state / "snapshots" / str(self._snapshots)
        target.mkdir(parents=True)
        await self._host_command(["cp", "-a", "--reflink=auto", str(layout.fs), str(target / "fs")], "snapshot")
        atomic.write_text(target / "roots.json", json.dumps(layout.roots))
        return ref

    async def restore(self, ref: str) -> None:
        """Kill every running process and put the private folders back as they were at ``ref``
        (a snapshot of this sandbox, or of another live sandbox of this machine)."""
        layout = self._require()
        assert self._state is not None
        sandbox, _, number = ref.partition("@")
        source = sandboxes_dir() / sandbox / "snapshots" / number
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", sandbox) or not number.isdigit() or not source.is_dir():
            raise SandboxError(f"{self.spec.name}: unknown snapshot {ref!r}")
        local_exec.kill_all(self._live)
        for entry in os.scandir(layout.fs):  # emptied in place: the holder's view binds this very folder
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        await self._host_command(["cp", "-a", "--reflink=auto", f"{source / 'fs'}/.", f"{layout.fs}/"],
                                 "restore")
        layout.roots[:] = json.loads((source / "roots.json").read_text())
        self._fs_args = None
