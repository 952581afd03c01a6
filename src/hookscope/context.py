"""Hierarchical hook contexts: session → turn → operation.

A context is a small key-value store with a parent. Reads fall through to the parent chain;
writes stay local, so a hook that sets ``"user"`` on a turn shadows the session's ``"user"``
for that turn only and never changes what the session (or a sibling turn) sees.

Each context also carries the ids of its scope — ``session_id``, ``turn_index``, ``call_id`` —
and, once the scope has ended, its outcome.
"""

from __future__ import annotations

import os
from typing import Any, Final, Literal, final

from hookscope.types import Continuation, ToolCall

__all__ = [
    "NEST_SESSION_KEY",
    "NO_RECOVERY_KEY",
    "SUBAGENT_KEY",
    "HookContext",
    "OperationContext",
    "OperationKind",
    "SessionContext",
    "SessionOutcome",
    "TurnContext",
    "TurnOutcome",
    "new_session_id",
]

SessionOutcome = Literal["completed", "failed", "cancelled"]
TurnOutcome = Literal["completed", "blocked", "failed", "cancelled"]
OperationKind = Literal["tool", "interaction"]

_MISSING: Final = object()

# Keys adapters set on contexts so telemetry records an SDK's structure (DESIGN §10).
#: A session context holding ``True`` under this key nests under the span current when it starts.
NEST_SESSION_KEY: Final = "hookscope.nest_session"
#: A turn context holding ``(agent name, conversation id)`` under this key is a subagent's run.
SUBAGENT_KEY: Final = "hookscope.subagent"
#: An operation context holding ``True`` under this key belongs to an SDK where no result can
#: replace a tool's error (Claude Agent SDK): a ``Recovery`` is recorded as not recovered.
NO_RECOVERY_KEY: Final = "hookscope.no_recovery"


def new_session_id() -> str:
    """A random session id (32 hex digits), for sessions nobody named."""
    try:
        return _IDS.pop()
    except IndexError:
        pool = os.urandom(16 * _IDS_PER_READ).hex()
        _IDS.extend(pool[i : i + 32] for i in range(0, len(pool), 32))
        return _IDS.pop()


# Random session ids are cut from one os.urandom read per 256 sessions (a read costs a system
# call, more than the rest of a session's setup). list.pop is atomic: threads never share an
# id; a forked child starts a pool of its own instead of repeating its parent's ids.
_IDS: list[str] = []
_IDS_PER_READ: Final = 256
os.register_at_fork(after_in_child=_IDS.clear)


