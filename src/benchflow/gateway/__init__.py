"""The model gateway: every model call of an agent goes through here.

The run engine starts one :class:`Gateway` per job and registers each trial,
which gets a per-trial key and the provider variables its agent already reads
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GEMINI_API_KEY`` …) pointing at
the gateway. The gateway checks the key, swaps in the real provider key (which
never enters a sandbox or the job folder), forwards OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages and Gemini calls, streamed or not, and per
trial records ``trajectory/llm_trajectory.jsonl`` (redacted), counts tokens
from the provider's own ``usage``, prices them from a maintained table, and
refuses the next call once the trial's token or turn budget is spent.

Modules: ``upstream`` (providers from the standard variables, table in
``providers.toml``), ``server`` (the Starlette proxy), ``usage`` and ``streams``
(usage per API; SSE reassembly), ``pricing`` (genai-prices), ``budget``,
``recorder`` (the jsonl writer), ``routes`` (a trial's key, URLs, counters),
``failures`` (api_error / suspected_api_error blocks), ``runner`` (start/stop).

Why a lean pass-through on httpx + Starlette, not LiteLLM
----------------------------------------------------------
Measured on this project's machine (2 cores, Python 3.11), LiteLLM 1.110.2 in
a throwaway venv against our own stack:

============================  =======================  ==========================
                              LiteLLM                  httpx + Starlette + uvicorn
============================  =======================  ==========================
installed size / packages     381 MB / 64 (``[proxy]``  84 MB / the whole .venv
                              extra: 756 MB / 120)      (all already dependencies)
``import`` time               2.9 s (4.1 s + retries    0.18 s, plus 0.24 s to load
                              when its remote price     the genai-prices table in
                              map is unreachable)       the background
resident memory after import  192 MB (proxy: 316 MB,    33 MB (+~10 MB price table)
                              6.0 s to import)
============================  =======================  ==========================

Provider coverage is where LiteLLM shines (100+ providers with request
*translation*), but the agents we run already speak one of three wire APIs
and read the standard variables, so the gateway has no translating to do: it
forwards bytes. What it must own anyway (per-trial keys, budgets that refuse
the next call, the record format, redaction, usage from each API's own
fields) would be callbacks and config on top of LiteLLM's proxy, which also
needs a database-free mode, a master key and a price map that it tries to
fetch from the internet at import. The pass-through keeps start-up under a
tenth of a second, adds ~1 ms per call (see ``benchmarks/gateway_overhead.py``)
and has no dependency beyond what the project already carries plus
``genai-prices`` for the price table.
"""

from benchflow.gateway.budget import JobBudget, TrialBudget
from benchflow.gateway.failures import (
    api_error_info,
    api_error_message,
    suspected_api_error_info,
    suspected_api_error_message,
)
from benchflow.gateway.routes import TrialRoute
from benchflow.gateway.runner import Gateway, GatewayConfig
from benchflow.gateway.upstream import Upstream, Upstreams

__all__ = [
    "Gateway",
    "GatewayConfig",
    "JobBudget",
    "TrialBudget",
    "TrialRoute",
    "Upstream",
    "Upstreams",
    "api_error_info",
    "api_error_message",
    "suspected_api_error_info",
    "suspected_api_error_message",
]
