"""The instrumentor (``opentelemetry-instrument`` entry point ``antigravity``) and plain hooks.

The package docstring (:mod:`hookscope.integrations.antigravity`) says which to use when.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from hookscope.integrations._kit.govern import Governor
from hookscope.integrations._kit.instrumenting import (
    CONFIG_ENV,
    KitInstrumentor,
    Target,
    runner_from_env,
)
from hookscope.integrations.antigravity.sessions import Tracker
from hookscope.runner import HookRunner

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_AGENT_NAME",
    "INSTRUMENTS",
    "NEST_SESSIONS_ENV",
    "AntigravityInstrumentor",
    "govern",
    "hooks",
    "nest_sessions_from_env",
    "runner_from_env",
]

logger = logging.getLogger("hookscope.integrations.antigravity")

#: The google-antigravity versions this instrumentation is written against.
INSTRUMENTS: Final = ("google-antigravity >= 0.1.22, < 0.2",)
#: Environment variable: nest agent sessions started inside a span (see ``nest_sessions``).
NEST_SESSIONS_ENV: Final = "HOOKSCOPE_NEST_SESSIONS"
#: The ``gen_ai.agent.name`` reported when none is given (the SDK's Agent has no name).
DEFAULT_AGENT_NAME: Final = "antigravity"


class AntigravityInstrumentor(KitInstrumentor):
    """Instrument google-antigravity so every ``Agent`` session is traced by hookscope.

    ``instrument()`` accepts:

    * ``runner``: a :class:`~hookscope.runner.HookRunner` that governs every agent created
      afterwards (its decide hooks and policy run as SDK hooks, beside the agent's own; see
      :func:`govern`) and whose observers see the sessions (an OTelHook built from the
      providers joins them when the runner has none). Without it, ``HOOKSCOPE_CONFIG``
      names a hook file (``hookscope.toml``, ``pyproject.toml``, a Claude Code settings
      file) to build one from; without either, agents are only traced;
    * ``tracer_provider``, ``meter_provider``: where spans and metrics go (the global
      providers when omitted);
    * ``agent_name``: the ``gen_ai.agent.name`` of every session (default ``"antigravity"``);
    * ``observers``: further :class:`~hookscope.runner.DispatchObserver` objects to drive
      alongside the OTelHook;
    * ``nest_sessions``: ``True`` to record an agent session that starts while a span is
      current (an agent run inside another agent's tool) as a child of that span, in its
      trace; by default it starts a trace of its own, linked to that span. When omitted,
      ``HOOKSCOPE_NEST_SESSIONS`` (``true``/``false``) decides.

    Sessions, turns, tool calls (Python tools and harness tools), policy decisions (rules
    evaluated in Python and static rules the harness enforces), error recoveries by
    ``on_tool_error`` hooks, interactions, compactions and the duration of every SDK hook are
    recorded. Only SDK objects created while instrumented are observed; ``uninstrument()``
    removes every wrapper and ends the spans of sessions still open.
    """

    sdk = "google-antigravity"
    instruments = INSTRUMENTS
    default_agent_name = DEFAULT_AGENT_NAME
    missing_target_note = ", but telemetry that depends on it will be missing"

    _tracker: Tracker | None = None
    _governs = False
    _options: dict[str, Any] = {}  # noqa: RUF012 (replaced per instrument(), never mutated)
    _unobserve: tuple[Callable[[], None], ...] = ()

    def _instrument(self, **kwargs: Any) -> None:
        nest = kwargs.get("nest_sessions")
        if nest is None:
            nest = nest_sessions_from_env()
        elif not isinstance(nest, bool):
            raise TypeError(f"nest_sessions must be True or False, got {nest!r}")
        runner = kwargs.get("runner")
        if runner is None:
            runner = runner_from_env()  # a broken file governs too: it denies everything
        self._governs = runner is not None
        self._options = {**kwargs, "nest_sessions": nest}
        super()._instrument(**{**kwargs, "runner": runner})

    def targets(self, governor: Governor) -> list[Target]:
        """The SDK functions to wrap; sessions report to ``governor.runner``'s observers."""
        from hookscope.integrations.antigravity.wrappers import Adapter

        options, runner = self._options, governor.runner
        extra: Sequence[object] = tuple(options.get("observers") or ())
        self._unobserve = tuple(runner.observe(observer) for observer in extra)
        agent_name: str = options.get("agent_name") or DEFAULT_AGENT_NAME
        tracker = Tracker(runner, agent_name, nest_sessions=options["nest_sessions"])
        self._tracker = tracker
        # Without a runner of the user's, the instrumentor only observes: it adds no SDK hook
        # (a pre-tool hook would change what the harness calls back).
        return Adapter(tracker, governing=runner if self._governs else None).targets()

    def _uninstrument(self, **kwargs: Any) -> None:
        tracker, self._tracker = self._tracker, None
        if tracker is not None:  # sessions still open end now, while observers still listen
            tracker.active = False
            tracker.close_all()
        super()._uninstrument(**kwargs)
        unobserve, self._unobserve = self._unobserve, ()
        for stop in unobserve:
            stop()


def nest_sessions_from_env() -> bool:
    """``HOOKSCOPE_NEST_SESSIONS``: ``true``/``1``/``yes`` or ``false``/``0``/``no``/unset.

    Another value is logged as an error (it must not break ``opentelemetry-instrument``, which
    would then instrument nothing) and sessions are not nested.
    """
    raw = os.environ.get(NEST_SESSIONS_ENV, "").strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw not in ("", "false", "0", "no"):
        logger.error(
            "%s=%r is not a boolean; sessions are not nested. Set it to true or false.",
            NEST_SESSIONS_ENV,
            raw,
        )
    return False


def _observing(observers: Sequence[object]) -> HookRunner:
    """A runner with no hooks whose notifier tells ``observers``: the adapter reports the
    SDK's own hooks through it, as the runner reports its own."""
    runner = HookRunner()
    for observer in observers:
        runner.observe(observer)
    return runner


def hooks(
    agent_name: str | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> list[Any]:
    """Plain google-antigravity hooks that record hookscope telemetry, without patching.

    Pass them in the agent's config, after your own hooks:
    ``LocalAgentConfig(hooks=[*mine, *hooks("coder")])``.

    They hook session start and end, ``pre_turn``, ``post_turn``, ``post_tool_call`` and
    ``on_tool_error``, so the harness calls back Python for each of those events. None of them
    changes a verdict: the ``pre_turn`` hook, a decide hook to the SDK, always returns
    ``HookResult(allow=True)``, and the ``on_tool_error`` hook returns ``None`` (no recovery).

    Order matters where the SDK ends a chain early. It runs every session, ``post_turn`` and
    ``post_tool_call`` hook, but ends ``pre_turn`` at the first hook that denies and
    ``on_tool_error`` at the first that returns a value or raises; hooks after that point do
    not run. After your hooks, these record nothing false but miss a turn your hook denied
    and a call whose error your hook recovered (the harness does not pass a failed call to
    ``post_tool_call`` hooks either). Before them, that turn is recorded as allowed (completed
    when the next turn starts, failed if the session ends first) and that error as not
    recovered.

    No ``pre_tool_call`` decide hook is included: registering one would change what the
    harness calls back and would satisfy the SDK's check that write tools have a safety
    policy. Tool calls are therefore recorded when they finish, without durations and as
    allowed by no rule; calls a policy denied are not recorded. Use
    :class:`AntigravityInstrumentor` for the full picture.

    Args:
        agent_name: ``gen_ai.agent.name`` of the sessions (default ``"antigravity"``).
        tracer_provider: Where spans go; the global provider when ``None``.
        meter_provider: Where metrics go; the global provider when ``None``.

    Returns:
        Hook objects for ``hooks=[...]`` of any google-antigravity agent config.
    """
    from hookscope.integrations.antigravity.plain_hooks import plain_hooks
    from hookscope.telemetry.otel_hook import OTelHook

    name = agent_name or DEFAULT_AGENT_NAME
    otel = OTelHook(tracer_provider, meter_provider, agent_name=name)
    return plain_hooks(Tracker(_observing([otel]), name))


def govern(config: Any, runner: HookRunner, *, agent_name: str | None = None) -> Any:
    """``config`` governed by ``runner``: a copy whose hooks run the runner's.

    The runner's ``pre_tool_call`` hooks and policy decide every tool call (deny, modified
    arguments, ask through its ``on_interaction`` hooks) after the agent's own hooks and
    before the SDK's policies, which still apply; its ``pre_turn`` hooks can block a prompt;
    its ``on_tool_error`` hooks recover failed calls (the recovery's value, as text, is what
    the model reads); its other hooks run at the matching SDK points. Use the copy exactly as
    the original: ``Agent(govern(config, runner))``.

    Telemetry goes to the runner's observers (put an ``OTelHook`` in it). While
    :class:`AntigravityInstrumentor` is instrumented, its wrappers record the sessions and the
    runner's hooks appear in its dispatches; otherwise the governing hooks record sessions,
    turns and tool calls themselves, as :func:`hooks` does (a call the SDK's static rules deny
    after the runner allowed it then ends with its turn, as interrupted).

    Args:
        config: A ``LocalAgentConfig`` (or any google-antigravity agent config).
        runner: The :class:`~hookscope.runner.HookRunner` that governs.
        agent_name: ``gen_ai.agent.name`` of the sessions it records itself (default
            ``"antigravity"``).

    Raises:
        TypeError: ``runner`` is no ``HookRunner``.
    """
    from hookscope.integrations.antigravity.governing import (
        Standalone,
        governing_hooks,
        runner_of,
    )

    present = list(getattr(config, "hooks", None) or ())
    if runner_of(present) is runner:
        return config.model_copy()  # governed already: govern twice, run once
    tracker = Tracker(runner, agent_name or DEFAULT_AGENT_NAME)
    hooks = [*present, *governing_hooks(runner, Standalone(tracker))]
    return config.model_copy(update={"hooks": hooks})
