"""The containers a Docker-engine backend made: listing, removal, existence (its ``leftovers``).

Only containers labelled ``benchflow.owned=true`` count, and of those the ones
whose ``benchflow.backend`` label names the asking backend (two backends may
share one engine); a container made before that label existed belongs to the
engine's built-in backend. The owner labels (:mod:`.docker_engine`) say whether
the process that made it still runs. A container whose ``benchflow.kind`` is not
``sandbox`` is none of ours: the engine gives a build step's container the labels
of the image it starts from, so an agent layer built on a task image carries the
image's labels (and its builder's long-gone pid) while it runs; cleanup once
killed such a build mid-step.
"""

from __future__ import annotations

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng
from ..base import OwnedSandbox

KEPT_PREFIX = "bf-kept-"
"""Name prefix of containers kept with --keep-sandbox: cleanup leaves them to ``release`` (with the
other containers of its pod)."""
POD = "benchflow.pod"
"""Label of every container and volume of one multi-service pod (:mod:`.docker.pod`)."""
VOLUME = "volume:"
"""Id prefix of a leftover row that is a pod's named volume whose containers are already gone."""


def _api(url: str | None):
    """The engine's client once it answers.

    Raises:
        SandboxUnavailable: no engine answers at ``url``.
    """
    answers, why = eng.ping(url)
    if not answers:
        raise SandboxUnavailable(why)
    return eng.client(url)


def list_owned(url: str | None, backend: str, unlabelled: str, owner: str | None = None) -> list[OwnedSandbox]:
    """The containers ``backend`` made on the engine at ``url`` (those without a backend label
    count as ``unlabelled``'s); with ``owner``, only the job ``owner``'s. A multi-service pod's
    containers are rows of their own (a sibling of a kept ``main`` counts as kept), and a pod's
    named volume is a row (id ``volume:<name>``) only once none of its containers is left."""
    rows = []
    items = _api(url).containers(all=True, filters={"label": f"{eng.OWNED}=true"})
    kept_pods = {(i.get("Labels") or {}).get(POD) for i in items
                 if (i.get("Names") or ["/?"])[0].lstrip("/").startswith(KEPT_PREFIX)} - {None}
    for item in items:
        labels = item.get("Labels") or {}
        if (labels.get(eng.BACKEND) or unlabelled) != backend or owner not in (None, labels.get(eng.JOB)):
            continue
        if labels.get(eng.KIND, "sandbox") != "sandbox":  # labels of an image of ours, not of a sandbox: a
            continue  # build's step on top of it (an agent layer) or a container run from it by hand
        name = (item.get("Names") or ["/?"])[0].lstrip("/")
        rows.append(_row(item["Id"], name, labels, backend, url, state=item.get("State", "?"),
                         image=item.get("Image", "?"), created=float(item.get("Created", 0)),
                         kept=name.startswith(KEPT_PREFIX) or labels.get(POD) in kept_pods))
    pods = {(i.get("Labels") or {}).get(POD) for i in items}
    for vol in eng.client(url).volumes(filters={"label": [f"{eng.OWNED}=true", POD]}).get("Volumes") or []:
        labels = vol.get("Labels") or {}
        if labels.get(POD) in pods or (labels.get(eng.BACKEND) or unlabelled) != backend \
                or owner not in (None, labels.get(eng.JOB)):
            continue  # a pod's volume is removed with its containers; listed alone only when they are gone
        rows.append(_row(VOLUME + vol["Name"], vol["Name"], labels, backend, url, state="volume", image="-",
                         created=0.0, kept=False))
    return rows


def _row(ident: str, name: str, labels: dict[str, str], backend: str, url: str | None, *, state: str, image: str,
         created: float, kept: bool) -> OwnedSandbox:
    alive = eng.owner_alive(labels)
    pid = labels.get(eng.PID)
    if alive is True:
        who = f"live pid {pid}"
    elif alive is False:
        who = f"gone (pid {pid})"
    elif pid:
        who = f"other host {labels.get(eng.HOST, '?')}"
    else:
        who = "none"
    return OwnedSandbox(
        id=ident, name=name, sandbox=backend, engine=url or "docker", state=state, image=image,
        created=eng.created_at(labels, created) or 0.0, job=labels.get(eng.JOB), trial=labels.get(eng.TRIAL),
        task=labels.get(eng.TASK), owner=who, owner_alive=alive, kept=kept)


def remove(url: str | None, ids: list[str]) -> dict[str, str]:
    """Force-remove containers (and their anonymous volumes); a member of a multi-service pod takes
    the whole pod with it (its other containers and named volumes). id -> reason for those that stay."""
    from ..engine_api import NotFound

    failed = {}
    api = eng.client(url)
    for container in ids:
        try:
            if container.startswith(VOLUME):
                api.remove_volume(container[len(VOLUME):], force=True)
                continue
            pod = (api.inspect_container(container).get("Config", {}).get("Labels") or {}).get(POD)
            api.remove_container(container, force=True, v=True)
            stayed = remove_pod(api, pod) if pod else ""
            if stayed:
                failed[container] = f"some of its pod {pod} stayed: {stayed}"
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - report it and go on with the rest
            if not removal_in_progress(exc):
                failed[container] = str(exc)
    return failed


def removal_in_progress(exc: Exception) -> bool:
    """The engine is removing the container already (a finished run's removal that outlived it)."""
    return getattr(exc, "status_code", None) == 409 and "already in progress" in str(exc)


def remove_pod(api, pod: str) -> str:
    """Force-remove every container, then every volume, labelled as pod ``pod``; '' when all went,
    else what stayed and why."""
    from ..engine_api import NotFound

    stayed = []
    for item in api.containers(all=True, filters={"label": f"{POD}={pod}"}):
        try:
            api.remove_container(item["Id"], force=True, v=True)
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - report it and go on with the rest
            stayed.append(f"container {item['Id'][:12]}: {exc}")
    for vol in api.volumes(filters={"label": f"{POD}={pod}"}).get("Volumes") or []:
        try:
            api.remove_volume(vol["Name"], force=True)
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001
            stayed.append(f"volume {vol['Name']}: {exc}")
    return "; ".join(stayed)


def exists(url: str | None, container: str) -> bool:
    from ..engine_api import NotFound

    try:
        eng.client(url).inspect_container(container)
    except NotFound:
        return False
    return True


RETAINED = "benchflow.retained"
"""Label of a snapshot image kept past its sandbox (``bench branch --retain-snapshots``)."""


def stale_snapshots(url: str | None, owner: str | None) -> list[str]:
    """Snapshot images of the job ``owner`` (None: of any job) whose making process is gone and that
    were not retained."""
    refs = []
    labels = [f"{eng.OWNED}=true", f"{eng.KIND}=snapshot"] + ([f"{eng.JOB}={owner}"] if owner is not None else [])
    for image in _api(url).images(filters={"label": labels}):
        labels = image.get("Labels") or {}
        if labels.get(RETAINED) == "true" or eng.owner_alive(labels) is not False:
            continue
        refs.extend(t for t in image.get("RepoTags") or [] if t != "<none>:<none>")
    return refs


def remove_images(url: str | None, refs: list[str]) -> dict[str, str]:
    """Remove these images; ref -> reason for each that stays (one already gone counts as removed)."""
    from ..engine_api import ImageNotFound

    failed = {}
    api = eng.client(url)
    for ref in refs:
        try:
            api.remove_image(ref, force=True)
        except ImageNotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - report it and go on with the rest
            failed[ref] = str(exc)
    return failed
