"""The trading example's tools, for the approval tests: prices are read freely, orders need a
person's approval. Each run is noted in RUNS."""

from __future__ import annotations

from tools import tool

RUNS: list[str] = []


@tool
def get_price(symbol: str) -> str:
    """The last price of a stock."""
    RUNS.append(f"get_price {symbol}")
    return f"{symbol}: 101.5"


@tool(confirm=True, idempotent=False)
def place_order(symbol: str, quantity: int) -> str:
    """Buy shares (needs a person's approval)."""
    RUNS.append(f"place_order {symbol} {quantity}")
    return f"bought {quantity} {symbol}"


@tool(confirm=True, idempotent=False)
def cancel_orders(symbol: str) -> str:
    """Cancel every open order of a stock (needs a person's approval)."""
    RUNS.append(f"cancel_orders {symbol}")
    return f"cancelled {symbol}"
