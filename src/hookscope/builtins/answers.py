"""Answering the agent's questions without a human (seed 002's interaction hooks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from hookscope.context import OperationContext
from hookscope.hooks import Hook
from hookscope.types import Answer, Question

__all__ = ["AutoAnswer"]

AnswerFn = Callable[[Question], "str | None"]


class AutoAnswer(Hook):
    """Answers questions from a mapping (question text → answer) or a function.

    A dispatch is answered only when every question in it has an answer; otherwise the hook
    returns nothing and a later hook (or the user) answers them all. Confirmations the runner
    asks on a hook's behalf (``Question.kind == "confirm"``) are questions too: answer
    ``"allow"`` to let the call run, anything else denies it.

    Args:
        answers: ``{question text: answer text}``, or ``fn(question) -> str | None``
            (``None``: no answer for that question).

    Example::

        runner = HookRunner([AutoAnswer({"Open a pull request?": "yes"})])
        runner = HookRunner([AutoAnswer(lambda q: "allow" if q.kind == "confirm" else None)])
    """

    def __init__(self, answers: Mapping[str, str] | AnswerFn) -> None:
        if isinstance(answers, Mapping):
            for text, answer in answers.items():
                if not isinstance(text, str) or not isinstance(answer, str):
                    raise ValueError(
                        f"AutoAnswer: answers maps {text!r} to {answer!r}; both the question "
                        "and the answer must be str, e.g. AutoAnswer({'Proceed?': 'yes'})"
                    )
            table = MappingProxyType(dict(answers))
            self._answer: AnswerFn = lambda question: table.get(question.text)
        elif callable(answers):
            self._answer = answers
        else:
            raise ValueError(
                f"AutoAnswer: answers must be a mapping of question text to answer text or a "
                f"function question -> str | None, got {type(answers).__name__}"
            )

    def on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> list[Answer] | None:
        """Answer every question, or none.

        Raises:
            TypeError: the answer function returned something other than a str or ``None``
                (a hook failure: the dispatch goes on without this hook's answer).
        """
        answers: list[Answer] = []
        for question in questions:
            text = self._answer(question)
            if text is None:
                return None
            if not isinstance(text, str):
                raise TypeError(
                    f"AutoAnswer's function returned {type(text).__name__} for "
                    f"{question.text!r}; return the answer as a str, or None"
                )
            answers.append(Answer(text, question.id))
        return answers or None
