"""test_roles's scenarios on a Redis Cluster (see conftest.py)."""

from tests.bot.slack.test_roles import (
    app,
    test_a_forged_call_to_a_tool_not_allowed_is_refused_and_audited,
    test_a_non_admin_is_refused_politely,
    test_a_usual_turn_asks_slack_nothing_about_roles,
    test_admin_actions_are_audited_and_roles_listed,
    test_an_admin_switch_is_seen_at_once_by_another_instance,
    test_an_owner_of_another_workspace_is_no_admin_here,
    test_channel_limits,
    test_each_source_of_roles,
    test_offered_tools_differ_by_role,
    test_the_default_role_when_slack_cannot_be_asked,
    test_the_home_tab_shows_roles_and_tools,
    test_the_union_of_roles_and_deny_winning,
    test_the_warehouse_example,
    test_typos_get_suggestions,
    test_usage_after_a_turn,
)

__all__ = [
    "app",
    "test_a_forged_call_to_a_tool_not_allowed_is_refused_and_audited",
    "test_a_non_admin_is_refused_politely",
    "test_a_usual_turn_asks_slack_nothing_about_roles",
    "test_admin_actions_are_audited_and_roles_listed",
    "test_an_admin_switch_is_seen_at_once_by_another_instance",
    "test_an_owner_of_another_workspace_is_no_admin_here",
    "test_channel_limits",
    "test_each_source_of_roles",
    "test_offered_tools_differ_by_role",
    "test_the_default_role_when_slack_cannot_be_asked",
    "test_the_home_tab_shows_roles_and_tools",
    "test_the_union_of_roles_and_deny_winning",
    "test_the_warehouse_example",
    "test_typos_get_suggestions",
    "test_usage_after_a_turn",
]
