"""Room for a root exec in a container whose pids limit an agent has filled (a fork bomb).

An exec starts a process inside the container's pids cgroup (the runtime's ``init`` even clones
there before the command runs), so once the agent holds every pid the limit allows, no exec starts:
the engine answers exit code 126 ("unable to start container process"), and the verifier fence
could never get in to stop the agent. The agent would turn its failed trial into an infrastructure
error. :func:`room_to_start` raises the limit by :func:`headroom` through the engine for as long as
its block runs (the fence: until the agent is gone) and then sets it back, so the bomb is never
given more than that: a bash bomb sleeps in its fork-retry backoff, so the new room is not refilled
before the exec is in, and once the limit is back the agent cannot fork again. Containers without
a pids limit get nothing (there is no limit to have filled), nor do those of an engine that refuses
the update (gVisor's ``runsc`` has no ``update``): the block runs as it would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from ..docker_engine import call
from ..engine_api import EngineError, NotFound

log = logging.getLogger(__name__)

MIN_HEADROOM = 64


def headroom(limit: int) -> int:
    """How many pids above ``limit`` a root exec is given: a quarter more, at least
    :data:`MIN_HEADROOM` (the runtime's start needs a few; the rest is for a bomb that wakes)."""
    return max(MIN_HEADROOM, limit // 4)


@contextlib.asynccontextmanager
async def room_to_start(api, container: str) -> AsyncIterator[None]:
    """Raise ``container``'s pids limit while the block runs (see the module docstring).

    The limit in force is read from the container (the one it was created with) and always set
    back on the way out, even when the block is cancelled. An engine that refuses the raise leaves
    the block to run as it would have."""
    try:
        limit = int((await call(api.inspect_container, container))["HostConfig"].get("PidsLimit") or 0)
    except (EngineError, OSError, KeyError, TypeError, ValueError):
        limit = 0
    if limit <= 0:
        yield
        return
    try:
        await call(api.update_pids_limit, container, limit + headroom(limit))
    except (EngineError, OSError) as exc:
        log.warning("could not raise the pids limit of %s to let a root exec in: %s", container[:12],
                    str(exc).splitlines()[0][:200])
        yield
        return
    log.info("raised the pids limit of %s from %d by %d so that a root exec can start", container[:12], limit,
             headroom(limit))
    try:
        yield
    finally:
        await asyncio.shield(_restore(api, container, limit))


async def _restore(api, container: str, limit: int) -> None:
    try:
        await call(api.update_pids_limit, container, limit)
    except NotFound:
        pass  # the container is gone: nothing to bound any more
    except (EngineError, OSError) as exc:
        log.warning("could not set the pids limit of %s back to %d: %s", container[:12], limit,
                    str(exc).splitlines()[0][:200])
