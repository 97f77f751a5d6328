"""``name@version`` environment specs: a folder of manifests, ``$BENCHFLOW_ENV_REGISTRY`` or the built-in one.

The registry is a folder of manifest files: ``<name>@<version>.toml`` pins a version, ``<name>.toml`` is a
bare ``<name>``'s default (else its highest-sorting version); ``.yaml``/``.yml`` work too. When
``$BENCHFLOW_ENV_REGISTRY`` is set (and not empty) it is the registry, with no fallback to the built-in one
shipped in this package (``env0@prod``, ``env0@outage``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from benchflow.errors import ConfigError

REGISTRY_VAR = "BENCHFLOW_ENV_REGISTRY"
BUILTIN = Path(__file__).parent / "registry"
EXTENSIONS = (".toml", ".yaml", ".yml")
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:@(?P<version>[A-Za-z0-9][A-Za-z0-9._-]*))?$")


def is_spec(value: str) -> bool:
    """``name`` or ``name@version``, not a path (no separator, no manifest extension)."""
    return "/" not in value and os.sep not in value and not value.endswith(EXTENSIONS) and bool(_SPEC.match(value))


def registry_dir() -> tuple[Path, str]:
    """(the registry folder, where it came from).

    Raises:
        ConfigError: ``$BENCHFLOW_ENV_REGISTRY`` names no folder.
    """
    given = os.environ.get(REGISTRY_VAR)
    if not given:
        return BUILTIN, "the built-in registry"
    folder = Path(given).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"${REGISTRY_VAR}={given}: not a folder; point it at a folder of name@version.toml "
                          "manifests, or unset it for the built-in registry")
    return folder, f"${REGISTRY_VAR} ({folder})"


def _find(folder: Path, stem: str) -> Path | None:
    return next((folder / f"{stem}{ext}" for ext in EXTENSIONS if (folder / f"{stem}{ext}").is_file()), None)


def available(folder: Path) -> list[str]:
    return sorted({p.stem for ext in EXTENSIONS for p in folder.glob(f"*{ext}")})


def resolve(spec: str, flag: str) -> tuple[Path, str]:
    """(the manifest file, ``name@version``) that ``spec`` names.

    Raises:
        ConfigError: no such environment or version; lists what the registry has.
    """
    match = _SPEC.match(spec)
    if match is None:
        raise ConfigError(f"{flag} {spec!r}: give a manifest path or name@version")
    name, version = match.group("name"), match.group("version")
    folder, where = registry_dir()
    if version is not None:
        path = _find(folder, f"{name}@{version}")
    else:
        path = _find(folder, name)
        version = "default"
        if path is None:
            pinned = sorted(p for ext in EXTENSIONS for p in folder.glob(f"{name}@*{ext}"))
            path = pinned[-1] if pinned else None
            version = path.stem.split("@", 1)[1] if path is not None else version
    if path is None:
        raise ConfigError(f"{flag} {spec}: not in {where}; it has {', '.join(available(folder)) or 'nothing'} "
                          f"(or give a manifest path, or set ${REGISTRY_VAR} to a folder of manifests)")
    return path, f"{name}@{version}"
