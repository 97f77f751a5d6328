"""What the ``local`` backend can do on this machine: its capabilities and its availability probe."""

from __future__ import annotations

import asyncio
import concurrent.futures
import shutil
import tempfile
from pathlib import Path

from benchflow.sandbox import local_exec
from benchflow.sandbox.base import Capabilities, ExecResult
from benchflow.sandbox.local import ns as local_ns
from benchflow.sandbox.local.dockerfile import DEFAULT_PATH
from benchflow.sandbox.local.layer import cap_args
from benchflow.sandbox.local.unshare import tool, wrap


def capabilities() -> Capabilities:
    """``public`` needs slirp4netns (and a tun device it may open); without, a public task runs with no
    network (and so do Dockerfile ``RUN`` steps), and the plan and ``bench doctor`` say why."""
    missing = local_ns.public_network_missing()
    if missing is None:
        modes, fallbacks, note = frozenset({"no-network", "public"}), {}, None
    else:
        modes, fallbacks = frozenset({"no-network"}), {"public": "no-network"}
        note = f"no public network: {missing}; public tasks and Dockerfile RUN steps run with no network"
    return Capabilities(network_modes=modes, network_fallbacks=fallbacks, fallback_note=note, snapshots=True,
                        gpus=False, multi_service=False, build_from_dockerfile=True, resource_limits=False,
                        host_mounts=True, image_layers=False, keep=False)


async def _run_true(scratch: Path) -> ExecResult:
    system = local_ns.system_names()
    binds = [(f"/{n}", f"sys/{n}", "ro-idmap") for n, target in system.items() if target is None]
    ns = await local_ns.start(tag=scratch, hostname="probe", binds=binds, overlays=[], network="none",
                              dirs=("newroot",))
    try:
        args = ["--die-with-parent", "--unshare-pid", *cap_args(), "--proc", "/proc", "--dev", "/dev"]
        for name, target in system.items():
            args += ["--symlink", target, f"/{name}"] if target else \
                ["--ro-bind", str(local_ns.VIEW / "sys" / name), f"/{name}"]
        argv = [*ns.prefix(), *wrap([*args, "--", "true"], local_ns.VIEW / "newroot")]
        return await local_exec.run(argv, stdin=None, timeout=10, output_cap=4096, live=set(),
                                    env={"PATH": DEFAULT_PATH}, pass_fds=ns.pass_fds)
    finally:
        ns.close()


def probe(caps: Capabilities) -> tuple[bool, str]:
    """A real probe: a holder's namespaces and one sandboxed ``true`` with the tool this machine uses."""
    chosen = tool()
    if shutil.which(chosen) is None or shutil.which("nsenter") is None:
        return False, "neither bubblewrap (bwrap) nor util-linux unshare/nsenter is installed"
    scratch = Path(tempfile.mkdtemp(prefix="bf-local-probe-"))
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # callers may have a loop running
            done = pool.submit(asyncio.run, _run_true(scratch)).result()
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return False, f"{chosen} namespace probe failed: {str(exc).strip()[-200:]}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.return_code != 0:
        return False, f"{chosen} namespace probe failed: {done.stderr.strip()[-200:]}"
    name = "bubblewrap" if chosen == "bwrap" else "util-linux unshare"
    if local_ns.privileged():
        mode = (f"as root: sandbox root is host uid {local_ns.HOST_BASE} (user namespace), RUN layers "
                f"via overlayfs, sandbox user via setpriv")
    else:
        mode = "unprivileged: user namespace, no RUN layers, one uid"
    network = "; public via slirp4netns" if "public" in caps.network_modes else ""  # else: its fallback_note
    return True, f"{name} namespaces work ({mode}{network})"
