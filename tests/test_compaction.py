"""pre_compaction: the first hook's summary wins; on_compaction stays the inspect event."""

from __future__ import annotations

from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import TurnContext
from hookscope.hooks import Hook, PreCompactionHook
from hookscope.runner import HookRunner

from .conftest import Recorder

MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


class Summarizer(Hook):
    def __init__(self, name: str, summary: str | None, log: list[str]) -> None:
        self.name, self.summary, self.log = name, summary, log

    def pre_compaction(self, context: TurnContext, messages: Any) -> str | None:
        self.log.append(self.name)
        return self.summary


class CategorySummarizer(PreCompactionHook):
    async def run(self, context: TurnContext, messages: Any) -> str:
        return f"{len(messages)} messages"


@hooks.pre_compaction
def decorated(messages: Any) -> str:
    return f"decorated: {len(messages)}"


async def _summarize(*registered: object) -> str | None:
    runner = HookRunner(registered)
    async with runner.session() as session, session.turn("go") as turn:
        return await turn.summarize(MESSAGES)


async def test_the_first_summary_wins_and_later_hooks_do_not_run() -> None:
    log: list[str] = []
    summary = await _summarize(
        Summarizer("a", None, log), Summarizer("b", "from b", log), Summarizer("c", "c", log)
    )
    assert summary == "from b"
    assert log == ["a", "b"]


async def test_no_summary_when_no_hook_supplies_one() -> None:
    assert await _summarize(Summarizer("a", None, [])) is None
    assert await _summarize() is None


@pytest.mark.parametrize(
    ("hook", "expected"),
    [(CategorySummarizer(), "2 messages"), (decorated, "decorated: 2")],
)
async def test_every_hook_style_can_summarize(hook: object, expected: str) -> None:
    assert await _summarize(hook) == expected


async def test_a_non_string_summary_is_a_failure_and_the_next_hook_answers(
    recorder: Recorder,
) -> None:
    @hooks.pre_compaction
    def wrong(messages: Any) -> int:
        return 42

    runner = HookRunner([wrong, decorated])
    runner.observe(recorder)
    async with runner.session() as session, session.turn("go") as turn:
        assert await turn.summarize(MESSAGES) == "decorated: 2"
        await turn.compact("decorated: 2")
    assert [c for c in recorder.calls if c[0] == "hook_finished"] == [
        ("hook_finished", "pre_compaction", "wrong", None, "HookFailure"),
        ("hook_finished", "pre_compaction", "decorated", "decorated: 2", None),
    ]
    assert [c[1:] for c in recorder.named("dispatch_finished") if "compaction" in c[1]] == [
        ("pre_compaction", "decorated: 2", "decorated"),
        ("on_compaction", None, None),
    ]
