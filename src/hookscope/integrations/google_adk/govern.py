"""``govern(runner | app | plugins, runner)`` and ``GoogleAdkInstrumentor``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any, ClassVar, Final, TypeVar

from hookscope.integrations._kit import Governor, Target
from hookscope.integrations._kit.keyed import DEFAULT_IDLE_S
from hookscope.integrations._kit.keyed_govern import GovernedSet, KeyedInstrumentor
from hookscope.integrations.google_adk.plugin import (
    PLUGIN_NAME,
    AskMode,
    Governed,
    HookscopePlugin,
)
from hookscope.runner import HookRunner

__all__ = ["INSTRUMENTS", "GoogleAdkInstrumentor", "end_sessions", "govern"]

#: The google-adk versions this adapter is written against (the ``google-adk`` extra).
INSTRUMENTS: Final = ("google-adk >= 2.13, < 3",)
_SDK: Final = "google-adk"

T = TypeVar("T")

_ALL: Final = GovernedSet(_SDK, Governed)


def govern(
    target: T,
    runner: HookRunner,
    *,
    agent_name: str | None = None,
    ask: AskMode = "hookscope",
    session_idle_s: float | None = DEFAULT_IDLE_S,
) -> T:
    """Govern and trace a Google ADK agent with ``runner``: adds hookscope's ``BasePlugin``.

    Args:
        target: A ``Runner`` (its plugins gain hookscope's; a cancelled run's turn ends
            cancelled), an ``App`` (before a runner is built from it) or a plugins list.
            Returned as it is.
        runner: The hooks, policy and observers (an ``OTelHook`` traces).
        agent_name: ``gen_ai.agent.name`` (the root agent's name when ``None``).
        ask: ``"native"`` asks through ADK's tool confirmation (``request_confirmation``: the
            run pauses until the user's ``adk_request_confirmation`` answer); ``"hookscope"``
            uses ``on_interaction`` hooks.
        session_idle_s: An ADK session with no run for this long is ended when another run
            starts (``None``: only ``runner.close()`` or :func:`end_sessions`).

    Raises:
        TypeError: ``target`` is none of these, or ``runner`` is not a ``HookRunner``.
    """
    from google.adk.apps import App
    from google.adk.runners import Runner

    governed = _ALL.govern(runner, agent_name=agent_name, ask=ask, session_idle_s=session_idle_s)
    if isinstance(target, Runner):
        existing = target.plugin_manager.get_plugin(PLUGIN_NAME)
        if isinstance(existing, HookscopePlugin):  # governing again swaps the runner
            existing.governed = governed
            return target
        plugin = HookscopePlugin(governed)
        target.plugin_manager.register_plugin(plugin)
        original = target.run_async

        def run_async(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            return _ending_cancelled(plugin, original(*args, **kwargs))

        target.run_async = run_async  # type: ignore[method-assign,assignment]
        return target
    if isinstance(target, App):
        target.plugins.append(HookscopePlugin(governed))
        return target
    if isinstance(target, list):
        target.append(HookscopePlugin(governed))
        return target
    raise TypeError(
        f"govern needs a google.adk Runner, App or plugins list, got {type(target).__name__}"
    )


async def _ending_cancelled(
    plugin: HookscopePlugin, events: AsyncIterator[Any]
) -> AsyncIterator[Any]:
    """A run's events; a cancelled or abandoned run ends its turn cancelled (ADK tells no
    plugin then)."""
    task = asyncio.current_task()
    try:
        async for event in events:
            yield event
    except (asyncio.CancelledError, GeneratorExit) as error:
        await plugin.end_cancelled(task, asyncio.CancelledError())
        raise error from None


async def end_sessions() -> int:
    """End every open ADK session hookscope tracks (``on_session_end`` runs); how many.

    ``Runner.close()`` ends its own; ADK's session service has no other end of a session.
    """
    return await _ALL.end_sessions()


class GoogleAdkInstrumentor(KeyedInstrumentor[Governed]):
    """The zero-code way: every ADK ``Runner`` built afterwards carries hookscope's plugin.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None,
    ask="hookscope", session_idle_s=1800)``; runners passed to :func:`govern` keep their own
    runner. ``uninstrument()`` restores ``Runner``; plugins already added stay until their
    runner closes.
    """

    sdk: ClassVar[str] = _SDK
    instruments: ClassVar[tuple[str, ...]] = INSTRUMENTS
    governed_set = _ALL

    def targets(self, governor: Governor) -> Iterable[Target]:
        governed = self.governed(governor)

        def init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            result = wrapped(*args, **kwargs)
            # An AgentTool's inner runner inherits the plugin; govern() may have added one.
            if instance.plugin_manager.get_plugin(PLUGIN_NAME) is None:
                instance.plugin_manager.register_plugin(HookscopePlugin(governed))
            return result

        def run_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            plugin = instance.plugin_manager.get_plugin(PLUGIN_NAME)
            events = wrapped(*args, **kwargs)
            if not isinstance(plugin, HookscopePlugin) or "run_async" in vars(instance):
                return events  # not ours, or govern() already ends its cancelled runs
            return _ending_cancelled(plugin, events)

        yield ("google.adk.runners", "Runner.__init__", init)
        yield ("google.adk.runners", "Runner.run_async", run_async)
