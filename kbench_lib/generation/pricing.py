"""Cost estimates: list prices in USD per million tokens (input, output), where kbench knows one.

Prices change; these are the providers' published list prices when they were written down, for a
rough budget, not an invoice. ``prices`` arguments (and ``GenerationOptions.prices``) add to or
override them. A model is matched by its exact name, else by the longest known name it starts with
(``gpt-4o-2024-08-06`` is priced as ``gpt-4o``); reasoning tokens are billed as output tokens and
are already counted in the completion tokens.
"""
from __future__ import annotations

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "o1": (15.00, 60.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "deepseek-chat": (0.27, 1.10),
    "deepseek-reasoner": (0.55, 2.19),
}


def price_for(model: str, prices: dict | None = None) -> tuple[float, float] | None:
    table = {**PRICES, **(prices or {})}
    if model in table:
        return tuple(table[model])
    known = [name for name in table if model.startswith(name)]
    return tuple(table[max(known, key=len)]) if known else None


def cost_usd(model: str, prompt_tokens: int | None, completion_tokens: int | None, prices: dict | None = None) -> float | None:
    price = price_for(model, prices)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
