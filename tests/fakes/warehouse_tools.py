"""The warehouse example's tools, for the roles tests. Each run is noted in RUNS."""

from __future__ import annotations

from tools import tool

RUNS: list[str] = []


@tool
def search_materials(query: str) -> list[dict[str, object]]:
    """Search the material catalogue by name.

    Args:
        query: Words to look for.
    """
    RUNS.append("search_materials")
    return [{"name": f"{query} type 550", "stock": 12, "unit": "bag"}]


@tool
def get_inventory_stats() -> dict[str, int]:
    """Totals across the warehouse."""
    RUNS.append("get_inventory_stats")
    return {"items": 1200, "low_stock": 3}


@tool
def search_payroll(name: str) -> str:
    """Look up someone's pay (restricted)."""
    RUNS.append("search_payroll")
    return "confidential"


@tool
def create_new_intent(item: str, quantity: int) -> str:
    """Create a purchase intent for an item.

    Args:
        item: What to buy.
        quantity: How many units.
    """
    RUNS.append("create_new_intent")
    return f"intent created: {quantity} x {item}"
