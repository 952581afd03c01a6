"""Settling an ask: the question a pending ``HookResult.ask`` puts to the user, and the verdict
the answer makes of it (fail closed: only ``"allow"`` lets the call run).

Used by the runner's own confirm path (the ``on_interaction`` hooks) and by adapters that hand
the question to their SDK's native approval; re-exported from :mod:`hookscope.runner`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hookscope.context import HookContext, OperationContext
from hookscope.types import Decision, HookResult, PolicyDecision

__all__ = ["Confirm", "ask_text", "settle_ask"]

#: Settles a pending ask: ``(context, asked) -> the final HookResult`` (see :func:`settle_ask`).
Confirm = Callable[[HookContext, HookResult], Awaitable[HookResult]]


def ask_text(context: HookContext, asked: HookResult) -> str:
    """The question a pending ask puts to the user."""
    call = context.call if isinstance(context, OperationContext) else None
    return asked.message or (
        f"allow the call to {call.name!r}?" if call is not None else "allow this call?"
    )


def settle_ask(context: HookContext, asked: HookResult, answer: str | None) -> HookResult:
    """The verdict a pending ask becomes once answered.

    Only the answer ``"allow"`` lets the call run; no answer (``None``) or another answer
    denies (fail closed). The policy decision records that the user was asked and what they
    said.
    """
    approved = answer == "allow"
    policy = asked.decision
    reason = asked.message or ask_text(context, asked)
    decision = PolicyDecision(
        decision=Decision.ASK_USER,
        outcome="allowed" if approved else "denied",
        rule=policy.rule if policy is not None else None,
        bucket=policy.bucket if policy is not None else None,
        reason=reason,
        asked_user=True,
        user_approved=None if answer is None else approved,
    )
    if approved:
        return HookResult(
            allow=True, message=reason, modified_args=asked.modified_args, decision=decision
        )
    why = "the user did not confirm" if answer is None else f"the user answered {answer!r}"
    return HookResult(allow=False, message=f"{reason} ({why})", decision=decision)
