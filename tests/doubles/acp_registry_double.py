"""Test double: the ACP registry (github.com/agentclientprotocol/registry) as ``-a acp:<id>@<version>`` reads it.

Two of GitHub's endpoints, on loopback, with their paths and JSON shapes:

    GET /raw/{ref}/{id}/agent.json         the file at a branch (``main``) or a commit sha
                                           (raw.githubusercontent.com/agentclientprotocol/registry/...)
    GET /api/commits?path={id}/agent.json&per_page=N&page=P
                                           the file's commits, newest first, ``[{"sha": ...}]``; an empty
                                           page past the last (api.github.com/repos/.../commits)

A test adds versions of an agent with :meth:`AcpRegistryDouble.publish` (each one a commit, the last
one the tip of ``main``) and points bench at it with :meth:`env`. Every request is kept in
:attr:`requests` (path and query), with the ``Authorization`` header it carried.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles.scripted_common import ScriptedServer


class AcpRegistryDouble(ScriptedServer):
    def __init__(self, per_page_cap: int = 100) -> None:
        self.history: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        """agent id -> [(commit sha, agent.json)], oldest first."""
        self.requests: list[tuple[str, str, str | None]] = []
        self.per_page_cap = per_page_cap
        super().__init__()

    def routes(self) -> list:
        return [Route("/raw/{ref}/{agent}/agent.json", self._raw), Route("/api/commits", self._commits)]

    def publish(self, entry: dict[str, Any]) -> str:
        """Commit ``entry`` as ``<id>/agent.json``; returns the commit's sha."""
        commits = self.history.setdefault(entry["id"], [])
        sha = hashlib.sha1(json.dumps([entry, len(commits)], sort_keys=True).encode()).hexdigest()
        commits.append((sha, entry))
        return sha

    def env(self) -> dict[str, str]:
        return {"BENCHFLOW_ACP_REGISTRY_RAW": f"{self.url}/raw", "BENCHFLOW_ACP_REGISTRY_API": f"{self.url}/api"}

    def _note(self, request: Request) -> None:
        self.requests.append((request.url.path, request.url.query, request.headers.get("authorization")))

    async def _raw(self, request: Request) -> Response:
        self._note(request)
        ref, agent = request.path_params["ref"], request.path_params["agent"]
        commits = self.history.get(agent, [])
        found = commits[-1:] if ref == "main" else [c for c in commits if c[0] == ref]
        if not found:
            return Response("404: Not Found", status_code=404)
        return Response(json.dumps(found[0][1]), media_type="text/plain")  # raw files come as text/plain

    async def _commits(self, request: Request) -> Response:
        self._note(request)
        agent = request.query_params.get("path", "").removesuffix("/agent.json")
        per_page = min(int(request.query_params.get("per_page", 30)), self.per_page_cap)
        page = int(request.query_params.get("page", 1))
        newest_first = [{"sha": sha, "commit": {"message": f"{agent} {entry['version']}"}}
                        for sha, entry in reversed(self.history.get(agent, []))]
        return JSONResponse(newest_first[(page - 1) * per_page: page * per_page])
