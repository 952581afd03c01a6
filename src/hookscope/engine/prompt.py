"""Prompt hooks: one model call decides.

The hook fills its prompt template (``$ARGUMENTS`` becomes the envelope JSON), POSTs one
non-streaming ``{base_url}/chat/completions`` request to any OpenAI-compatible endpoint and
expects the model to answer ``{"ok": true}`` or ``{"ok": false, "reason": "..."}``. ``ok:
false`` denies a call or blocks a turn with the reason; any other answer, an HTTP error or a
timeout is a hook failure (decide events fail closed unless ``on_failure = "allow"``).

An answer is read up to :data:`ANSWER_LIMIT` bytes; one that says it is longer, or turns out
longer, fails the run the moment it does. A user and password in ``base_url`` are sent as
basic auth, never as part of the URL (which httpx logs at INFO).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from hookscope._reader import InputError, read_json
from hookscope.context import HookContext
from hookscope.engine import _run
from hookscope.engine.envelope import Verdict, build_envelope, encode_envelope, event_result
from hookscope.hooks import CategoryHook, HookEvent
from hookscope.runner import HookFailure
from hookscope.types import HookResult, ToolCall

if TYPE_CHECKING:
    import httpx

__all__ = ["ANSWER_LIMIT", "DEFAULT_PROMPT_TIMEOUT", "PLACEHOLDER", "PromptHook"]

#: Replaced by the envelope JSON in a prompt template; appended when the template lacks it.
PLACEHOLDER: Final = "$ARGUMENTS"
#: Seconds a prompt hook may take when its configuration names no timeout.
DEFAULT_PROMPT_TIMEOUT: Final = 30.0
#: Bytes of a judge's answer past which the run fails (a verdict is a few hundred bytes).
ANSWER_LIMIT: Final = 1024 * 1024
_SYSTEM: Final = (
    "You are a hook in an AI agent's lifecycle. Judge the event you are given. Answer with one "
    'JSON object and nothing else: {"ok": true} to let it proceed, or {"ok": false, '
    '"reason": "..."} to stop it, saying why.'
)
_FENCE: Final = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class PromptHook(CategoryHook):
    """A model call as a hook, for any event.

    Args:
        event: The event the hook serves.
        prompt: The template; ``$ARGUMENTS`` is replaced by the envelope JSON.
        model: The model name sent in the request.
        base_url: The endpoint's base URL (``https://api.example/v1``); the hook POSTs
            ``{base_url}/chat/completions``.
        api_key_env: The environment variable holding the API key (sent as a bearer token);
            no key is sent when ``None``.
        name: Used in messages and telemetry; ``prompt:{model}`` if empty.
        timeout: Seconds the call may take (enforced by the runner); ``None`` for no limit.
        fail_open: When the call fails, go on as if it allowed.
        matcher: Which tool calls the hook sees (tool events only).
        tool_names: Agent tool name → the name the prompt should see.

    Raises:
        ValueError: an empty prompt or model, or a base URL that is not http(s).
    """

    hook_type = "prompt"

    def __init__(
        self,
        event: HookEvent,
        *,
        prompt: str,
        model: str,
        base_url: str,
        api_key_env: str | None = None,
        name: str = "",
        timeout: float | None = DEFAULT_PROMPT_TIMEOUT,
        fail_open: bool = False,
        matcher: Any = None,
        tool_names: dict[str, str] | None = None,
    ) -> None:
        for label, value in (("prompt", prompt), ("model", model)):
            if not (isinstance(value, str) and value.strip()):
                raise ValueError(f"a prompt hook needs a non-empty {label}, got {value!r}")
        parts: SplitResult | None = None
        hostname: str | None = None
        try:
            parts = urlsplit(base_url) if isinstance(base_url, str) else None
            hostname = None if parts is None else parts.hostname
        except ValueError:  # a malformed port or IPv6 address
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not hostname:
            from hookscope.redaction import mask_url

            raise ValueError(
                "base_url must be an http(s) URL such as https://api.openai.com/v1, "
                f"got {mask_url(base_url)!r}"
            )
        #: A user and password from base_url, sent as basic auth (kept out of the URL).
        self._auth: tuple[str, str] | None = None
        if parts.username is not None or parts.password is not None:
            self._auth = (unquote(parts.username or ""), unquote(parts.password or ""))
            netloc = parts.netloc.rpartition("@")[2]
            parts = parts._replace(netloc=netloc)
            base_url = urlunsplit(parts)
        self.event = event  # type: ignore[misc]  # one class serves every event
        self.prompt = prompt
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.name = name or f"prompt:{model}"
        self.timeout = timeout
        self.fail_open = fail_open
        self.matcher = matcher
        self.tool_names = dict(tool_names or {})
        self._host = hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)

    def __repr__(self) -> str:
        return f"<PromptHook {self.name!r} on {self.event}>"

    def render(self, envelope_json: str) -> str:
        """The prompt for one run: the template with ``$ARGUMENTS`` filled in."""
        if PLACEHOLDER in self.prompt:
            return self.prompt.replace(PLACEHOLDER, envelope_json)
        return f"{self.prompt}\n\n{envelope_json}"

    def _headers(self) -> dict[str, str]:
        if self.api_key_env is None:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise HookFailure(f"environment variable {self.api_key_env} (api_key_env) is not set")
        return {"Authorization": f"Bearer {key}"}

    async def run(self, context: HookContext, data: Any) -> Any:
        """Ask the model about ``data``; return the event's result.

        Raises:
            HookFailure: the call failed or the answer is not ``{"ok", "reason"}``.
        """
        event: HookEvent = self.event
        try:
            envelope = encode_envelope(build_envelope(event, context, data, self.tool_names))
        except Exception as error:  # a value that cannot be shown: this hook failed, loudly
            raise HookFailure(f"cannot be given its input ({type(error).__name__})") from None
        body = {
            "model": self.model,
            "stream": False,
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": self.render(envelope.decode())},
            ],
        }
        # The run's span is an execute_hook span, not a chat span: no gen_ai.operation.name,
        # which span consumers (and the demo's timeline) read as "this span is a model call".
        for key, value in (
            (_run.GEN_AI_REQUEST_MODEL, self.model),
            (_run.SERVER_ADDRESS, self._host),
            (_run.SERVER_PORT, self._port),
        ):
            _run.record(key, value)
        headers = self._headers()
        # Imported here: hookscope.engine stays light for agents without prompt hooks.
        import httpx

        try:
            # One client per run: a client's pool is bound to the loop it first ran on.
            async with (
                httpx.AsyncClient(timeout=self.timeout, auth=self._auth) as client,
                client.stream(
                    "POST", f"{self.base_url}/chat/completions", json=body, headers=headers
                ) as response,
            ):
                if response.status_code != 200:
                    raise HookFailure(f"the model endpoint answered HTTP {response.status_code}")
                answer = await _read_capped(response)
        except httpx.HTTPError as error:
            # The type only: an error's text may carry the URL, and with it a credential.
            raise HookFailure(f"cannot reach the model endpoint ({type(error).__name__})") from None
        ok, reason = self._answer(answer)
        call = data if isinstance(data, ToolCall) else None
        verdict = Verdict("allow") if ok else Verdict("deny", reason)
        result = event_result(event, verdict, self.name, call)
        if type(result) is HookResult:  # the judge's verdict, recorded as an evaluation
            result = dataclasses.replace(result, score=1.0 if ok else 0.0)
        return result

    def _answer(self, answer: bytes) -> tuple[bool, str]:
        try:
            completion = read_json(answer, "the answer", max_bytes=ANSWER_LIMIT)
            choice = completion["choices"][0]
            content = choice["message"]["content"]
        except (InputError, ValueError, KeyError, IndexError, TypeError):
            raise HookFailure("the model endpoint's answer is not a chat completion") from None
        if isinstance(completion.get("model"), str):
            _run.record(_run.GEN_AI_RESPONSE_MODEL, completion["model"])
        if isinstance(choice.get("finish_reason"), str):
            _run.record(_run.GEN_AI_RESPONSE_FINISH_REASONS, choice["finish_reason"])
        usage = completion.get("usage")
        if isinstance(usage, dict):
            for key, field in (
                (_run.GEN_AI_USAGE_INPUT_TOKENS, "prompt_tokens"),
                (_run.GEN_AI_USAGE_OUTPUT_TOKENS, "completion_tokens"),
            ):
                if type(usage.get(field)) is int:
                    _run.record(key, usage[field])
        text = content.strip() if isinstance(content, str) else ""
        fenced = _FENCE.match(text)  # models often wrap JSON in a code fence
        if fenced:
            text = fenced.group(1)
        try:
            verdict = read_json(text, "the model's verdict", max_bytes=ANSWER_LIMIT)
        except InputError:
            verdict = None
        if not isinstance(verdict, dict) or type(verdict.get("ok")) is not bool:
            raise HookFailure('the model did not answer {"ok": true|false, "reason": "..."}')
        reason = verdict.get("reason")
        return verdict["ok"], reason if isinstance(reason, str) else ""


async def _read_capped(response: httpx.Response) -> bytes:
    """The body of ``response``, failing as soon as it is known to pass :data:`ANSWER_LIMIT`."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > ANSWER_LIMIT:
        raise HookFailure(f"the model endpoint answered more than {ANSWER_LIMIT} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > ANSWER_LIMIT:
            raise HookFailure(f"the model endpoint answered more than {ANSWER_LIMIT} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
