"""HookContext: reads fall through the parent chain, writes shadow locally."""

from __future__ import annotations

from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.types import ToolCall


def _chain() -> tuple[SessionContext, TurnContext, OperationContext]:
    session = SessionContext("s1", "coder")
    turn = TurnContext(session, 2, "prompt")
    operation = OperationContext(turn, "tool", ToolCall("view_file", id="c9"), "c9")
    return session, turn, operation


def test_get_falls_through_to_the_nearest_ancestor() -> None:
    session, _, operation = _chain()
    session.set("user", "ada")
    assert operation.get("user") == "ada"


def test_set_shadows_without_mutating_the_parent() -> None:
    session, turn, operation = _chain()
    session.set("user", "ada")
    turn.set("user", "bob")
    assert (session.get("user"), turn.get("user"), operation.get("user")) == ("ada", "bob", "bob")


def test_sibling_contexts_do_not_see_each_other() -> None:
    session = SessionContext("s1")
    first, second = TurnContext(session, 0), TurnContext(session, 1)
    first.set("k", 1)
    assert second.get("k", "absent") == "absent"


def test_get_returns_default_when_missing_and_stored_none_when_none() -> None:
    session, _, operation = _chain()
    assert operation.get("missing", 42) == 42
    session.set("nothing", None)
    assert operation.get("nothing", 42) is None


def test_contains_looks_up_the_chain() -> None:
    session, _, operation = _chain()
    session.set("k", 0)
    assert "k" in operation
    assert "other" not in operation


def test_parent_and_has_parent() -> None:
    session, turn, operation = _chain()
    assert (session.parent, session.has_parent) == (None, False)
    assert (turn.parent, turn.has_parent) == (session, True)
    assert operation.parent is turn
    assert HookContext().has_parent is False


def test_every_context_knows_its_ids() -> None:
    _, turn, operation = _chain()
    assert (turn.session_id, turn.turn_index, turn.agent_name) == ("s1", 2, "coder")
    assert (operation.session_id, operation.turn_index, operation.call_id) == ("s1", 2, "c9")
    assert (operation.agent_name, operation.kind) == ("coder", "tool")
