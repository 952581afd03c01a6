"""HTTP hooks: Claude Code's ``type: "http"`` — the envelope is POSTed, the answer decides.

The endpoint receives the envelope (the JSON a command hook reads on stdin) as the request body
and answers with a verdict in the body, in any form a command prints on stdout (DESIGN §7).
A 2xx answer is read like a command's exit 0 (an empty body is no opinion); anything else —
another status, a connection error, a timeout, a malformed body — is a hook failure, which
fails closed on decide events unless the hook fails open (``failure="claude"``,
``onFailure: "continue"``).

Header values may name environment variables (``$TOKEN`` or ``${TOKEN}``), expanded only for
the names listed in ``allowedEnvVars``, as Claude Code does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from hookscope.context import HookContext
from hookscope.engine import _run
from hookscope.engine.claude import ClaudeNames, ClaudeOptions
from hookscope.engine.command import DEFAULT_TIMEOUT, CommandHook
from hookscope.engine.envelope import encode_envelope
from hookscope.hooks import HookEvent
from hookscope.runner import HookFailure

__all__ = ["HttpHook"]

_VARIABLE: Final = re.compile(r"\$\{(\w+)\}|\$(\w+)")
#: Bytes of an answer past which a run is a failure (as a command's stdout).
ANSWER_LIMIT: Final = 1024 * 1024


class HttpHook(CommandHook):
    """An HTTP endpoint as a hook (a Claude Code ``http`` handler).

    Args:
        event: The event the hook serves.
        url: The http(s) URL the envelope is POSTed to.
        headers: Extra request headers; ``$VAR`` in a value is expanded for the names in
            ``allowed_env_vars`` (others become empty).
        allowed_env_vars: Environment variables header values may use.
        name: Used in messages and telemetry; the URL's host if empty.
        timeout: Seconds the request may take; ``None`` for no limit.
        fail_open: When the request fails, go on as if it allowed.
        matcher: Which tool calls the hook sees (tool events only).
        project_dir: The envelope's ``cwd``.
        claude: How a hook from a Claude Code settings file runs.

    Raises:
        ValueError: the URL is not http(s).
    """

    hook_type = "http"  # type: ignore[assignment]  # the same protocol, another transport

    def __init__(
        self,
        event: HookEvent,
        *,
        url: str,
        headers: Mapping[str, str] | None = None,
        allowed_env_vars: Sequence[str] = (),
        name: str = "",
        timeout: float | None = DEFAULT_TIMEOUT,
        fail_open: bool = False,
        matcher: Any = None,
        project_dir: str | os.PathLike[str] | None = None,
        claude: ClaudeOptions | None = None,
    ) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be an http(s) URL, got {url!r}")
        if headers is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise ValueError("headers must map header names to strings")
        self.event = event  # type: ignore[misc]  # one class serves every event
        self.url = url
        self.headers = dict(headers or {})
        self.allowed_env_vars = frozenset(allowed_env_vars)
        self.command = None
        self.args = None
        # The host only: a URL's path or query may carry a credential.
        self.name = name or f"http:{parts.hostname}"
        self.timeout = timeout
        self.fail_open = fail_open
        self.matcher = matcher
        self.project_dir = str(Path(project_dir or os.getcwd()).resolve())
        self.tool_names = {}
        self.claude = claude
        self.names = claude.names if claude is not None else ClaudeNames()
        self.executable = "http"
        self._argv = ()
        self._background = set()
        self._ran_in = set()
        self.parallel_group = None
        self.dedupe_key = ("http", url, self.event)
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)

    def __repr__(self) -> str:
        return f"<HttpHook {self.name!r} on {self.event}>"

    def _expand(self, value: str) -> str:
        def variable(found: re.Match[str]) -> str:
            key = found.group(1) or found.group(2)
            return os.environ.get(key, "") if key in self.allowed_env_vars else ""

        return _VARIABLE.sub(variable, value)

    async def _run_program(self, context: HookContext, data: Any) -> tuple[int, bytes, bytes]:
        """POST the envelope; a 2xx answer reads as exit status 0 with the body as stdout."""
        try:
            payload = encode_envelope(self.envelope(context, data))
        except Exception as error:
            raise HookFailure(f"cannot be given its input ({type(error).__name__})") from None
        _run.record(_run.SERVER_ADDRESS, self._host)
        _run.record(_run.SERVER_PORT, self._port)
        headers = {key: self._expand(value).strip() for key, value in self.headers.items()}
        headers["Content-Type"] = "application/json"
        import httpx  # here: hookscope.engine stays light for agents without http hooks

        body = bytearray()
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream("POST", self.url, content=payload, headers=headers) as response,
            ):
                _run.record(_run.PROCESS_EXIT_CODE, response.status_code)
                if not 200 <= response.status_code < 300:
                    raise HookFailure(f"the hook endpoint answered HTTP {response.status_code}")
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > ANSWER_LIMIT:  # the cap trips at once, not after the body
                        raise HookFailure(
                            f"the hook endpoint answered more than {ANSWER_LIMIT} bytes"
                        )
        except httpx.HTTPError as error:
            # The type only: an error's text may carry the URL, and with it a credential.
            raise HookFailure(f"cannot reach the hook endpoint ({type(error).__name__})") from None
        return 0, bytes(body), b""
