"""Which id a session gets, decided once, when it opens (DESIGN §10).

Precedence: an id the application passed explicitly (``govern(..., session_id=)``) > a session
id the application already propagates (OpenInference's ``using_session`` context value or the
``session.id`` baggage entry, as Langfuse and Phoenix users set it) > the SDK's own
conversation id > a random one. The SDK's id, when there is one, is always recorded as
``gen_ai.conversation.id`` and never written over ``session.id``: a tracer that replaced the
application's id with the CLI's split one user session across two (openinference issue 3198).
"""

from __future__ import annotations

from typing import Final

from opentelemetry import baggage
from opentelemetry import context as otel_context

from hookscope.context import new_session_id

__all__ = ["AMBIENT_SESSION_KEY", "ambient_session_id", "choose_session_id"]

#: The context key and baggage entry OpenInference's ``using_session`` (and others) set.
AMBIENT_SESSION_KEY: Final = "session.id"


def ambient_session_id(context: otel_context.Context | None = None) -> str | None:
    """The session id the application propagates in ``context`` (the current one by default).

    Read where the application's call enters the SDK (``query()``, ``Runner.run``): SDK
    callbacks often run in tasks that did not inherit the application's context.
    """
    value = otel_context.get_value(AMBIENT_SESSION_KEY, context)
    if not isinstance(value, str) or not value:
        value = baggage.get_baggage(AMBIENT_SESSION_KEY, context)
    return value if isinstance(value, str) and value else None


def choose_session_id(
    explicit: str | None = None, ambient: str | None = None, sdk_id: str | None = None
) -> str:
    """The session's id by the precedence above."""
    return explicit or ambient or sdk_id or new_session_id()