class HookContext:
    """State shared between hooks, scoped to a session, a turn or one operation.

    Args:
        parent: The enclosing context, or ``None`` for a root.
    """

    __slots__ = ("__weakref__", "_parent", "_values")

    def __init__(self, parent: HookContext | None = None) -> None:
        self._parent = parent
        self._values: dict[str, Any] = {}

    @property
    def parent(self) -> HookContext | None:
        """The enclosing context, or ``None`` at the root."""
        return self._parent

    @property
    def has_parent(self) -> bool:
        """Whether this context has an enclosing context."""
        return self._parent is not None

    def get(self, key: str, default: Any = None) -> Any:
        """Return ``key`` from this context or the nearest ancestor that has it.

        Args:
            key: The name to look up.
            default: Returned when no context in the chain has ``key``.
        """
        value = self._values.get(key, _MISSING)
        if value is not _MISSING:
            return value
        # Chains are at most three deep (session → turn → operation).
        return default if self._parent is None else self._parent.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Store ``key`` in this context only, shadowing any ancestor's value."""
        self._values[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._values or (self._parent is not None and key in self._parent)


@final
class SessionContext(HookContext):
    """The root context: one agent session.

    Args:
        session_id: Unique id of the session.
        agent_name: Name of the agent running it; empty when the agent did not say.
        provider: The model provider the agent talks to (``gen_ai.provider.name``), if known.
    """

    __slots__ = (
        "agent_name",
        "context_additions",
        "conversation_id",
        "outcome",
        "provider",
        "session_id",
        "turn_count",
    )

    def __init__(self, session_id: str, agent_name: str = "", provider: str | None = None) -> None:
        # HookContext.__init__, inlined: a context is made per scope, on the agent's hot path.
        self._parent: HookContext | None = None
        self._values: dict[str, Any] = {}
        self.session_id = session_id
        self.agent_name = agent_name
        self.provider = provider
        self.turn_count = 0
        #: The agent framework's own id for the conversation, when it has one (it may become
        #: known only after the session started); telemetry reports it as
        #: ``gen_ai.conversation.id``, falling back to ``session_id``.
        self.conversation_id: str | None = None
        #: ``None`` while the session runs; how it ended afterwards.
        self.outcome: SessionOutcome | None = None
        #: Text hooks asked to add to the model's context for the whole session (Claude Code's
        #: SessionStart output); adapters that can pass it to the model do.
        self.context_additions: list[str] = []

    def __repr__(self) -> str:
        return f"SessionContext(session_id={self.session_id!r}, agent_name={self.agent_name!r})"


@final
class TurnContext(HookContext):
    """One turn of a session: a prompt and everything the agent does to answer it.

    Args:
        session: The session the turn belongs to.
        turn_index: Position of the turn in its session, from 0.
        prompt: The prompt that started the turn.
    """

    __slots__ = ("context_additions", "continues", "outcome", "prompt", "session", "turn_index")

    def __init__(self, session: SessionContext, turn_index: int, prompt: Any = None) -> None:
        self._parent = session  # HookContext.__init__, inlined (see SessionContext)
        self._values = {}
        self.session = session
        self.turn_index = turn_index
        self.prompt = prompt
        #: ``None`` while the turn runs; how it ended afterwards.
        self.outcome: TurnOutcome | None = None
        #: Text hooks asked to add to the model's context during this turn (Claude Code's
        #: ``additionalContext``, ``systemMessage``, a PostToolUse block's reason …).
        self.context_additions: list[str] = []
        #: 0 for a turn the user started; n for the n-th turn in a row that continues it
        #: because a ``post_turn`` hook asked to (:attr:`HookResult.continuation`).
        self.continues = prompt.depth if isinstance(prompt, Continuation) else 0

    @property
    def session_id(self) -> str:
        """The enclosing session's id."""
        return self.session.session_id

    @property
    def agent_name(self) -> str:
        """The enclosing session's agent name."""
        return self.session.agent_name

    def __repr__(self) -> str:
        return f"TurnContext(session_id={self.session_id!r}, turn_index={self.turn_index})"


@final
class OperationContext(HookContext):
    """One operation inside a turn: a tool call or an interaction with the user.

    Args:
        turn: The turn the operation belongs to.
        kind: ``"tool"`` or ``"interaction"``.
        call: The tool call, for a tool operation.
        call_id: The operation's id (the tool call id when the model gave one).
    """

    __slots__ = ("call", "call_id", "kind", "turn")

    def __init__(
        self,
        turn: TurnContext,
        kind: OperationKind = "tool",
        call: ToolCall | None = None,
        call_id: str = "",
    ) -> None:
        self._parent = turn  # HookContext.__init__, inlined (see SessionContext)
        self._values = {}
        self.turn = turn
        self.kind = kind
        #: The call as the model made it; hooks may change the effective call.
        self.call = call
        self.call_id = call_id

    @property
    def session(self) -> SessionContext:
        """The enclosing session."""
        return self.turn.session

    @property
    def session_id(self) -> str:
        """The enclosing session's id."""
        return self.turn.session.session_id

    @property
    def turn_index(self) -> int:
        """The enclosing turn's index."""
        return self.turn.turn_index

    @property
    def agent_name(self) -> str:
        """The enclosing session's agent name."""
        return self.turn.session.agent_name

    def __repr__(self) -> str:
        return (
            f"OperationContext(session_id={self.session_id!r}, turn_index={self.turn_index}, "
            f"kind={self.kind!r}, call_id={self.call_id!r})"
        )
