"""Opt-in capture of prompts, tool arguments, results and responses.

Content is not recorded unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says
where: ``SPAN_ONLY`` (span attributes), ``EVENT_ONLY`` (log events through the OTel Logs API,
named ``gen_ai.client.inference.operation.details`` as the GenAI conventions say) or
``SPAN_AND_EVENT``. ``true`` (as the contrib instrumentations read it) means
``SPAN_AND_EVENT``; ``false``, ``NO_CONTENT`` or an unset variable keep it off; ``METADATA``
records, on spans and events alike, only each value's type and size (:func:`describe`), never
the value; any other value is a configuration error, never a silent default.

Messages follow the conventions' JSON schema (``[{role, parts: [{type, content}]}]``, output
messages with a ``finish_reason``). Every captured value is truncated and redacted by
:mod:`hookscope.redaction` (secret-looking keys at any depth, secrets inside strings).
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry._logs import Logger
from opentelemetry.context import Context
from opentelemetry.trace import Span

from hookscope.redaction import DEFAULT, REDACTED, Redactor, redact
from hookscope.telemetry import semconv as sc

__all__ = [
    "CAPTURE_ENV",
    "DEFAULT_MAX_LENGTH",
    "REDACTED",
    "ContentCapture",
    "Messages",
    "capture_from_env",
    "describe",
    "input_messages",
    "output_messages",
    "redact",
    "render",
    "to_json",
]

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Characters kept of a captured value; longer values end with an ellipsis marker.
DEFAULT_MAX_LENGTH: Final = 2048
# Searched beyond the cut, so a secret straddling it is still recognised whole.
_REDACTION_MARGIN: Final = 1024


class ContentCapture(enum.Enum):
    """Where captured content goes."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"
    #: Spans and events, but each value only as its type and size (:func:`describe`).
    METADATA = "METADATA"

    @property
    def on_spans(self) -> bool:
        """Whether content (or its metadata) goes into span attributes."""
        return self in _ON_SPANS

    @property
    def on_events(self) -> bool:
        """Whether content (or its metadata) goes into ``gen_ai.client.inference.operation.details``
        log events."""
        return self in _ON_EVENTS

    @property
    def metadata_only(self) -> bool:
        """Whether values are replaced by their type and size."""
        return self is ContentCapture.METADATA

    @classmethod
    def parse(cls, raw: str, source: str = CAPTURE_ENV) -> ContentCapture:
        """A mode from its name (any case), ``true`` or ``false``.

        Raises:
            ValueError: ``raw`` names no mode; the message says which ones there are.
        """
        text = raw.strip()
        boolean = _BOOLEANS.get(text.lower())
        if boolean is not None:
            return boolean
        try:
            return cls(text.upper())
        except ValueError:
            modes = ", ".join(mode.value for mode in cls)
            raise ValueError(
                f"{source}={raw!r} is not a capture mode; use true, false or one of {modes} "
                "(or unset it to record no content)"
            ) from None


_ON_SPANS: Final = frozenset(
    {ContentCapture.SPAN_ONLY, ContentCapture.SPAN_AND_EVENT, ContentCapture.METADATA}
)
_ON_EVENTS: Final = frozenset(
    {ContentCapture.EVENT_ONLY, ContentCapture.SPAN_AND_EVENT, ContentCapture.METADATA}
)


def capture_from_env(environ: Mapping[str, str] | None = None) -> ContentCapture:
    """Read the capture mode from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

    Raises:
        ValueError: the variable holds something other than a mode, ``true`` or ``false``.
    """
    raw = (os.environ if environ is None else environ).get(CAPTURE_ENV, "").strip()
    if not raw:
        return ContentCapture.NO_CONTENT
    return ContentCapture.parse(raw)


#: ``true``/``false``, as the contrib instrumentations read the variable: ``true`` records
#: content everywhere the conventions allow it (spans, and events for those reading logs).
_BOOLEANS: Final = {"true": ContentCapture.SPAN_AND_EVENT, "false": ContentCapture.NO_CONTENT}


