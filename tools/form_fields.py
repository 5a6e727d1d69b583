"""The fields of a question's form (MCP's flat elicitation schema), for any surface (pure).

A field is text (with an optional format: email, uri, date, date-time), a number, an
integer, a yes/no, one choice or several choices. Surfaces build their inputs from
:func:`form_fields`, read typed text with :func:`parse_value` and check a whole answer
with :func:`answer_problems` before it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import jsonschema

Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]


@dataclass(frozen=True)
class FormField:
    name: str
    label: str
    kind: Kind
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()  # (value, label) for choices
    format: str | None = None  # for text: email, uri, date, date-time
    minimum: float | None = None
    maximum: float | None = None


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, dict):
            continue
        kind, options = _kind_and_options(spec)
        minimum = spec.get("minimum", spec.get("minLength"))
        maximum = spec.get("maximum", spec.get("maxLength"))
        fields.append(
            FormField(
                name=str(name),
                label=str(spec.get("title") or name),
                kind=kind,
                description=str(spec.get("description") or ""),
                required=name in required,
                default=spec.get("default"),
                options=options,
                format=spec.get("format") if kind == "text" else None,
                minimum=float(minimum) if isinstance(minimum, int | float) else None,
                maximum=float(maximum) if isinstance(maximum, int | float) else None,
            )
        )
    return fields


def parse_value(field: FormField, text: str) -> Any:
    """The value typed for ``field``; raises ValueError with plain words."""
    text = text.strip()
    if field.kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1", "on"):
            return True
        if text.lower() in ("n", "no", "false", "0", "off"):
            return False
        raise ValueError("answer yes or no")
    if field.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise ValueError("give a number") from None
        if field.kind == "integer":
            if not number.is_integer():
                raise ValueError("give a whole number")
            return int(number)
        return number
    if field.kind == "choice":
        return _option(field, text)
    if field.kind == "choices":
        return [_option(field, part) for part in text.split(",") if part.strip()]
    return text


def answer_problems(schema: dict[str, Any], content: dict[str, Any]) -> list[str]:
    """What is wrong with ``content`` for ``schema``, in words naming the fields."""
    labels = {f.name: f.label for f in form_fields(schema)}
    problems = [
        f"{labels.get(name, name)} is required"
        for name in schema.get("required") or ()
        if content.get(name) in (None, "", [])
    ]
    try:
        validator_type = jsonschema.validators.validator_for(schema)
        validator = validator_type(schema, format_checker=validator_type.FORMAT_CHECKER)
        errors = list(validator.iter_errors(content))
    except jsonschema.SchemaError:
        errors = []
    for error in errors:
        if error.validator == "required":
            continue  # said above
        where = ".".join(str(p) for p in error.absolute_path)
        field = labels.get(where.split(".")[0], where) if where else "the answer"
        problems.append(f"{field}: {_plain(error)}")
    for name, value in content.items():
        spec = (schema.get("properties") or {}).get(name) or {}
        if spec.get("format") in ("date", "date-time") and isinstance(value, str) and value:
            try:
                (date if spec["format"] == "date" else datetime).fromisoformat(value)
            except ValueError:
                problems.append(f"{labels.get(name, name)}: is not a valid {spec['format']}")
    return list(dict.fromkeys(problems))


def _kind_and_options(spec: dict[str, Any]) -> tuple[Kind, tuple[tuple[str, str], ...]]:
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items") or {}
        return "choices", _options(items)
    if kind == "boolean":
        return "boolean", ()
    if kind in ("number", "integer"):
        return kind, ()
    options = _options(spec)
    return ("choice", options) if options else ("text", ())


def _options(spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames") or []
        return tuple(
            (str(value), str(names[i]) if i < len(names) else str(value))
            for i, value in enumerate(spec["enum"])
        )
    titled = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(titled, list):
        return tuple(
            (str(item["const"]), str(item.get("title") or item["const"]))
            for item in titled
            if isinstance(item, dict) and "const" in item
        )
    return ()


def _option(field: FormField, text: str) -> str:
    wanted = text.strip()
    for value, label in field.options:
        if wanted in (value, label) or wanted.lower() in (value.lower(), label.lower()):
            return value
    if wanted.isdigit() and 1 <= int(wanted) <= len(field.options):
        return field.options[int(wanted) - 1][0]
    raise ValueError("choose one of " + ", ".join(label for _, label in field.options))


def _plain(error: jsonschema.ValidationError) -> str:
    if error.validator == "enum":
        return "is not one of the choices"
    if error.validator in ("minimum", "maximum", "minLength", "maxLength"):
        return str(error.message).replace(repr(error.instance), "the value")
    if error.validator == "type":
        return f"should be {error.validator_value}"
    if error.validator == "format":
        return f"is not a valid {error.validator_value}"
    return str(error.message)
