"""The session transcript Claude Code hook scripts read (``transcript_path``), DESIGN §7a.

Claude Code keeps every session as JSON lines — user prompts, assistant text, ``tool_use`` and
``tool_result`` blocks — and hands hooks the file's path; Stop hooks copy it, summarise it or
look for the last answer in it. :class:`TranscriptWriter` keeps the same file for a hookscope
session under ``<project>/.hookscope/transcripts/<session_id>.jsonl`` (mode 0600), written only
when a loaded hook could read it: ``load()`` puts one in front of a table's command, prompt
and http hooks unless ``transcript=False``.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.engine.claude import ClaudeNames
from hookscope.engine.envelope import jsonable, prompt_id, tool_use_id
from hookscope.hooks import Hook
from hookscope.types import ChatResponse, Continuation, ToolCall, ToolResult

__all__ = ["TranscriptWriter", "transcript_path"]

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")
_LAST_UUID: Final = "hookscope.transcript.last_uuid"
_LAST_EVENT: Final = "hookscope.transcript.last_event"


def transcript_path(project_dir: str | os.PathLike[str], session_id: str, create: bool) -> str:
    """The transcript file of ``session_id`` in ``project_dir``; with ``create``, the file
    exists afterwards (empty when nothing wrote it: the field is never a missing file)."""
    name = _UNSAFE.sub("_", session_id or "session")[:200] or "session"
    path = Path(project_dir) / ".hookscope" / "transcripts" / f"{name}.jsonl"
    if create and not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        except OSError:
            pass  # a read-only project: the hook gets the path, and reads nothing
    return str(path)


def _session_of(context: HookContext) -> SessionContext | None:
    found: HookContext | None = context
    while found is not None and not isinstance(found, SessionContext):
        found = found.parent
    return found


class TranscriptWriter(Hook):
    """Appends a session's prompts, answers and tool calls to its Claude Code transcript.

    Args:
        project_dir: The project whose ``.hookscope/transcripts/`` holds the files.
        names: Claude Code's names for the agent's tools (as the table's hooks see them).
    """

    name = "transcript"

    def __init__(
        self, project_dir: str | os.PathLike[str], names: ClaudeNames | None = None
    ) -> None:
        self.project_dir = str(project_dir)
        self.names = names or ClaudeNames()

    def _write(
        self,
        context: HookContext,
        source: object,
        kind: str,
        message: Mapping[str, Any],
        **extra: Any,
    ) -> None:
        session = _session_of(context)
        if session is None:
            return
        path = transcript_path(self.project_dir, session.session_id, create=True)
        # Two loaded files (or a table and its hot-reloaded successor) may each hold a writer
        # for one project: the same event, seen twice, is written once.
        seen = (kind, id(context), id(source))
        if session.get(f"{_LAST_EVENT}:{path}") == seen:
            return
        session.set(f"{_LAST_EVENT}:{path}", seen)
        line_id = str(uuid.uuid4())
        line: dict[str, Any] = {
            "parentUuid": session.get(_LAST_UUID),
            "isSidechain": False,
            "type": kind,
            "message": message,
            "uuid": line_id,
            "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "sessionId": session.session_id,
            "cwd": self.project_dir,
            "userType": "external",
            "entrypoint": "hookscope",
            **extra,
        }
        asked = prompt_id(context)
        if asked is not None:
            line["promptId"] = asked
        session.set(_LAST_UUID, line_id)
        text = json.dumps(line, ensure_ascii=False, default=repr) + "\n"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(descriptor, text.encode(errors="backslashreplace"))
            finally:
                os.close(descriptor)
        except OSError:
            pass  # the transcript is for the hooks' benefit; never break the agent for it

    def pre_turn(self, context: TurnContext, prompt: Any) -> None:
        content = prompt if isinstance(prompt, str) else jsonable(prompt)
        if isinstance(prompt, Continuation):  # as Claude Code records a Stop hook's reason
            content = f"Stop hook feedback:\n{prompt}"
        self._write(context, prompt, "user", {"role": "user", "content": content})

    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
        block = {
            "type": "tool_use",
            "id": tool_use_id(context, call),
            "name": self.names.tool_name(call),
            "input": jsonable(self.names.tool_input(call)),
        }
        self._write(context, call, "assistant", {"role": "assistant", "content": [block]})

    def _result(self, context: HookContext, call: ToolCall, value: Any, error: bool) -> None:
        text = value if isinstance(value, str) else json.dumps(jsonable(value))
        block = {
            "tool_use_id": tool_use_id(context, call),
            "type": "tool_result",
            "content": text,
            "is_error": error,
        }
        self._write(
            context,
            call,
            "user",
            {"role": "user", "content": [block]},
            toolUseResult=jsonable(value),
        )

    def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        self._result(context, result.call, result.value, False)

    def on_tool_error(self, context: OperationContext, error: Exception) -> None:
        if context.call is not None:
            self._result(context, context.call, f"Error: {error}", True)

    def post_turn(self, context: TurnContext, response: ChatResponse) -> None:
        block = {"type": "text", "text": response.text}
        message = {"role": "assistant", "model": response.model, "content": [block]}
        self._write(context, response, "assistant", message)
