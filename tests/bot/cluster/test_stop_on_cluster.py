"""test_stop's scenarios on a Redis Cluster (see conftest.py)."""

from tests.bot.slack.outbound.test_stop import (
    test_a_stop_for_an_earlier_turn_does_not_stop_the_next,
    test_a_stream_the_person_stopped_stops_the_turn,
    test_an_admin_may_stop_anyones_turn,
    test_an_owner_of_another_workspace_may_not_stop_others,
    test_only_the_asker_or_an_admin_may_stop,
    test_slacks_own_stop_cancels_the_turn_and_leaves_the_stream_alone,
    test_the_asker_stops_a_long_tool,
    test_while_streaming_without_sessions_the_button_has_its_own_message,
)

__all__ = [
    "test_a_stop_for_an_earlier_turn_does_not_stop_the_next",
    "test_a_stream_the_person_stopped_stops_the_turn",
    "test_an_admin_may_stop_anyones_turn",
    "test_an_owner_of_another_workspace_may_not_stop_others",
    "test_only_the_asker_or_an_admin_may_stop",
    "test_slacks_own_stop_cancels_the_turn_and_leaves_the_stream_alone",
    "test_the_asker_stops_a_long_tool",
    "test_while_streaming_without_sessions_the_button_has_its_own_message",
]
