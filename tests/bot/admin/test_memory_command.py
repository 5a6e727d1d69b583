"""``/agent memory`` and ``/agent forget`` on the real Redis: the notes where the command is
typed (a channel's, in a DM the person's own), newest first with their ids; a note forgotten
by its author or an admin (others refused and audited); a channel's memory emptied by admins
only, one's own DM memory by oneself; the list within Slack's limits."""

from __future__ import annotations

from bot.admin.context import Caller
from bot.process.state import State
from bot.slack.blocks.limits import MESSAGE_TEXT_CHARS
from bot.state.audit import AuditKind
from bot.state.channel_memory import Saved, memory_scope
from tests.bot.admin.channels_kit import ADMIN, ALICE, BOB, admin_commands, audited

ALICE_DM = Caller("T1", "UALICE", "D0ALICE", "T1")


async def remember(state: State, scope: str, text: str, by: str, channel: str) -> str:
    saved = await state.shared.memory.add("T1", scope, text, by, channel, key=f"k-{text}")
    assert isinstance(saved, Saved)
    return saved.note.id


async def test_memory_lists_the_channels_notes_newest_first(state: State) -> None:
    admin = admin_commands(state)
    assert (await admin.run(ALICE, "memory")).text == "Nothing is saved in this channel's memory."
    await remember(state, "C0SUPPORT", "The runbook is at go/runbook.", "UALICE", "C0SUPPORT")
    await remember(state, "C0SUPPORT", "Escalate  refunds\nto Bob.", "UBOB", "C0SUPPORT")
    await remember(state, "C0OTHER", "Not here.", "UBOB", "C0OTHER")

    lines = (await admin.run(ALICE, "memory")).text.splitlines()

    assert lines[0] == (
        "*This channel's memory* (2 notes, newest first; `/agent forget <id>` removes one):"
    )
    assert lines[1].startswith("• `n2` — “Escalate refunds to Bob.” — <@UBOB>, 20")
    assert lines[2].startswith("• `n1` — “The runbook is at go/runbook.” — <@UALICE>, 20")
    assert len(lines) == 3
    assert (await admin.run(ALICE, "memory all")).text == "`/agent memory` takes no arguments."


async def test_in_a_dm_the_memory_is_the_persons_own(state: State) -> None:
    admin = admin_commands(state)
    await remember(state, memory_scope("D0ALICE", "UALICE"), "I prefer metric.", "UALICE", "D0")
    await remember(state, "C0SUPPORT", "A channel note.", "UALICE", "C0SUPPORT")
    shown = (await admin.run(ALICE_DM, "memory")).text
    assert shown.startswith("*Your memory* (1 note, newest first;")
    assert "I prefer metric." in shown and "A channel note." not in shown
    bob_dm = Caller("T1", "UBOB", "D0BOB", "T1")
    assert (await admin.run(bob_dm, "memory")).text == "Nothing is saved in your memory."


async def test_forget_by_the_author_or_an_admin_and_others_are_refused(state: State) -> None:
    admin = admin_commands(state)
    first = await remember(state, "C0SUPPORT", "Alice's note.", "UALICE", "C0SUPPORT")
    second = await remember(state, "C0SUPPORT", "Another of Alice's.", "UALICE", "C0SUPPORT")

    refused = await admin.run(BOB, f"forget {first}")
    assert refused.text == "Sorry, only <@UALICE>, who saved note `n1`, or an admin can forget it."
    assert [n.id for n in await state.shared.memory.notes("C0SUPPORT")] == [second, first]
    [entry] = await audited(state, AuditKind.ADMIN)
    assert (entry.actor, entry.action, entry.target, entry.outcome) == (
        "UBOB",
        "forget",
        "n1",
        "refused",
    )

    assert (await admin.run(ALICE, f"forget {first}")).text == "Forgot note `n1`: “Alice's note.”"
    assert (await admin.run(ADMIN, f"forget `{second}`")).text == (
        "Forgot note `n2`: “Another of Alice's.”"
    )
    assert await state.shared.memory.notes("C0SUPPORT") == []
    forgotten = await audited(state, AuditKind.MEMORY)
    assert [(e.action, e.actor) for e in forgotten if e.action == "forgotten"] == [
        ("forgotten", "UALICE"),
        ("forgotten", "UADMIN"),
    ]
    assert (await admin.run(ALICE, "forget n1")).text == (
        "There is no note `n1` here. `/agent memory` lists them."
    )
    assert (await admin.run(ALICE, "forget")).text == (
        "Usage: `/agent forget <id>` or `/agent forget all`"
    )


async def test_forget_all_empties_a_channel_for_admins_and_a_dm_for_its_person(
    state: State,
) -> None:
    admin = admin_commands(state)
    await remember(state, "C0SUPPORT", "One.", "UALICE", "C0SUPPORT")
    await remember(state, "C0SUPPORT", "Two.", "UBOB", "C0SUPPORT")
    own = memory_scope("D0ALICE", "UALICE")
    await remember(state, own, "Mine.", "UALICE", "D0ALICE")

    assert (await admin.run(ALICE, "forget all")).text == (
        "Sorry, only admins can empty this channel's memory."
    )
    assert len(await state.shared.memory.notes("C0SUPPORT")) == 2
    assert (await admin.run(ADMIN, "forget all")).text == (
        "Emptied this channel's memory: 2 notes forgotten."
    )
    assert await state.shared.memory.notes("C0SUPPORT") == []
    assert (await admin.run(ADMIN, "forget all")).text == "This channel's memory was already empty."

    assert (await admin.run(ALICE_DM, "forget all")).text == (
        "Emptied your memory: 1 note forgotten."
    )
    assert await state.shared.memory.notes(own) == []
    cleared = [e for e in await audited(state, AuditKind.MEMORY) if e.action == "cleared"]
    assert [(e.actor, e.target) for e in cleared] == [("UADMIN", "C0SUPPORT"), ("UALICE", own)]
    [refusal] = await audited(state, AuditKind.ADMIN)
    assert (refusal.actor, refusal.target, refusal.outcome) == ("UALICE", "all", "refused")


async def test_a_full_memory_is_listed_within_slacks_limits(state: State) -> None:
    admin = admin_commands(state)
    for n in range(50):
        await remember(state, "C0SUPPORT", f"{n:02d} " + "x" * 490, "UALICE", "C0SUPPORT")
    shown = (await admin.run(ALICE, "memory")).text
    assert len(shown) <= MESSAGE_TEXT_CHARS
    assert shown.splitlines()[1].startswith("• `n50` — “49 xxx")
    assert shown.splitlines()[-1].startswith("…and ") and shown.endswith(" more")