def render(value: Any, max_length: int = DEFAULT_MAX_LENGTH, redactor: Redactor = DEFAULT) -> str:
    """``value`` redacted by ``redactor``, as JSON, truncated. Never raises.

    Objects JSON cannot hold are reduced to their fields (dataclasses, pydantic models, plain
    objects) so secret-looking fields are redacted too; anything else shows only its type, never
    its ``repr`` (which could carry secrets).
    """
    limit, unseen = max_length + _REDACTION_MARGIN, 0
    try:
        if isinstance(value, str):
            unseen = max(0, len(value) - limit)  # cut before redaction; still counted
            text = redactor.redact_text(value, limit)
        else:
            text = json.dumps(redactor.redact(_plain(value, 0), limit))
    except (TypeError, ValueError, RecursionError):
        text = f"[unrenderable {type(value).__name__}]"
    if len(text) > max_length:
        return f"{text[:max_length]}…[truncated {len(text) - max_length + unseen} chars]"
    return text


_MAX_DEPTH: Final = 20
_MAX_KEY: Final = 128
_SIZED: Final = (str, bytes, bytearray, Mapping, list, tuple, set, frozenset)


#: Type names for the kinds of data, whatever class carries them (a ToolCall's arguments are a
#: read-only mapping proxy, yet a mapping all the same).
_KINDS: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
    ((bytes, bytearray), "bytes"),
    (Mapping, "dict"),
    ((list, tuple), "list"),
    ((set, frozenset), "set"),
)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    for kinds, name in _KINDS:
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def _shape(value: Any) -> dict[str, Any]:
    """A value's type name, and its length where it has one (never the value itself)."""
    shape: dict[str, Any] = {"type": _type_name(value)}
    if isinstance(value, _SIZED):
        shape["length"] = len(value)
    return shape


def describe(value: Any, redactor: Redactor = DEFAULT) -> dict[str, Any]:
    """``value``'s metadata for ``capture="metadata"``: its type and size, never its content.

    ``{"type": "str", "length": 42}`` for a string. Types are ``str``, ``bytes``, ``int``,
    ``float``, ``bool``, ``null``, ``dict`` (any mapping), ``list`` (lists and tuples), ``set``,
    else the class name; ``length`` counts characters, bytes, or items (numbers, booleans and
    ``None`` have none).
    A mapping, or an object with fields (dataclass, pydantic model), adds ``"fields"``: each
    top-level key (redacted like content, since keys can be data too) with its value's shape,
    ``{"type": "dict", "length": 2, "fields": {"path": {"type": "str", "length": 9}, …}}``.
    Never raises.
    """
    try:
        shape = _shape(value)
        fields = _fields(value)
        if fields is not None:
            shape["fields"] = {
                redactor.redact_text(str(key), _MAX_KEY): _shape(item)
                for key, item in fields.items()
            }
        return shape
    except Exception:  # a hostile __len__ or property: the type is still safe to tell
        return {"type": _type_name(value)}


def _fields(value: Any) -> Mapping[Any, Any] | None:
    """A value's top-level fields, or ``None`` for a value that has none."""
    if isinstance(value, Mapping):
        return value
    names = getattr(type(value), "__dataclass_fields__", None)
    if names is not None:
        return {name: getattr(value, name) for name in names}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        dumped = dump()
        return dumped if isinstance(dumped, Mapping) else None
    return None


