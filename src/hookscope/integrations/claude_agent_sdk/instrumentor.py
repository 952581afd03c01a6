"""``ClaudeAgentSdkInstrumentor``: every Claude agent started afterwards is governed.

Wraps the two places options reach the CLI: ``ClaudeSDKClient.__init__`` (multi-turn clients)
and ``InternalClient.process_query`` (what ``query()`` runs), so both are governed whichever
name the application imported them under. Options already governed with :func:`govern` are
left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from hookscope.integrations._kit import Governor, KitInstrumentor, Target

__all__ = ["INSTRUMENTS", "ClaudeAgentSdkInstrumentor"]

#: The claude-agent-sdk versions this instrumentation is written against.
INSTRUMENTS: Final = ("claude-agent-sdk >= 0.2.180, < 0.3",)


class ClaudeAgentSdkInstrumentor(KitInstrumentor):
    """Govern and trace every ``ClaudeSDKClient`` and ``query()`` created while instrumented.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None,
    ask="confirm")``: ``runner`` governs (else the hooks ``HOOKSCOPE_CONFIG`` names, else none:
    trace only); an ``OTelHook`` from the providers is added when the runner has none.
    ``uninstrument()`` restores the SDK; sessions already running stay governed until they end.
    """

    sdk = "claude-agent-sdk"
    instruments = INSTRUMENTS
    default_agent_name = "claude-agent-sdk"
    _ask: Any = "confirm"

    def _instrument(self, **kwargs: Any) -> None:
        self._ask = kwargs.get("ask") or "confirm"
        super()._instrument(**kwargs)

    def targets(self, governor: Governor) -> Iterable[Target]:
        """``ClaudeSDKClient.__init__`` and ``InternalClient.process_query``."""
        from claude_agent_sdk import ClaudeAgentOptions

        from hookscope.integrations.claude_agent_sdk import stream
        from hookscope.integrations.claude_agent_sdk.govern import governed_by, wire
        from hookscope.integrations.claude_agent_sdk.values import PROVIDER

        governor.provider = PROVIDER
        ask = self._ask

        def governed(options: Any) -> Any:
            if options is None:
                options = ClaudeAgentOptions()
            if not isinstance(options, ClaudeAgentOptions) or governed_by(options) is not None:
                return options
            native = ask == "native" and options.can_use_tool is not None
            return wire(options, governor, ask="native" if native else "confirm")

        def client_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            result = wrapped(*args, **kwargs)
            instance.options = governed(instance.options)
            return result

        def process_query(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            if "options" in kwargs:
                kwargs = {**kwargs, "options": governed(kwargs["options"])}
            elif len(args) >= 2:
                args = (args[0], governed(args[1]), *args[2:])
            return wrapped(*args, **kwargs)

        stream.install()
        return (
            ("claude_agent_sdk.client", "ClaudeSDKClient.__init__", client_init),
            ("claude_agent_sdk._internal.client", "InternalClient.process_query", process_query),
        )
