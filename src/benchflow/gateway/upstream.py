"""Where model calls go: providers from the standard variables on the host.

The provider table is data (``providers.toml`` beside this file). An
:class:`Upstreams` is built from an environment mapping once per job; it
knows each configured provider's real base URL and key, which path of the
gateway stands for it, and how to put the real key on an upstream request.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from benchflow.errors import ConfigError

_TABLE = Path(__file__).with_name("providers.toml")


@dataclass(frozen=True)
class Provider:
    """One row of ``providers.toml``."""

    name: str
    key_env: tuple[str, ...]
    base_url_env: tuple[str, ...]
    default_base_url: str
    mount: str
    auth: str
    protocol: str
    agent_url_env: tuple[str, ...]
    agent_key_env: tuple[str, ...]
    price_provider: str
    model_prefixes: tuple[str, ...] = ()
    openai_path: str = ""
    stream_usage: bool = False


@cache
def providers() -> dict[str, Provider]:
    """The provider table, by name."""
    rows = tomllib.loads(_TABLE.read_text(encoding="utf-8"))
    table: dict[str, Provider] = {}
    for name, row in rows.items():
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
        table[name] = Provider(name=name, **values)
    return table


@dataclass(frozen=True)
class Upstream:
    """A configured provider: its real base URL and (optional) real key."""

    provider: Provider
    base_url: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.provider.name

    def prepare(self, rest: str, query: str, sent: str) -> tuple[str, dict[str, str]]:
        """The upstream URL and auth headers for ``rest`` (the path after the mount).

        ``sent`` is where the agent put its per-trial key (``authorization``,
        ``x-api-key``, ``x-goog-api-key`` or ``query``); the real key goes in the
        provider's slot, or in that same slot for ``auth = "as-sent"``.
        """
        pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "key"] if query else []
        style = self.provider.auth
        if style == "as-sent":
            style = sent if sent in ("x-goog-api-key", "query") else "bearer"
        headers: dict[str, str] = {}
        if self.api_key:
            if style == "bearer":
                headers["authorization"] = f"Bearer {self.api_key}"
            elif style == "query":
                pairs.append(("key", self.api_key))
            else:
                headers[style] = self.api_key
        url = self.base_url + rest
        return (f"{url}?{urlencode(pairs)}" if pairs else url), headers


class Upstreams:
    """The configured providers of one job, by name."""

    def __init__(self, upstreams: list[Upstream] | None = None) -> None:
        self._by_name = {u.name: u for u in upstreams or []}
        self._by_mount = sorted(self._by_name.values(), key=lambda u: -len(u.provider.mount))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Upstreams:
        """Every provider whose key or base-URL variable is set in ``env``.

        Raises:
            ConfigError: a base URL that is not http(s).
        """
        found: list[Upstream] = []
        for provider in providers().values():
            key = _first(env, provider.key_env)
            base = _first(env, provider.base_url_env)
            if not (key or base):
                continue
            base = base or provider.default_base_url
            if not base:
                continue
            if not re.match(r"^https?://", base):
                var = next(v for v in provider.base_url_env if env.get(v))
                raise ConfigError(f"{var}: {base!r} is not an http(s) URL; set it like http://host:port/v1")
            found.append(Upstream(provider=provider, base_url=base.rstrip("/"), api_key=key))
        return cls(found)

    def __iter__(self):
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Upstream | None:
        return self._by_name.get(name)

    def secrets(self) -> list[str]:
        """The real keys: values that must never reach disk or the agent."""
        return [u.api_key for u in self if u.api_key]

    def match(self, path: str) -> tuple[Upstream, str] | None:
        """Split a path under the trial prefix into (upstream, rest after its mount)."""
        for upstream in self._by_mount:
            mount = "/" + upstream.provider.mount
            if path == mount or path.startswith(mount + "/"):
                return upstream, path[len(mount):]
        return None

    def for_model(self, model: str | None) -> tuple[Upstream, str] | None:
        """The upstream serving ``model`` and the model id to send it.

        ``provider/model`` picks the provider by name; otherwise the id's
        prefix (``claude``, ``gpt``, ``gemini`` …) does; otherwise the only
        configured provider, if there is just one.
        """
        if model:
            head, _, tail = model.partition("/")
            if tail and head in self._by_name:
                return self._by_name[head], tail
            for upstream in self:
                if any(model.lower().startswith(p) for p in upstream.provider.model_prefixes):
                    return upstream, model
        if len(self._by_name) == 1:
            return next(iter(self)), model or ""
        return None


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None