def _plain(value: Any, depth: int) -> Any:
    """``value`` as JSON-able data: str keys, lists, fields of objects."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth > _MAX_DEPTH:
        return "[…]"
    depth += 1
    if isinstance(value, Mapping):
        return {str(key): _plain(item, depth) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item, depth) for item in value]
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:  # hookscope's own values (ChatResponse, Question …) and others
        return {name: _plain(getattr(value, name), depth) for name in fields}
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return _plain(dump(), depth)
    if hasattr(value, "__dict__"):
        return {str(k): _plain(v, depth) for k, v in vars(value).items() if not k.startswith("_")}
    return f"<{type(value).__name__}>"


# --- messages in the GenAI conventions' schema ---

Message = dict[str, Any]


def _show(value: Any, redactor: Redactor, metadata: bool) -> Any:
    """A captured value: rendered and redacted, or (metadata only) its type and size."""
    return describe(value, redactor) if metadata else render(value, redactor=redactor)


def _text(value: Any, redactor: Redactor, metadata: bool) -> Message:
    if metadata:  # the part's kind stays; its content becomes the value's shape
        return {"type": "text", "metadata": describe(value, redactor)}
    return {"type": "text", "content": render(value, redactor=redactor)}


def _parts(content: Any, redactor: Redactor, metadata: bool) -> list[Message]:
    if content is None:
        return []
    if isinstance(content, str):
        return [_text(content, redactor, metadata)]
    if isinstance(content, (list, tuple)):  # OpenAI-style content parts
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                text = part.get("text", part.get("content", ""))
                parts.append(_text(text, redactor, metadata))
            else:
                parts.append(_text(part, redactor, metadata))
        return parts
    return [_text(content, redactor, metadata)]


def _tool_call_part(call: Any, redactor: Redactor, metadata: bool) -> Message:
    """A tool call as a part: hookscope's ToolCall or an OpenAI-style mapping."""
    if isinstance(call, Mapping):
        function = call.get("function")
        function = function if isinstance(function, Mapping) else call
        name, arguments = function.get("name", ""), function.get("arguments")
        call_id = call.get("id", "")
    else:
        name, arguments = getattr(call, "name", ""), getattr(call, "args", None)
        call_id = getattr(call, "id", "")
    part: Message = {
        "type": "tool_call",
        "name": str(name),
        "arguments": _show(arguments, redactor, metadata),
    }
    if call_id:
        part["id"] = str(call_id)
    return part


def _message(item: Any, redactor: Redactor, metadata: bool) -> Message:
    if not isinstance(item, Mapping):
        return {"role": "user", "parts": _parts(item, redactor, metadata)}
    role = str(item.get("role", "user"))
    if role == "tool":
        response = _show(item.get("content"), redactor, metadata)
        part: Message = {"type": "tool_call_response", "response": response}
        if item.get("tool_call_id"):
            part["id"] = str(item["tool_call_id"])
        return {"role": "tool", "parts": [part]}
    parts = _parts(item.get("content"), redactor, metadata)
    calls = item.get("tool_calls") or ()
    parts += [_tool_call_part(call, redactor, metadata) for call in calls]
    return {"role": role, "parts": parts}


def input_messages(
    value: Any, redactor: Redactor = DEFAULT, *, metadata: bool = False
) -> list[Message]:
    """``value`` (a prompt, or chat messages such as ``LlmRequest.messages``) as input messages.

    A string or any other value is one user message; mappings with ``role`` and ``content``
    (OpenAI style, including ``tool_calls`` and ``tool`` results) keep their roles. With
    ``metadata``, text parts hold ``"metadata"`` (:func:`describe`) instead of ``"content"``,
    and tool arguments and responses are described, not rendered.
    """
    if isinstance(value, (list, tuple)) and all(isinstance(m, Mapping) for m in value):
        return [_message(item, redactor, metadata) for item in value]
    return [_message(value, redactor, metadata)]


def output_messages(
    text: str,
    tool_calls: Sequence[Any] = (),
    finish_reasons: Sequence[str] = (),
    redactor: Redactor = DEFAULT,
    *,
    metadata: bool = False,
) -> list[Message]:
    """The model's (or agent's) answer as one assistant output message (described only, with
    ``metadata``, as :func:`input_messages` says)."""
    parts = [_text(text, redactor, metadata)] if text else []
    parts += [_tool_call_part(call, redactor, metadata) for call in tool_calls]
    reason = finish_reasons[0] if finish_reasons else ("tool_call" if tool_calls else "stop")
    return [{"role": "assistant", "parts": parts, "finish_reason": reason}]


