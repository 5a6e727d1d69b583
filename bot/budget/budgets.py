"""Spending limits as the rest of the bot uses them: the model wrapped for a person (their
limits resolved from their roles, and the limit of the channel they ask in), each call
reserved and settled in the ledger, refusals audited and counted, and where a person (or a
channel) stands today for ``/agent usage`` (``/agent channel``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.budget.clock import BudgetDay, Clock, budget_day, system_clock
from bot.budget.config import BudgetsConfig, configured
from bot.budget.estimate import CallEstimator, Estimate
from bot.budget.guard import BudgetedModel, CappableChatModel, Hold
from bot.budget.ledger import COST_UNITS, BudgetLedger, Check, cost_units
from bot.budget.limits import Limit, applicable, channel_limits
from bot.budget.refusal import OverBudget, Refusal
from bot.llm.pricing import Price, cost_of
from bot.llm.usage import Usage
from bot.observability import metrics
from bot.state.audit import AuditEntry, AuditKind, AuditLog
from permissions.budget import Budget
from permissions.config import RoleConfig
from permissions.policy import Person, Policy
from permissions.sources import role_names

log = logging.getLogger(__name__)

# A call's hold is presumed dead (its process gone) this long after it was made, and then
# counted as spent at its estimate: longer than any model call takes, retries included.
HOLD_S = 15 * 60


@dataclass(frozen=True)
class Spender:
    """Whose model calls these are (their roles decide their limits), and where (the
    channel's budget, when it has one, limits everyone in it together)."""

    team: str  # the bot's workspace
    user: str
    roles: tuple[str, ...] = ()
    channel: str | None = None
    thread: str | None = None
    channel_budget: Budget | None = None


@dataclass(frozen=True)
class Standing:
    """Where a person (or the workspace) stands today: each limit, and how much of it is
    spent (tokens, or cost; settled and held by calls under way)."""

    day: BudgetDay
    now: datetime
    limits: list[tuple[Limit, float]]


class Budgets:
    def __init__(
        self,
        config: BudgetsConfig,
        roles: Mapping[str, RoleConfig],
        ledger: BudgetLedger,
        audit: AuditLog,
        estimate: CallEstimator,
        policy: Policy,
        *,
        clock: Clock = system_clock,
        hold_s: float = HOLD_S,
    ) -> None:
        self.config = config
        self.roles = roles
        self.ledger = ledger
        self.audit = audit
        self.estimate = estimate
        self.policy = policy
        self.clock = clock  # replaceable: tests move the day
        self.hold_s = hold_s
        self.zone = config.zone
        self.enabled = bool(configured(config, roles))

    @property
    def price(self) -> Price | None:
        return self.estimate.price

    def limits(self, spender: Spender) -> list[Limit]:
        channel = None
        if spender.channel and spender.channel_budget is not None:
            channel = (spender.channel, spender.channel_budget)
        return applicable(self.config, self.roles, spender.roles, spender.user, channel)

    def guard(self, model: CappableChatModel, spender: Spender) -> CappableChatModel:
        """``model`` within ``spender``'s limits (``model`` itself when none applies)."""
        limits = self.limits(spender)
        if not limits:
            return model

        async def reserve(estimate: Estimate) -> Hold:
            return await self.reserve(spender, limits, estimate)

        return BudgetedModel(model, reserve, self.estimate)

    async def guard_for(
        self,
        model: CappableChatModel,
        person: Person,
        thread: str | None = None,
        *,
        channel_budget: Budget | None = None,
    ) -> CappableChatModel:
        """``model`` within the limits on ``person``, their roles as the policy resolves them
        (a turn's, an MCP sampling request's), and ``channel_budget``: the limits of the
        channel they ask in (``person.channel``), reserved in the same step."""
        if not self.enabled and channel_budget is None:
            return model
        roles = tuple(role_names(await self.policy.held(person))) if self.enabled else ()
        spender = Spender(person.team, person.user, roles, person.channel, thread, channel_budget)
        return self.guard(model, spender)

    def today(self) -> tuple[datetime, BudgetDay]:
        now = self.clock()
        return now, budget_day(now, self.zone)

    async def reserve(
        self, spender: Spender, limits: Sequence[Limit], estimate: Estimate
    ) -> LedgerHold:
        """Hold ``estimate`` against every limit; :class:`OverBudget` when one is reached."""
        now, day = self.today()
        checks = [_check(limit, spender.user) for limit in limits]
        call = uuid.uuid4().hex
        tokens, cost = estimate.tokens, cost_units(estimate.cost)
        reached = await self.ledger.reserve(
            spender.team, day, call, checks, tokens, cost, now=now.timestamp(), hold_s=self.hold_s
        )
        if reached is None:
            counters = list(dict.fromkeys(check.counter for check in checks))
            return LedgerHold(self, spender.team, day, call, counters)
        limit = limits[reached.check]
        refusal = Refusal(limit, _amount(limit, reached.spent), day, now)
        await self._refused(spender, refusal)
        raise OverBudget(refusal)

    async def standing(self, team: str, person: Person | None = None) -> Standing:
        """Today's spend against each limit on ``person`` (their roles as the policy resolves
        them); with no person, the workspace's limits only."""
        now, day = self.today()
        if not self.enabled:
            return Standing(day, now, [])
        if person is None:
            user, limits = "", [x for x in self.limits(Spender(team, "")) if x.scope == "workspace"]
        else:
            roles = tuple(role_names(await self.policy.held(person)))
            user, limits = person.user, self.limits(Spender(team, person.user, roles))
        return await self._standing(team, day, now, user, limits)

    async def standing_of_channel(self, team: str, channel: str, budget: Budget) -> Standing:
        """Today's spend in ``channel`` against each limit of its ``budget``."""
        now, day = self.today()
        limits = channel_limits(channel, budget)
        return await self._standing(team, day, now, "", limits)

    async def _standing(
        self, team: str, day: BudgetDay, now: datetime, user: str, limits: list[Limit]
    ) -> Standing:
        spent = await self.ledger.spent(team, day, [limit.counter(user) for limit in limits])
        return Standing(
            day,
            now,
            [
                (limit, _amount(limit, spend.of(limit.metric)))
                for limit, spend in zip(limits, spent, strict=True)
            ],
        )

    async def _refused(self, spender: Spender, refusal: Refusal) -> None:
        limit = refusal.limit
        metrics.safely(
            lambda: metrics.BUDGET_REFUSALS.labels(scope=limit.scope, metric=limit.metric).inc()
        )
        log.info(
            "model call refused for %s: %s daily %s limit reached",
            spender.user,
            limit.source,
            limit.metric,
        )
        entry = AuditEntry(
            kind=AuditKind.BUDGET,
            actor=spender.user,
            action="model call",
            target=limit.source,
            outcome="refused",
            detail={
                "metric": limit.metric,
                "limit": limit.amount,
                "spent": refusal.spent,
                "day": refusal.day.stamp,
                "channel": spender.channel or "",
                "thread": spender.thread or "",
                "team": spender.team,
            },
        )
        try:
            await self.audit.add(entry)
        except Exception:
            log.warning("could not audit a budget refusal", exc_info=True)


@dataclass
class LedgerHold:
    """One call's reservation in the ledger, on the day it was made."""

    budgets: Budgets
    team: str
    day: BudgetDay
    call: str
    counters: list[str]

    async def settle(self, usage: Usage) -> None:
        tokens = usage.prompt_tokens + usage.completion_tokens
        cost = cost_units(cost_of(usage, self.budgets.price))
        try:
            await self.budgets.ledger.settle(
                self.team, self.day, self.call, self.counters, tokens, cost
            )
        except Exception:
            log.warning("could not settle a model call's spend; its estimate counts", exc_info=True)

    async def release(self) -> None:
        try:
            await self.budgets.ledger.release(self.team, self.day, self.call, self.counters)
        except Exception:
            log.warning("could not release a failed model call's hold", exc_info=True)


def _check(limit: Limit, user: str) -> Check:
    amount = round(limit.amount) if limit.metric == "tokens" else cost_units(limit.amount)
    return Check(limit.counter(user), limit.metric, amount)


def _amount(limit: Limit, spent: int) -> float:
    """The ledger's figure (tokens, or cost units) in the limit's own terms."""
    return spent if limit.metric == "tokens" else spent / COST_UNITS
