"""Derive a tool's argument model and JSON schema from a Python function's signature."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from tools.errors import ToolDefinitionError


class ToolArguments(BaseModel):
    """Base of every generated argument model: unknown arguments are refused."""

    model_config = ConfigDict(extra="forbid")


def arguments_model(
    fn: Callable[..., Any], tool_name: str, param_docs: dict[str, str]
) -> type[ToolArguments]:
    """Build a pydantic model whose fields are ``fn``'s parameters."""
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an unresolvable forward reference, say
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot read type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {tool_name!r}: *{param.name} and **{param.name} are not supported; "
                "name every parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: parameter {param.name!r} is positional-only"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(param.name)
        if description and not _has_description(annotation):
            annotation = Annotated[annotation, Field(description=description)]
        fields[param.name] = (annotation, default)
    model_name = "".join(part.title() for part in tool_name.split("_")) + "Arguments"
    return create_model(model_name, __base__=ToolArguments, **fields)


def _has_description(annotation: Any) -> bool:
    metadata = getattr(annotation, "__metadata__", ())
    return any(isinstance(item, FieldInfo) and item.description for item in metadata)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, tidied for LLM providers.

    Titles are dropped (noise for the model) and ``$ref`` to ``$defs`` are inlined where
    that terminates, because several OpenAI-compatible servers do not resolve references.
    """
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    inlined = _inline(schema, defs, ())
    if _has_ref(inlined):
        inlined["$defs"] = {name: _inline(d, defs, (name,)) for name, d in defs.items()}
    tidied: dict[str, Any] = _drop_titles(inlined)
    return tidied


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in defs:
                return node  # recursive model: keep the reference
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return {**_inline(defs[name], defs, (*seen, name)), **extra}
        return {key: _inline(value, defs, seen) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    return node


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def _drop_titles(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, dict):
        return {
            key: _drop_titles(value, in_properties=key == "properties" and not in_properties)
            for key, value in node.items()
            if in_properties or key != "title"
        }
    if isinstance(node, list):
        return [_drop_titles(item) for item in node]
    return node
