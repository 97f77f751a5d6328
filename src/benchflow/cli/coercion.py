"""Options of the same plain type share one value coercer (``bench run`` parses faster).

Typer coerces every option's value, given or not, through a pydantic ``TypeAdapter`` it builds
for that option when the command line is parsed. ``bench run`` has about 90 options but only a
handful of distinct plain types (``str``, ``int``, ``list[str]`` ...): building one adapter per
option cost about 0.1 s of every run's start. Here the options whose adapter depends on nothing
but the type (and, for numbers, the bounds) get the adapter Typer itself builds for the first
of them, so values, defaults and error messages are exactly Typer's.

This reaches into Typer's runtime-coercion layer (``typer._coercion``); when a Typer release
changes it, the options are left as they are (correct, only slower).
"""

from __future__ import annotations

from typing import Any, get_args, get_origin

_PLAIN = (str, bool)
_NUMBERS = (int, float)


def share_coercers(command: Any) -> None:
    """Give the plain-typed options of ``command`` (and its built subcommands) shared coercers."""
    try:
        from typer._adapters import try_build_adapter
        from typer._coercion import AdapterRuntimeParam
    except ImportError:
        return
    shared: dict[tuple[Any, ...], Any] = {}
    for cmd in _commands(command):
        for param in getattr(cmd, "params", ()):
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None or getattr(param, "_runtime_param", True) is not None:
                continue
            key = _key(descriptor)
            if key is None:
                continue
            if key not in shared:
                shared[key] = try_build_adapter(descriptor.annotation, descriptor.parameter_info)
            if shared[key] is not None:
                param._runtime_param = AdapterRuntimeParam(annotation=descriptor.annotation,
                                                           parameter_info=descriptor.parameter_info,
                                                           adapter=shared[key])


def _commands(command: Any) -> list[Any]:
    found = [command]
    for sub in (getattr(command, "commands", None) or {}).values():
        found.extend(_commands(sub))
    return found


def _key(descriptor: Any) -> tuple[Any, ...] | None:
    """What the option's adapter depends on, or None when it is not a plain type (paths, choices,
    files, custom parsers: those keep an adapter of their own)."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    annotation = descriptor.annotation
    leaf = annotation
    if get_origin(annotation) is list:
        args = get_args(annotation)
        if len(args) != 1:
            return None
        leaf = args[0]
    if type(leaf) is not type:  # an Annotated, Literal, Union ... form
        return None
    if leaf in _PLAIN:
        return (annotation,)
    if leaf in _NUMBERS:
        return (annotation, info.min, info.max, bool(info.clamp))
    return None
