"""A task's ``sandbox.mcp_servers`` as ACP ``session/new`` MCP server entries (contracts §1.4, §5.4).

The agent runs inside the sandbox and starts ``stdio`` servers there itself (a
``cwd`` becomes a ``sh -c 'cd …'`` wrapper, since ACP's stdio entry has no
working folder); ``sse`` and ``streamable-http`` servers are handed over by
URL and reached only as the sandbox's network allows. Tool filters
(``tools``, ``include_tags``, ``exclude_tags``) travel in ``_meta.benchflow``
for agents that honour them. Values reach the agent over its stdin, never a
command line.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
)

_CD = 'cd "$0" && exec "$@"'


def _meta(server: Any) -> dict[str, Any] | None:
    filters = {k: getattr(server, k) for k in ("tools", "include_tags", "exclude_tags")
               if getattr(server, k) is not None}
    return {"benchflow": filters} if filters else None


def acp_mcp_servers(servers: list[Any]) -> list[Any]:
    """The ACP form of each task MCP server (``benchflow.tasks.config.McpServer``)."""
    out: list[Any] = []
    for server in servers:
        meta = _meta(server)
        if server.transport == "stdio":
            command, args = server.command, list(server.args)
            if server.cwd:
                command, args = "sh", ["-c", _CD, server.cwd, server.command, *args]
            out.append(McpServerStdio(name=server.name, command=command, args=args, field_meta=meta,
                                      env=[EnvVariable(name=k, value=v) for k, v in server.env.items()]))
            continue
        headers = [HttpHeader(name=k, value=v) for k, v in server.headers.items()]
        kind = SseMcpServer if server.transport == "sse" else HttpMcpServer
        out.append(kind(type="sse" if server.transport == "sse" else "http", name=server.name, url=server.url,
                        headers=headers, field_meta=meta))
    return out
