"""What a Docker engine can give a task: its pinned image (looked up, pulled once per process) and
its machine's CPUs and memory (the most a container can be given). See :mod:`benchflow.sandbox.fit`."""

from __future__ import annotations

from .. import docker_engine as eng

_image_status: dict[tuple[str | None, str], tuple[bool, str]] = {}


def image_status(url: str | None, ref: str, *, pull: bool) -> tuple[bool | None, str]:
    from ..engine_api import EngineError, ImageNotFound

    known = _image_status.get((url, ref))
    if known is not None:
        return known
    api = eng.client(url)
    try:
        api.inspect_image(ref)
        status = (True, "is on the engine")
    except ImageNotFound:
        if not pull:
            return None, "is not on the engine: a run pulls it, else builds environment/Dockerfile"
        try:
            api.pull(ref)
        except (EngineError, OSError) as exc:
            why = str(getattr(exc, "explanation", None) or exc).strip().splitlines()[0][:200]
            status = (False, f"cannot be pulled ({why})")
        else:
            from .cache import record_pull

            record_pull(url, ref)
            status = (True, "was pulled")
    except (EngineError, OSError) as exc:
        return False, f"cannot be looked up: the engine did not answer ({type(exc).__name__})"
    _image_status[(url, ref)] = status
    return status


_resources: dict[str | None, tuple[float | None, int | None]] = {}


def engine_resources(url: str | None) -> tuple[float | None, int | None]:
    """(CPUs, memory MiB) of the engine's machine, asked once per process (every task of a plan
    is fitted against it); (None, None) when the engine does not answer."""
    known = _resources.get(url)
    if known is not None:
        return known
    try:
        info = eng.client(url).info()
    except Exception:  # noqa: BLE001 - no engine: nothing to clamp to (the run card refuses anyway)
        return None, None
    cpus = info.get("NCPU")
    memory = info.get("MemTotal")
    known = _resources[url] = (float(cpus) if cpus else None), (int(memory) // (1 << 20) if memory else None)
    return known
