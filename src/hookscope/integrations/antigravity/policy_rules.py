"""The policy rules of an agent as the adapter names decisions by, and the names it reports.

Nothing here imports the SDK: the values are filled from it in :mod:`.sdk_values`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from hookscope.types import Decision

__all__ = ["HARNESS_POLICY", "POLICY_HOOK", "UNKNOWN_TOOL", "RuleInfo"]

#: Decided-by name for policy rules the SDK evaluates in Python (``when`` predicates, ask-user).
POLICY_HOOK: Final = "antigravity.policy"
#: Decided-by name for static policy rules the Go harness enforces without asking Python.
HARNESS_POLICY: Final = "antigravity.harness"
#: Tool name for a call the harness denied without saying which tool it was (wildcard rules).
UNKNOWN_TOOL: Final = "_unknown"


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """One configured policy rule, as the adapter needs it to name a decision.

    Args:
        name: The rule's name as the SDK and harness report it (``name or tool``).
        target: ``tool``, ``server/tool``, ``server/*`` or ``*``.
        decision: What the rule decides when it matches.
        bucket: Its precedence bucket, 0 to 8 (hookscope's and the SDK's order); ``None``
            for a target hookscope cannot read (the SDK accepts any string).
        reason: The rule's deny reason, possibly empty.
        dynamic: Whether Python evaluates it (a ``when`` predicate or ask-user).
    """

    name: str
    target: str
    decision: Decision
    bucket: int | None
    reason: str
    dynamic: bool
