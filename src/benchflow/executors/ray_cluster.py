"""Joining a Ray cluster as the job's driver: the ``--executor`` spelling, the import, the link address."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from benchflow.errors import ConfigError

INSTALL_HINT = "pip install 'benchflow[ray]'"

SESSION_DIED = "Initialization failure from server"
"""Ray Client's answer when the server of the new session died while it started. Besides a real
refusal, that is a known race in Ray's client proxier (ray-project/ray#63202: the session's server
dies at its fork in a few percent of connections), which a new session gets past."""
CONNECT_TRIES = 3


def address_of(executor: str) -> str | None:
    """``ray`` -> None (``$RAY_ADDRESS``, else the cluster ``ray start`` made on this machine, else a
    new local one); ``ray://HOST:PORT`` -> itself (Ray Client)."""
    return None if executor == "ray" else executor


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        ConfigError: Ray is not installed (names the extra to install).
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--executor ray: Ray is not installed here; {INSTALL_HINT}") from None
    return ray


def connect(ray: Any, executor: str) -> tuple[str, bool]:
    """Join (or, for a bare ``ray`` with no cluster around, start) the cluster; returns its address
    and whether this call connected (a process already connected, e.g. ``bf.run`` in a notebook
    that called ``ray.init``, keeps its connection: the run neither re-joins nor shuts it down).

    Raises:
        ConfigError: the cluster cannot be reached.
    """
    if ray.is_initialized():
        return str(ray.get_runtime_context().gcs_address or "connected"), False
    address = address_of(executor)
    logging.getLogger("ray").setLevel(logging.ERROR)  # Ray's notices would interleave with the run's lines
    for tries_left in reversed(range(CONNECT_TRIES)):
        try:
            context = ray.init(address=address, namespace="benchflow", log_to_driver=False,
                               ignore_reinit_error=True, configure_logging=False)
            break
        except (ConnectionError, RuntimeError, ValueError) as exc:
            if tries_left and (address or "").startswith("ray://") and SESSION_DIED in str(exc):
                ray.shutdown()  # a new session: a new server for it
                continue
            raise ConfigError(f"--executor {executor}: cannot join the Ray cluster ({_reason(exc)})") from None
    return str(getattr(context, "address_info", {}).get("gcs_address") or address or "local"), True


def _reason(exc: BaseException) -> str:
    """Ray's error on one line: its first line and, when it goes on (Ray Client's "Initialization
    failure from server:" puts the server's reason below), its last one."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"


def probe(executor: str) -> None:
    """Fail fast on a cluster address (``ray://HOST:PORT``, else ``$RAY_ADDRESS``) nothing listens
    at: Ray itself retries for minutes.

    Raises:
        ConfigError: the address does not answer a TCP connection within a few seconds.
    """
    target = address_of(executor) or os.environ.get("RAY_ADDRESS")
    if not target or target in ("auto", "local"):
        return
    host, _, port = target.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--executor {executor}: {target!r} is not HOST:PORT (from --executor or $RAY_ADDRESS)")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"--executor {executor}: cannot reach the Ray cluster at {target} "
                          f"({exc.strerror or exc}); start it (ray start --head) or fix $RAY_ADDRESS") from None


def link_host(ray: Any) -> str:
    """The address the nodes reach the driver's gateway link at: ``$BENCHFLOW_RAY_GATEWAY_HOST``, else
    loopback when every node is on this machine, else this machine's address in the cluster."""
    explicit = os.environ.get("BENCHFLOW_RAY_GATEWAY_HOST")
    if explicit:
        return explicit
    mine = ray.util.get_node_ip_address()
    others = {node.get("NodeManagerAddress") for node in ray.nodes() if node.get("Alive")}
    return "127.0.0.1" if others <= {mine, "127.0.0.1"} else mine


def link_port() -> int:
    """``$BENCHFLOW_RAY_GATEWAY_PORT`` (a port a firewall lets the nodes reach), else 0: any free port.

    Raises:
        ConfigError: not a port number.
    """
    value = os.environ.get("BENCHFLOW_RAY_GATEWAY_PORT", "0")
    if not value.isdigit() or int(value) > 65535:
        raise ConfigError(f"BENCHFLOW_RAY_GATEWAY_PORT={value!r}: give a port number (0-65535)")
    return int(value)


def largest_node(ray: Any) -> dict[str, float]:
    """The most CPUs, memory (bytes) and GPUs any one live node offers (each taken separately)."""
    alive = [node.get("Resources") or {} for node in ray.nodes() if node.get("Alive")]
    return {key: max((float(have.get(key, 0.0)) for have in alive), default=0.0) for key in ("CPU", "memory", "GPU")}
