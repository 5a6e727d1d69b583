"""The end-to-end scenarios of a single Redis, on a Redis Cluster (see conftest.py)."""

from tests.bot.slack.inbound.test_joined_threads import (
    test_mentions_delivered_late_are_not_read_twice,
    test_replies_between_people_are_heard_and_not_answered,
)
from tests.bot.slack.test_app import (
    test_a_30000_character_answer_arrives_whole_and_split,
    test_a_direct_message,
    test_a_mention_shows_status_then_answers_in_the_thread,
    test_follow_ups_in_a_thread_the_bot_is_in,
    test_llm_down_gives_plain_words,
    test_retries_and_duplicates_give_one_answer,
    test_the_agent_pane,
    test_the_slash_command_and_the_home_tab,
    test_tools_show_as_task_cards_in_the_one_streamed_message,
)

__all__ = [
    "test_a_30000_character_answer_arrives_whole_and_split",
    "test_a_direct_message",
    "test_a_mention_shows_status_then_answers_in_the_thread",
    "test_follow_ups_in_a_thread_the_bot_is_in",
    "test_llm_down_gives_plain_words",
    "test_mentions_delivered_late_are_not_read_twice",
    "test_replies_between_people_are_heard_and_not_answered",
    "test_retries_and_duplicates_give_one_answer",
    "test_the_agent_pane",
    "test_the_slash_command_and_the_home_tab",
    "test_tools_show_as_task_cards_in_the_one_streamed_message",
]
