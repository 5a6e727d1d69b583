"""``@tool``: names, descriptions, schemas from type hints, and validation before the handler."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from tools import Tool, ToolArgumentsError, ToolDefinitionError, tool


class Unit(enum.Enum):
    KG = "kg"
    BAG = "bag"


class Address(BaseModel):
    street: str
    city: str = "Berlin"


class Order(BaseModel):
    item: str
    quantity: int = Field(gt=0)
    deliver_to: Address


@tool
async def search_materials(
    query: str,
    limit: int = 10,
    unit: Unit = Unit.KG,
    sort: Literal["name", "stock"] = "name",
    warehouse: str | None = None,
) -> list[str]:
    """Search the material catalogue.

    Finds materials by name.

    Args:
        query: Words to look for,
            across two lines.
        limit: How many results at most.
        warehouse: Only this warehouse.

    Returns:
        Matching names.
    """
    return [f"{query}:{limit}:{unit.value}:{sort}:{warehouse}"]


def test_name_description_and_schema_from_the_function() -> None:
    assert isinstance(search_materials, Tool)
    assert search_materials.name == "search_materials"
    assert (
        search_materials.description == "Search the material catalogue.\n\nFinds materials by name."
    )
    schema = search_materials.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["query"] == {
        "type": "string",
        "description": "Words to look for, across two lines.",
    }
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "How many results at most.",
    }
    assert props["unit"] == {"type": "string", "enum": ["kg", "bag"], "default": "kg"}
    assert props["sort"] == {"type": "string", "enum": ["name", "stock"], "default": "name"}
    assert props["warehouse"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["warehouse"]["description"] == "Only this warehouse."
    assert "title" not in str(schema)


def test_spec_is_a_chat_completions_tool() -> None:
    spec = search_materials.spec()
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "search_materials"
    assert spec["function"]["parameters"] is search_materials.parameters


def test_nested_models_are_inlined() -> None:
    @tool
    def place_order(
        order: Order, note: Annotated[str, Field(description="Free text.")] = ""
    ) -> str:
        """Place an order."""
        return f"{order.quantity} {order.item} to {order.deliver_to.city}"

    props = place_order.parameters["properties"]
    assert "$defs" not in place_order.parameters
    order = props["order"]
    assert order["required"] == ["item", "quantity", "deliver_to"]
    assert order["properties"]["quantity"] == {"type": "integer", "exclusiveMinimum": 0}
    assert order["properties"]["deliver_to"]["properties"]["city"]["default"] == "Berlin"
    assert props["note"]["description"] == "Free text."


class Node(BaseModel):
    name: str
    children: list[Node] = []


def test_recursive_models_keep_their_references() -> None:
    @tool
    def walk(tree: Node) -> str:
        """Walk a tree."""
        return tree.name

    params = walk.parameters
    assert "Node" in params["$defs"]
    assert "$ref" in str(params)


def test_decorator_options() -> None:
    @tool(name="stock_level", description="How much is left.", timeout=5, confirm=True)
    def level(item: str) -> int:
        """Ignored docstring."""
        return 1

    assert level.name == "stock_level"
    assert level.description == "How much is left."
    assert level.timeout_s == 5
    assert level.confirm is True
    assert level("x") == 1  # the function is still callable directly


def test_a_tool_that_asks_for_approval_is_not_run_twice_unless_its_author_says_so() -> None:
    """confirm=True implies idempotent=False: a call cut off by a crash is not run again on
    its own. The author may say otherwise; a plain tool is idempotent unless it says not."""

    def order(item: str) -> str:
        """Order an item."""
        return item

    assert tool(confirm=True)(order).idempotent is False
    assert tool(confirm=True, idempotent=True)(order).idempotent is True
    assert tool(order).idempotent is True
    assert tool(idempotent=False)(order).idempotent is False
    asks = tool(confirm=True)(order)
    assert asks.confirm_reason == "@tool(confirm=True)"
    assert tool(order).confirm_reason is None
    # A copy keeps what was decided (the approval wrapper's copy no longer says confirm).
    assert asks.replace(confirm=False).idempotent is False


async def test_arguments_are_checked_without_running_the_tool() -> None:
    runs: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    await count.check_arguments({"n": 3})
    with pytest.raises(ToolArgumentsError) as invalid:
        await count.check_arguments({"n": "three"})
    assert invalid.value.problems == [
        ("n", "Input should be a valid integer, unable to parse string as an integer")
    ]
    with pytest.raises(ToolArgumentsError):
        await count.check_arguments({"n": 1, "extra": 2})
    assert runs == []


def test_sphinx_style_parameter_docs() -> None:
    @tool
    def convert(amount: float, currency: str) -> str:
        """Convert money.

        :param amount: How much.
        :param currency: ISO code, e.g. EUR.
        :returns: the converted amount
        """
        return ""

    props = convert.parameters["properties"]
    assert props["amount"]["description"] == "How much."
    assert props["currency"]["description"] == "ISO code, e.g. EUR."
    assert convert.description == "Convert money."


async def test_sync_and_async_handlers_get_validated_values() -> None:
    assert await search_materials.invoke({"query": "flour", "unit": "bag", "limit": "3"}) == [
        "flour:3:bag:name:None"
    ]

    @tool
    def order(order: Order) -> str:
        """Order."""
        return f"{order.quantity}x{order.item}@{order.deliver_to.street}"

    value = {"item": "flour", "quantity": 2, "deliver_to": {"street": "Main St"}}
    assert await order.invoke({"order": value}) == "2xflour@Main St"


async def test_bad_arguments_never_reach_the_handler() -> None:
    seen: list[Any] = []

    @tool
    def record(count: int, mode: Literal["a", "b"]) -> None:
        """Record."""
        seen.append(count)

    with pytest.raises(ToolArgumentsError) as caught:
        await record.invoke({"count": "many", "mode": "c", "extra": 1})
    problems = dict(caught.value.problems)
    assert set(problems) == {"count", "mode", "extra"}
    assert "valid integer" in problems["count"]
    assert "'a' or 'b'" in problems["mode"]
    assert str(caught.value).startswith("Invalid arguments for record: ")

    @tool
    def nested(order: Order) -> None:
        """Nested."""
        seen.append(order)

    with pytest.raises(ToolArgumentsError, match=r"order\.deliver_to\.street: Field required"):
        await nested.invoke({"order": {"item": "x", "quantity": 1, "deliver_to": {}}})
    assert seen == []


def test_definition_errors() -> None:
    with pytest.raises(ToolDefinitionError, match="needs a description"):

        @tool
        def undocumented(x: int) -> int:
            return x

    with pytest.raises(ToolDefinitionError, match=r"\*args"):

        @tool
        def variadic(*args: int) -> int:
            """Variadic."""
            return 0

    with pytest.raises(ToolDefinitionError, match="tool name"):
        tool(name="has spaces")(lambda: None)

    with pytest.raises(ToolDefinitionError, match="timeout must be positive"):

        @tool(timeout=0)
        def instant() -> None:
            """Instant."""