def to_json(messages: list[Message]) -> str:
    """Messages as the JSON string a span attribute holds."""
    return json.dumps(messages, ensure_ascii=False)


class Messages:
    """Puts captured content where the capture mode says: span attributes and/or log events.

    On spans, messages are JSON strings (``gen_ai.input.messages``, ``gen_ai.output.messages``)
    with OpenInference's ``input.value``/``output.value`` beside them (for Phoenix); in log
    events they are structured values, as the conventions require for events.

    Args:
        capture: The capture mode.
        logger: The OTel logger that emits ``gen_ai.client.inference.operation.details``.
        redactor: Redacts every captured value (the built-in rules, plus a hook's own
            ``redact_patterns``).
    """

    __slots__ = ("_logger", "capture", "metadata", "on_events", "on_spans", "redactor")

    def __init__(
        self, capture: ContentCapture, logger: Logger, redactor: Redactor = DEFAULT
    ) -> None:
        self.capture = capture
        self.on_spans = capture.on_spans
        self.on_events = capture.on_events
        self.metadata = capture.metadata_only
        self.redactor = redactor
        self._logger = logger

    def output(
        self, text: str, tool_calls: Sequence[Any] = (), finish_reasons: Sequence[str] = ()
    ) -> list[Message]:
        """An answer as output messages, redacted by this capture's redactor."""
        return output_messages(
            text, tool_calls, finish_reasons, self.redactor, metadata=self.metadata
        )

    def _value(self, value: Any) -> str:
        """A value as a span attribute: rendered, or (metadata only) its shape as JSON."""
        if self.metadata:
            return json.dumps(describe(value, self.redactor), ensure_ascii=False)
        return render(value, redactor=self.redactor)

    def prompt(self, span: Span, prompt: Any) -> None:
        """A turn's prompt, or a model request's messages, on its span."""
        if self.on_spans:
            messages = input_messages(prompt, self.redactor, metadata=self.metadata)
            span.set_attributes(
                {sc.GEN_AI_INPUT_MESSAGES: to_json(messages), sc.INPUT_VALUE: self._value(prompt)}
            )

    def value(self, span: Span, key: str, openinference_key: str, value: Any) -> None:
        """A tool's arguments or result (or a question) on its span, under ``key``."""
        if self.on_spans:
            rendered = self._value(value)
            span.set_attributes({key: rendered, openinference_key: rendered})

    def exchange(
        self,
        span: Span,
        context: Context,
        inputs: Any,
        output: list[Message],
        output_text: str,
        attributes: dict[str, Any],
        *,
        inputs_on_span: bool,
    ) -> None:
        """One operation's answer on its span, and its whole exchange as a log event.

        Args:
            span: The operation's span (a chat or a turn).
            context: The OTel context carrying that span: the event is linked to it.
            inputs: What the operation was given (a prompt or request messages).
            output: Its output messages.
            output_text: Its answer as text, for OpenInference's ``output.value``.
            attributes: The operation's identifying attributes (operation, provider, models,
                usage), repeated on the event.
            inputs_on_span: Whether to put the input messages on the span too (a chat span
                records its request here; a turn span did when it opened).
        """
        if self.on_spans:
            span_attributes: dict[str, Any] = {
                sc.GEN_AI_OUTPUT_MESSAGES: to_json(output),
                sc.OUTPUT_VALUE: self._value(output_text),
            }
            if inputs_on_span:
                span_attributes[sc.GEN_AI_INPUT_MESSAGES] = to_json(
                    input_messages(inputs, self.redactor, metadata=self.metadata)
                )
                span_attributes[sc.INPUT_VALUE] = self._value(inputs)
            span.set_attributes(span_attributes)
        if self.on_events:
            self._logger.emit(
                event_name=sc.EVENT_INFERENCE_DETAILS,
                context=context,
                attributes={
                    **attributes,
                    sc.GEN_AI_INPUT_MESSAGES: input_messages(
                        inputs, self.redactor, metadata=self.metadata
                    ),
                    sc.GEN_AI_OUTPUT_MESSAGES: output,
                },
            )
