"""What the runner decided, frozen, for an adapter to turn into the SDK's own answer.

Each adapter owns one small ``to_<sdk>(verdict)`` function; nothing SDK-specific lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hookscope.types import PolicyDecision, ToolCall

__all__ = ["ToolVerdict", "TurnVerdict"]


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """The ``pre_tool_call`` verdict on one call.

    Args:
        allowed: Whether the tool may run.
        call: The effective call (the model's, with every hook's modified arguments).
        message: The denial message for the model, or the reason an allow or ask gave.
        args: The arguments the tool must run with, only when a hook changed them.
        asked: Whether the user was (or is being) asked.
        pending: An ask handed to the SDK's own approval (``ask="native"``) that is not
            answered yet: answer it with :meth:`ToolOp.answer`.
        decision: The policy decision behind the verdict, when a PolicyEnforcer made one.
        decided_by: The hook that denied, asked or changed the call.
    """

    allowed: bool
    call: ToolCall
    message: str = ""
    args: Mapping[str, Any] | None = None
    asked: bool = False
    pending: bool = False
    decision: PolicyDecision | None = None
    decided_by: str | None = None

    @property
    def denied(self) -> bool:
        """Neither allowed nor waiting for an answer: the tool must not run."""
        return not self.allowed and not self.pending


@dataclass(frozen=True, slots=True)
class TurnVerdict:
    """The ``pre_turn`` verdict on one prompt (or a ``post_turn`` request to go on).

    Args:
        allowed: Whether the turn may run (for ``post_turn``: whether it may stop).
        message: Why it may not, for the user or the model.
        decided_by: The hook that blocked it.
    """

    allowed: bool = True
    message: str = ""
    decided_by: str | None = None
