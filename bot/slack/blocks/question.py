"""Block Kit for a question an MCP server asks the person in the thread, and reading the
answer from a click (pure).

A question with fields is a form in the message (text, number, date, yes/no, select
inputs) with Submit and Decline buttons; one without fields is an Accept / Decline choice;
a URL question has an Open button (which accepts; an https page only, its host in plain
text beside it) and Decline. Each button carries the question's id; the inputs' values come
with the click (``state.values``). The server's words are escaped and ``verbatim``: Slack
makes no link of an address in them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.slack.blocks.escape import escaped
from bot.slack.blocks.limits import (
    INPUT_LABEL_CHARS,
    MAX_OPTIONS,
    OPTION_TEXT_CHARS,
    OPTION_VALUE_CHARS,
    SECTION_TEXT_CHARS,
)
from bot.slack.blocks.messages import Blocks
from tools.form_fields import FormField, form_fields
from tools.questions import page_host

SUBMIT_ACTION = "elicit_submit"
ACCEPT_ACTION = "elicit_accept"
DECLINE_ACTION = "elicit_decline"
ACTIONS = (SUBMIT_ACTION, ACCEPT_ACTION, DECLINE_ACTION)
BLOCK_PREFIX = "elicit:"
VALUE_ACTION = "value"


def question_text(asker: str, message: str) -> str:
    """The question as Slack text: the server's words escaped, so they can neither mention
    anyone (``<!channel>``) nor link anywhere (shown ``verbatim``: no address becomes one)."""
    return escaped(f"{asker[:1].upper()}{asker[1:]} asks: {message}"[:SECTION_TEXT_CHARS])


def question_blocks(
    question_id: str,
    asker: str,
    message: str,
    schema: dict[str, Any],
    url: str | None,
    user: str,
    timeout_s: float,
) -> Blocks:
    """The message asking the question, for ``user`` to answer within ``timeout_s``."""
    blocks: Blocks = [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": f":question: {question_text(asker, message)}",
                "verbatim": True,  # an address in the server's words is no link
            },
        },
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": f"For <@{user}> · declined after {_minutes(timeout_s)}"}
            ],
        },
    ]
    fields = [] if url else form_fields(schema)
    blocks += [_input(field) for field in fields]
    buttons = [_button("Decline", DECLINE_ACTION, question_id)]
    host = page_host(url) if url else None
    if url:
        # Only an https page is a link, with its host beside it in plain text (the asker
        # declines any other before it gets here; this never shows one either way).
        where = f"The page is on {host}" if host else "The page is not an https address."
        blocks.append({"type": "context", "elements": [_plain(where)]})
        if host:
            opened = _button("Open the page", ACCEPT_ACTION, question_id, "primary")
            buttons.insert(0, {**opened, "url": url})
    elif fields:
        buttons.insert(0, _button("Submit", SUBMIT_ACTION, question_id, "primary"))
    else:
        buttons.insert(0, _button("Accept", ACCEPT_ACTION, question_id, "primary"))
    blocks.append({"type": "actions", "block_id": "elicit:actions", "elements": buttons})
    return blocks


def closed_blocks(text: str, outcome: str) -> Blocks:
    """The question (``question_text``) once it is over: what was asked and how it ended,
    never the values given."""
    return [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f":question: {text}", "verbatim": True},
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": outcome}]},
    ]


def submitted_values(schema: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """The form's values from a click's ``state.values``, typed by the schema; empty fields
    are left out."""
    values = state.get("values") or {}
    content: dict[str, Any] = {}
    for field in form_fields(schema):
        element = (values.get(BLOCK_PREFIX + field.name) or {}).get(VALUE_ACTION) or {}
        value = _element_value(field, element)
        if value is not None:
            content[field.name] = value
    return content


def _input(field: FormField) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": BLOCK_PREFIX + field.name,
        "optional": not field.required,
        "label": {"type": "plain_text", "text": field.label[:INPUT_LABEL_CHARS] or field.name},
        "element": {**_element(field), "action_id": VALUE_ACTION},
    }
    if field.description:
        block["hint"] = {"type": "plain_text", "text": field.description[:INPUT_LABEL_CHARS]}
    return block


def _element(field: FormField) -> dict[str, Any]:
    default = field.default
    if field.kind in ("number", "integer"):
        element: dict[str, Any] = {
            "type": "number_input",
            "is_decimal_allowed": field.kind == "number",
        }
        if field.minimum is not None:
            element["min_value"] = _number(field.minimum)
        if field.maximum is not None:
            element["max_value"] = _number(field.maximum)
        if isinstance(default, int | float) and not isinstance(default, bool):
            element["initial_value"] = _number(float(default))
        return element
    if field.kind == "boolean":
        yes, no = _option("true", "Yes"), _option("false", "No")
        element = {"type": "radio_buttons", "options": [yes, no]}
        if isinstance(default, bool):
            element["initial_option"] = yes if default else no
        return element
    if field.kind in ("choice", "choices"):
        options = [_option(value, label) for value, label in field.options[:MAX_OPTIONS]]
        multi = field.kind == "choices"
        element = {
            "type": "multi_static_select" if multi else "static_select",
            "options": options,
        }
        chosen = [o for o in options if o["value"] in _as_list(default)]
        if chosen:
            element["initial_options" if multi else "initial_option"] = (
                chosen if multi else chosen[0]
            )
        return element
    if field.format == "date":
        element = {"type": "datepicker"}
        if isinstance(default, str) and default:
            element["initial_date"] = default[:10]
        return element
    if field.format == "date-time":
        return {"type": "datetimepicker"}
    kind = {"email": "email_text_input", "uri": "url_text_input"}.get(
        field.format or "", "plain_text_input"
    )
    element = {"type": kind}
    if isinstance(default, str) and default:
        element["initial_value"] = default
    if kind == "plain_text_input" and field.maximum is not None and field.maximum > 200:
        element["multiline"] = True
    return element


def _element_value(field: FormField, element: dict[str, Any]) -> Any:
    kind = element.get("type")
    if kind in ("plain_text_input", "email_text_input", "url_text_input"):
        return element.get("value") or None
    if kind == "number_input":
        raw = element.get("value")
        if raw in (None, ""):
            return None
        number = float(raw)
        return int(number) if field.kind == "integer" and number.is_integer() else number
    if kind == "datepicker":
        return element.get("selected_date") or None
    if kind == "datetimepicker":
        stamp = element.get("selected_date_time")
        return datetime.fromtimestamp(int(stamp), UTC).isoformat() if stamp else None
    if kind == "radio_buttons":
        chosen = (element.get("selected_option") or {}).get("value")
        return None if chosen is None else chosen == "true"
    if kind == "static_select":
        return (element.get("selected_option") or {}).get("value")
    if kind == "multi_static_select":
        return [o["value"] for o in element.get("selected_options") or ()] or None
    return None


def _button(text: str, action: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": text},
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def _plain(text: str) -> dict[str, Any]:
    """Text Slack shows as it is: no formatting, no links."""
    return {"type": "plain_text", "text": text[:SECTION_TEXT_CHARS], "emoji": False}


def _option(value: str, label: str) -> dict[str, Any]:
    return {
        "text": {"type": "plain_text", "text": label[:OPTION_TEXT_CHARS]},
        "value": value[:OPTION_VALUE_CHARS],
    }


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [] if value is None else [str(value)]


def _minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
