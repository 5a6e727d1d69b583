"""The fields of a question's form, typed text and checked answers (pure)."""

from __future__ import annotations

import pytest

from tools.form_fields import answer_problems, form_fields, parse_value

SCHEMA = {
    "type": "object",
    "properties": {
        "shelf": {"type": "string", "title": "Shelf", "description": "e.g. A3", "maxLength": 4},
        "count": {"type": "integer", "minimum": 1, "maximum": 100},
        "weight": {"type": "number"},
        "urgent": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["small", "large"], "enumNames": ["Small", "Large"]},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "tags": {"type": "array", "items": {"type": "string", "enum": ["new", "old"]}},
        "email": {"type": "string", "format": "email"},
        "due": {"type": "string", "format": "date"},
    },
    "required": ["shelf", "count"],
}


def test_each_kind_of_field() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert fields["shelf"].label == "Shelf" and fields["shelf"].required
    assert fields["shelf"].kind == "text" and fields["shelf"].maximum == 4
    assert fields["count"].kind == "integer" and (
        fields["count"].minimum,
        fields["count"].maximum,
    ) == (1, 100)
    assert fields["weight"].kind == "number" and not fields["weight"].required
    assert fields["urgent"].kind == "boolean" and fields["urgent"].default is False
    assert fields["size"].options == (("small", "Small"), ("large", "Large"))
    assert fields["colour"].kind == "choice" and fields["colour"].options[1] == ("g", "Green")
    assert fields["tags"].kind == "choices" and fields["tags"].options == (
        ("new", "new"),
        ("old", "old"),
    )
    assert fields["email"].format == "email" and fields["due"].format == "date"


def test_typed_values() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert parse_value(fields["count"], " 5 ") == 5
    assert parse_value(fields["weight"], "2.5") == 2.5
    assert parse_value(fields["urgent"], "yes") is True
    assert parse_value(fields["size"], "Large") == "large"
    assert parse_value(fields["colour"], "2") == "g"
    assert parse_value(fields["tags"], "new, old") == ["new", "old"]
    for field, text, problem in [
        ("count", "five", "give a number"),
        ("count", "2.5", "give a whole number"),
        ("urgent", "maybe", "answer yes or no"),
        ("size", "huge", "choose one of Small, Large"),
    ]:
        with pytest.raises(ValueError, match=problem):
            parse_value(fields[field], text)


def test_answers_are_checked_naming_the_fields() -> None:
    assert answer_problems(SCHEMA, {"shelf": "A3", "count": 5}) == []
    assert answer_problems(SCHEMA, {"shelf": "A3"}) == ["count is required"]
    problems = answer_problems(
        SCHEMA,
        {"shelf": "A3-77", "count": 0, "email": "not-an-email", "due": "tomorrow", "size": "huge"},
    )
    assert problems == [
        "Shelf: the value is too long",
        "count: the value is less than the minimum of 1",
        "size: is not one of the choices",
        "email: is not a valid email",
        "due: is not a valid date",
    ]
