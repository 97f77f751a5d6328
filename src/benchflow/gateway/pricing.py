"""Cost of a call from a maintained price table (the ``genai-prices`` package).

Why that package: it is kept up to date by its maintainers (Pydantic), ships
its table inside the wheel (no network at run time; we never call its
auto-update), knows provider-specific prices (cache reads and writes, tiers,
OpenRouter's catalogue) and costs ~0.25 s and a few MB to load, once per job.

A model the table does not know is *unpriced*: cost ``None``, never a guess.
Providers marked ``price_provider = ""`` in ``providers.toml`` (local vLLM,
Ollama) are never priced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from benchflow.gateway.usage import CallUsage


@dataclass(frozen=True)
class Price:
    """What one call cost; ``cost_usd`` is None when the model is not in the table."""

    cost_usd: float | None
    price_source: str | None
    priced_model: str | None = None


@cache
def price_source() -> str:
    """Names the table and its version, e.g. ``genai-prices 0.2.3``."""
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


def warm() -> None:
    """Load the table now (it takes ~0.25 s) so the first priced call does not wait."""
    price_call("gpt-4o", CallUsage(input_tokens=1), "openai")


def _candidates(model: str) -> list[str]:
    names = [model]
    if model.startswith("models/"):
        names.append(model[len("models/"):])
    return names


def price_call(model: str | None, usage: CallUsage, price_provider: str) -> Price:
    """Price ``usage`` of ``model`` at ``price_provider``'s list price."""
    if not model or not price_provider:
        return Price(None, None)
    from genai_prices import Usage, calc_price

    billed = Usage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_creation_tokens,
        output_tokens=usage.output_tokens,
    )
    for name in _candidates(model):
        try:
            calculation = calc_price(billed, name, provider_id=price_provider)
        except LookupError:
            continue
        except Exception:  # noqa: BLE001 - a table the package cannot apply is "no price", never a failed call
            return Price(None, None)
        return Price(float(calculation.total_price), price_source(), calculation.model.id)
    return Price(None, None)
