"""How the schedule subcommands and the Home tab word schedules (pure): the prompt shortened
and made harmless, the recurrence in words, next and last runs as Slack dates, a paused
one's reason, everyone's grouped by owner, long lists within Slack's limits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.admin import schedule_words as words
from bot.schedules.recurrence import Recurrence
from bot.slack.blocks.limits import MESSAGE_TEXT_CHARS
from bot.state.schedules import Schedule

NEXT = datetime(2026, 12, 4, 8, 0, tzinfo=UTC).timestamp()  # Fri 09:00 in Berlin
LAST = datetime(2026, 12, 3, 8, 0, 5, tzinfo=UTC).timestamp()
NEXT_DATE = f"<!date^{int(NEXT)}^{{date_short_pretty}} at {{time}}|04 Dec 2026 08:00 UTC>"
LAST_DATE = f"<!date^{int(LAST)}^{{date_short_pretty}} at {{time}}|03 Dec 2026 08:00 UTC>"
WEEKDAYS = Recurrence(cron="0 9 * * 1-5", at=None, timezone="Europe/Berlin")
ONCE = Recurrence(cron=None, at=datetime(2026, 12, 4, 8, 0, tzinfo=UTC), timezone="Europe/Berlin")

OPS = Schedule(
    id="s3",
    team="T1",
    owner="UALICE",
    channel="C0OPS",
    prompt="Summarise yesterday's incidents",
    recurrence=WEEKDAYS,
    state="active",
    reason="",
    created_at=LAST - 86_400,
    next_at=NEXT,
    last_at=None,
    last_outcome="",
    missed=0,
)


def test_a_row_names_the_id_prompt_place_words_and_runs() -> None:
    assert words.schedule_row(OPS) == (
        "• `s3` — “Summarise yesterday's incidents” in <#C0OPS> — at 09:00, Monday through "
        f"Friday (Europe/Berlin) — next {NEXT_DATE} — not run yet"
    )
    ran = replace(OPS, channel="D0ALICE", last_at=LAST, last_outcome="answered", missed=2)
    assert words.schedule_row(ran).endswith(
        f"” in a direct message — at 09:00, Monday through Friday (Europe/Berlin) — next "
        f"{NEXT_DATE} — last {LAST_DATE} (answered), 2 runs missed since"
    )
    assert words.last_words(replace(OPS, last_at=LAST)) == f"last {LAST_DATE}"
    assert words.last_words(replace(OPS, missed=1)) == "not run yet, 1 run missed since"


def test_the_prompt_is_one_line_shortened_and_harmless() -> None:
    long = "Summarise\n\n  the incidents " + "of the night " * 10
    shown = words.prompt_words(long)
    assert shown.startswith("“Summarise the incidents of the night") and shown.endswith("…”")
    assert len(shown) == words.PROMPT_SHOWN + 2
    sneaky = "Ping <!channel> and <@U0BOSS>, see <https://evil.example|docs> \u202etxt.exe"
    assert words.prompt_words(sneaky) == (
        "“Ping &lt;!channel&gt; and &lt;@U0BOSS&gt;, see &lt;https://evil.example|docs&gt; "
        "[U+202E]txt.exe”"
    )


def test_each_state_in_words() -> None:
    assert words.state_words(OPS) == f"next {NEXT_DATE}"
    paused = replace(OPS, state="paused", next_at=None)
    assert words.state_words(replace(paused, reason="owner left the workspace")) == (
        "*paused*: owner left the workspace"
    )
    assert words.state_words(replace(paused, reason="paused by <@UADMIN>")) == (
        "*paused* by <@UADMIN>"
    )
    assert words.state_words(paused) == "*paused*"
    assert words.state_words(replace(OPS, state="ended", next_at=None)) == "ended"
    assert words.state_words(replace(OPS, next_at=None)) == "no run ahead"
    once = replace(OPS, recurrence=ONCE)
    assert "— once, on 2026-12-04 at 09:00 (Europe/Berlin) —" in words.schedule_row(once)


def test_ones_own_list_and_everyones_grouped_by_owner() -> None:
    assert words.own_list([], "/agent").startswith("You have no schedules. Ask me in a message")
    bob = replace(OPS, id="s4", owner="UBOB", prompt="Check the release")
    later = replace(OPS, id="s5", prompt="Weekly report")
    own = words.own_list([OPS, later], "/agent").splitlines()
    assert own[0] == (
        "*Your schedules* (2 schedules; `/agent pause <id>`, `/agent resume <id>`, "
        "`/agent unschedule <id>`):"
    )
    assert [row.split(" — ")[0] for row in own[1:]] == ["• `s3`", "• `s5`"]
    every = words.everyone_list([OPS, bob, later]).splitlines()
    assert every[0] == "*Everyone's schedules* (3 schedules):"
    assert [row.split(" — ")[0] for row in every[1:]] == [
        "*<@UALICE>* (2):",
        "• `s3`",
        "• `s5`",
        "*<@UBOB>* (1):",
        "• `s4`",
    ]
    assert words.everyone_list([]) == "Nobody has a schedule."


def test_long_lists_stay_within_slacks_limits() -> None:
    many = [replace(OPS, id=f"s{n}", prompt="x" * 500) for n in range(1, 201)]
    for shown in (words.own_list(many, "/agent"), words.everyone_list(many)):
        assert len(shown) <= MESSAGE_TEXT_CHARS
        assert shown.splitlines()[-1].startswith("…and ") and "more" in shown


def test_the_home_tab_rows() -> None:
    paused = replace(OPS, id="s7", state="paused", reason="paused by <@UALICE>", next_at=None)
    assert words.home_rows([OPS, paused]) == [
        "• `s3` — “Summarise yesterday's incidents” — at 09:00, Monday through Friday "
        f"(Europe/Berlin) — next {NEXT_DATE}",
        "• `s7` — “Summarise yesterday's incidents” — at 09:00, Monday through Friday "
        "(Europe/Berlin) — *paused* by <@UALICE>",
    ]


def test_an_id_as_typed() -> None:
    assert [words.schedule_id(w) for w in ("s3", "`S3`", "3", " s12 ")] == [
        "s3",
        "s3",
        "s3",
        "s12",
    ]
    assert words.unknown("<!here>", "/agent") == (
        "There is no schedule `&lt;!here&gt;`. `/agent schedules` lists yours."
    )


def test_what_a_change_says() -> None:
    paused = replace(OPS, state="paused", reason="paused by <@UADMIN>", next_at=None)
    assert words.paused(paused, "/agent") == (
        "Paused schedule `s3` “Summarise yesterday's incidents”: it does not run until "
        "`/agent resume s3`."
    )
    assert words.already_paused(paused) == "Schedule `s3` is already *paused* by <@UADMIN>."
    assert words.resumed(OPS) == f"Resumed schedule `s3`: next {NEXT_DATE}."
    assert words.not_paused(OPS) == f"Schedule `s3` is not paused: next {NEXT_DATE}."
    assert words.passed(replace(paused, recurrence=ONCE), "/agent") == (
        "Schedule `s3` was to run once, on 2026-12-04 at 09:00 (Europe/Berlin), which has "
        "passed: it cannot resume. `/agent unschedule s3` removes it."
    )
    assert words.removed(OPS) == (
        "Removed schedule `s3` “Summarise yesterday's incidents”: it will not run again."
    )
    assert words.not_theirs(OPS, "pause") == (
        "Sorry, only <@UALICE>, who made schedule `s3`, or an admin can pause it."
    )
