"""The turn as it travels the queue: typed fields, and the wire format of earlier versions
read and written unchanged (a rolling deploy mixes replicas of both)."""

from __future__ import annotations

import json

from bot.turn.message import FileRef, SlackMessage
from bot.turn.model import Turn, TurnKind

# A queue entry as the version that carried `extra` wrote it.
EARLIER = (
    '{"team":"T1","channel":"C1","thread_ts":"1.1","user":"U1","text":"hi",'
    '"message_ts":"1.2","event_id":"Ev1","kind":"assistant","received_at":1700000000.5,'
    '"extra":{"message":{"ts":"1.2","user":"U1","text":"hi <@U0BOT>","user_team":"T9",'
    '"files":[{"id":"F1","name":"a.txt","size":3}]},"new_thread":true},'
    '"traceparent":"00-abc-def-01"}'
)


def test_an_entry_of_the_earlier_format_is_read_typed() -> None:
    turn = Turn.from_json(EARLIER)
    assert turn.kind is TurnKind.ASSISTANT and turn.new_thread
    assert turn.message == SlackMessage(
        ts="1.2",
        user="U1",
        text="hi <@U0BOT>",
        user_team="T9",
        files=(FileRef(id="F1", name="a.txt", size=3),),
    )
    assert turn.author_team == "T9" and turn.traceparent == "00-abc-def-01"
    assert json.loads(turn.to_json()) == json.loads(EARLIER)  # written back the same


def test_an_entry_without_a_message_or_with_an_unknown_kind_still_loads() -> None:
    bare = {"team": "T1", "channel": "C1", "thread_ts": "1.1", "user": "U1", "text": "hi"}
    turn = Turn.from_json(json.dumps({**bare, "kind": "carrier-pigeon", "extra": {}}))
    assert turn.kind is TurnKind.MENTION and turn.message is None and not turn.new_thread
    assert turn.author_team == ""  # not named: never taken as the bot's workspace
    odd = Turn.from_json(json.dumps({**bare, "extra": {"message": {"files": "not a list"}}}))
    assert odd.message is None  # answered from its text
    assert odd.text == "hi"


def test_only_channel_kinds_have_several_speakers() -> None:
    assert {kind for kind in TurnKind if kind.in_channel} == {TurnKind.MENTION, TurnKind.FOLLOWUP}


def test_the_channels_external_flag_travels_in_extra_and_is_none_when_not_said() -> None:
    assert Turn.from_json(EARLIER).shared is None  # queued before the flag was carried
    base = Turn("T1", "C1", "1.1", "U1", "hi", received_at=1.0)
    assert "shared" not in json.loads(base.to_json())["extra"]
    for said in (True, False):
        turn = Turn.from_json(Turn("T1", "C1", "1.1", "U1", "hi", shared=said).to_json())
        assert turn.shared is said
    odd = json.loads(base.to_json())
    odd["extra"]["shared"] = "yes"
    assert Turn.from_json(json.dumps(odd)).shared is None  # not a boolean: not said


def test_a_scheduled_runs_author_is_of_the_bots_workspace() -> None:
    """Only a person of the workspace makes a schedule (bot/schedules/tool.py); its run
    carries no Slack message to name their workspace, and travels the queue as it is."""
    run = Turn("T1", "C1", "1.1", "U1", "Ask.", "1.1", "schedule:s1:1", TurnKind.SCHEDULED)
    assert run.author_team == "T1"
    again = Turn.from_json(run.to_json())
    assert again.kind is TurnKind.SCHEDULED and again.author_team == "T1"
