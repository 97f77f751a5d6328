"""The model gateway: every model call of an agent goes through here.

The run engine starts one :class:`Gateway` per job and registers each trial,
which gets a per-trial key and the provider variables its agent already reads
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GEMINI_API_KEY`` …) pointing at
the gateway. The gateway checks the key, swaps in the real provider key (which
never enters a sandbox or the job folder), forwards OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages and Gemini calls, streamed or not (and
the token counts and model lists around them; any other provider API is
refused with 403, see ``policy``), and per
trial records ``trajectory/llm_trajectory.jsonl`` (redacted), counts tokens
from the provider's own ``usage``, prices them from a maintained table, and
refuses the next call once the trial's token or turn budget is spent.

Modules: ``upstream`` (providers from the standard variables, table in
``providers.toml``), ``upstream_client`` (pooled HTTP/1.1 to providers),
``server`` (the Starlette proxy), ``policy`` (which requests and headers are
forwarded), ``usage`` and ``streams`` (usage per API;
SSE reassembly), ``pricing`` (genai-prices), ``budget``, ``recorder`` (the
jsonl writer), ``routes`` (a trial's key, URLs, counters), ``failures``
(api_error / suspected_api_error blocks), ``runner`` (start/stop).

Why a lean pass-through on Starlette + h11, not LiteLLM
-------------------------------------------------------
Measured on this project's machine (2 shared cores, Python 3.11), LiteLLM
1.110.2 in a throwaway venv against our own stack:

============================  ==========================  ============================
                              LiteLLM                     this gateway
============================  ==========================  ============================
installed size / packages     381 MB / 64 packages;       nothing new but genai-prices
                              ``[proxy]`` extra: 756 MB   (1.6 MB table); h11 comes
                              / 120 packages              with uvicorn; .venv: 84 MB
``import`` time               2.9 s (4.1 s plus retries   0.2 s; the price table loads
                              when its remote price map   in the background (0.25 s)
                              is unreachable); proxy 6 s  after ``start()`` returns
start-up                      a proxy process + config    under 20 ms, in-process
memory                        192 MB after import,        37 MB with 32 trials
                              316 MB for the proxy        registered, 54 MB after 4,000
                                                          calls from 32 trials
============================  ==========================  ============================

Provider coverage is where LiteLLM shines (100+ providers, with request
*translation*), but the agents we run already speak one of the three wire
APIs and read the standard variables, so the gateway has nothing to
translate: it forwards bytes. What it must own anyway (per-trial keys, budgets
that refuse the next call, the record format, redaction, usage from each API's
own fields) would be callbacks and config around LiteLLM's proxy, which also
wants a master key and fetches its price map from the internet at import.

Added latency (``benchmarks/gateway_overhead.py``, same machine, load ~1):
median +1.3 ms per non-streamed call and +1.7 ms to the first byte of a
streamed one at concurrency 1 (target: 2 ms). The gateway's own CPU is
~1.5 ms per call (2.2 ms streamed), so at 32 concurrent calls on 2 cores
shared with the client and the fake upstream the calls queue behind it:
+20 ms / +13 ms median there. Most of that CPU is HTTP machinery, which is
why the provider side uses a small h11 client (``upstream_client``) rather
than httpx: httpx cost ~1.1 ms more CPU per call.
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
