"""A worker process's scheduler (issue 34): the loop that fires people's schedules
(bot/schedules/scheduler.py), with what firing needs in Slack (the run's headline, whether
its owner is still in the workspace) and the turn queue its runs join. Every worker process
runs one beside its worker (``WorkerLoop``), holding its claims under the worker's consumer
name."""

from __future__ import annotations

from functools import partial

from bot.process.services import Services
from bot.process.slack import SlackSide
from bot.schedules.firing import firing_with
from bot.schedules.scheduler import Scheduler


def slack_scheduler(services: Services, slack: SlackSide, holder: str) -> Scheduler:
    """The scheduler of a process whose worker is ``holder``: a run's turn is queued as a
    mention is (the bot joins the run's thread, so people can reply there without one)."""
    state = services.state
    threads = state.threads
    enqueue = partial(threads.queue.enqueue, join_ttl_s=threads.participation.ttl_s)
    fire_one = firing_with(
        state.shared.schedules,
        slack.headlines,
        slack.profiles,
        enqueue,
        holder=holder,
        config=services.config.schedules,
    )
    return Scheduler(state.shared.schedules, fire_one)
