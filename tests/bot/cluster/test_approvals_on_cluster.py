"""test_approvals's scenarios on a Redis Cluster (see conftest.py), and a forged request id."""

from tests.bot.slack.outbound.test_approvals import (
    app,
    test_a_denied_call_does_not_run_and_the_model_hears_who_and_why,
    test_a_prompt_injected_result_cannot_make_a_write_run_unasked,
    test_a_request_nobody_decides_expires_and_the_model_is_told,
    test_a_restart_of_every_process_while_the_card_waits_changes_nothing,
    test_a_strangers_click_is_refused_and_a_second_click_changes_nothing,
    test_an_approved_call_runs_and_the_answer_continues_below_the_card,
    test_long_arguments_are_cut_on_the_card_and_shown_whole_in_a_modal,
    test_mcp_tools_need_approval_by_their_annotations_unless_the_server_says_never,
    test_one_card_for_a_round_and_each_decision_runs_only_its_call,
    test_roles_and_config_decide_who_needs_and_who_gives_approval,
    test_streaming_leaves_no_stream_open_while_the_card_waits,
)
from tests.fakes.slack_harness import SlackHarness

__all__ = [
    "app",
    "test_a_denied_call_does_not_run_and_the_model_hears_who_and_why",
    "test_a_forged_request_id_decides_nothing",
    "test_a_prompt_injected_result_cannot_make_a_write_run_unasked",
    "test_a_request_nobody_decides_expires_and_the_model_is_told",
    "test_a_restart_of_every_process_while_the_card_waits_changes_nothing",
    "test_a_strangers_click_is_refused_and_a_second_click_changes_nothing",
    "test_an_approved_call_runs_and_the_answer_continues_below_the_card",
    "test_long_arguments_are_cut_on_the_card_and_shown_whole_in_a_modal",
    "test_mcp_tools_need_approval_by_their_annotations_unless_the_server_says_never",
    "test_one_card_for_a_round_and_each_decision_runs_only_its_call",
    "test_roles_and_config_decide_who_needs_and_who_gives_approval",
    "test_streaming_leaves_no_stream_open_while_the_card_waits",
]


async def test_a_forged_request_id_decides_nothing(app: SlackHarness) -> None:
    """A click whose request id names no shard (or a shard that is not there) finds no
    request, as any unknown id does."""
    for forged in ("x/1", "99999999/ab12", "²/ab12", "0/../../turns"):
        assert await app.click("approval_approve", forged, "U0ALICE", "1.000001") == 200
    await app.after_acks()
    said = [str(c.args.get("text")) for c in app.slack.calls_to("response_url")]
    assert said == ["This approval request is no longer open."] * 4
