"""The zero-code way: a ``BaseInstrumentor`` base every SDK's instrumentor shares.

A subclass names the SDK (:attr:`KitInstrumentor.sdk`), its supported versions
(:attr:`KitInstrumentor.instruments`) and what to wrap (:meth:`KitInstrumentor.targets`, given
the :class:`~hookscope.integrations._kit.govern.Governor` built from ``instrument()``'s
arguments). The base resolves the runner (``runner=``, else the hooks of ``HOOKSCOPE_CONFIG``,
else none; a config file that cannot be loaded governs too: it denies everything), adds an
``OTelHook`` built from the providers when the runner has none, wraps each target on its own
(one the installed SDK lacks costs only itself), unwraps all on ``uninstrument()`` and never
wraps twice. Sessions already running stay governed and traced until they end: the
``OTelHook`` the base added is removed once the last of them has ended, so their spans end as
OpenTelemetry users expect of spans started before an instrumentor was removed.
"""

from __future__ import annotations

import importlib
import logging
import os
import weakref
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar, final

# The upstream module starts with a file-level ``# type: ignore``: mypy sees no
# BaseInstrumentor in it (and a subclass of Any), hence the ignore.
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from hookscope.context import OperationContext, TurnContext
from hookscope.hooks import Hook
from hookscope.integrations._kit.govern import Governor
from hookscope.runner import HookRunner
from hookscope.types import HookResult, ToolCall

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "CONFIG_ENV",
    "KitInstrumentor",
    "SessionBinder",
    "Target",
    "env_flag",
    "resolve_runner",
    "runner_from_env",
]

logger = logging.getLogger("hookscope.integrations")

#: Environment variable: the hooks (and policy) file a zero-code instrumentor loads.
CONFIG_ENV: Final = "HOOKSCOPE_CONFIG"

#: What to wrap: module, dotted attribute path inside it, and the wrapt wrapper.
Target = tuple[str, str, Callable[..., Any]]

K = TypeVar("K")
V = TypeVar("V")


def resolve_runner(
    runner: HookRunner | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    agent_name: str | None = None,
) -> tuple[HookRunner, Callable[[], None]]:
    """The runner an instrumentor governs with, and how to undo what was added to it.

    ``runner`` when given, else :func:`runner_from_env` (the hooks of ``HOOKSCOPE_CONFIG``;
    a runner that denies everything when that file cannot be loaded), else a runner that only
    traces. An ``OTelHook`` built from the providers is added when the runner has none.

    Raises:
        TypeError: ``runner`` is not a ``HookRunner``.
    """
    from hookscope.telemetry.otel_hook import OTelHook

    if runner is None:
        runner = runner_from_env() or HookRunner()
    elif not isinstance(runner, HookRunner):
        raise TypeError(f"runner= must be a hookscope.HookRunner, got {type(runner).__name__}")
    if any(isinstance(o, OTelHook) for o in runner.notifier.observers):
        return runner, _nothing
    undo = runner.observe(OTelHook(tracer_provider, meter_provider, agent_name=agent_name))
    return runner, undo


def runner_from_env() -> HookRunner | None:
    """A runner with the hooks of the file ``HOOKSCOPE_CONFIG`` names; ``None`` when unset.

    A file that cannot be loaded must not leave agents ungoverned, and raising would not stop
    them either: ``opentelemetry-instrument`` logs an instrumentor's exception and runs the
    program without it. So the error is logged, naming the file and the problem, and the
    runner denies every turn and every tool call with that message (fail closed).
    """
    path = os.environ.get(CONFIG_ENV, "").strip()
    if not path:
        return None
    from hookscope.engine import load

    try:
        return HookRunner(load(path))
    except Exception as error:
        logger.error(
            "%s=%s cannot be loaded, so hookscope denies every turn and tool call until it "
            "is fixed: %s",
            CONFIG_ENV,
            path,
            error,
        )
        return HookRunner([_DenyEverything(f"{CONFIG_ENV}={path} cannot be loaded: {error}")])


class _DenyEverything(Hook):
    """What governs agents when their hook file is broken: nothing runs."""

    name = "hookscope.config_error"

    def __init__(self, message: str) -> None:
        self.message = message

    async def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult:
        return HookResult.deny(self.message)

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
        return HookResult.deny(self.message)


def _nothing() -> None:
    return None


def env_flag(name: str, default: bool = False) -> bool:
    """A boolean environment variable: ``true/1/yes`` or ``false/0/no``; unset → ``default``.

    Another value is logged as an error and reads as ``default`` (it must not stop
    ``opentelemetry-instrument``, which would then instrument nothing).
    """
    raw = os.environ.get(name, "").strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw in ("false", "0", "no"):
        return False
    if raw:
        logger.error(
            "%s=%r is not a boolean; using %s. Set it to true or false.", name, raw, default
        )
    return default


@final
class SessionBinder(Generic[K, V]):
    """SDK object → hookscope state, by identity and weakly.

    Works for unhashable objects (dataclass options) too: entries are keyed by ``id()`` and
    dropped when the object is collected, so a recycled id never finds a stale entry.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], V]] = {}

    def get(self, obj: K) -> V | None:
        """The state bound to ``obj``, if any."""
        entry = self._entries.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1]

    def bind(self, obj: K, value: V) -> V:
        """Bind ``value`` to ``obj`` (replacing any) and return it."""
        key = id(obj)
        entries = self._entries

        def forget(_: object, key: int = key) -> None:
            entry = entries.get(key)
            if entry is not None and entry[0]() is None:
                del entries[key]

        entries[key] = (weakref.ref(obj, forget), value)
        return value

    def pop(self, obj: K) -> V | None:
        """Unbind ``obj``; its state, if any."""
        value = self.get(obj)
        if value is not None:
            del self._entries[id(obj)]
        return value

    def values(self) -> Iterable[V]:
        """Every bound state whose object is alive."""
        return [v for ref, v in self._entries.values() if ref() is not None]


class KitInstrumentor(BaseInstrumentor):
    """Base of hookscope's SDK instrumentors.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None)``:
    every agent of the SDK created afterwards is governed by ``runner`` (see
    :func:`resolve_runner`). ``uninstrument()`` restores the SDK.

    Subclasses set :attr:`sdk` and :attr:`instruments` and implement :meth:`targets`.
    """

    #: The SDK's distribution name, for messages.
    sdk: ClassVar[str] = ""
    #: The supported versions, as requirement strings (``instrumentation_dependencies()``).
    instruments: ClassVar[tuple[str, ...]] = ()
    #: ``gen_ai.agent.name`` when ``instrument()`` is given none.
    default_agent_name: ClassVar[str] = ""
    #: Appended to the warning about a target the installed SDK lacks (what is lost).
    missing_target_note: ClassVar[str] = ""
    #: The governor of the current instrumentation, ``None`` when not instrumented.
    governor: Governor | None = None
    _wrapped: tuple[tuple[str, str], ...] = ()
    _undo: Callable[[], None] = staticmethod(_nothing)

    def instrumentation_dependencies(self) -> Collection[str]:
        """The instrumented package and versions, checked before ``instrument()`` wraps."""
        return self.instruments

    def targets(self, governor: Governor) -> Iterable[Target]:
        """What to wrap, with wrappers that govern through ``governor``."""
        raise NotImplementedError

    def _instrument(self, **kwargs: Any) -> None:
        agent_name = kwargs.get("agent_name") or self.default_agent_name or None
        runner, undo = resolve_runner(
            kwargs.get("runner"),
            kwargs.get("tracer_provider"),
            kwargs.get("meter_provider"),
            agent_name,
        )
        governor = Governor(runner, self.sdk, agent_name=agent_name)
        wrapped: list[tuple[str, str]] = []
        try:
            targets = list(self.targets(governor))
        except ImportError:  # an SDK whose modules moved: instrument nothing, break nothing
            self._cannot_instrument(kwargs.get("runner") is not None)
            undo()
            return
        for module, name, wrapper in targets:
            try:
                wrap_function_wrapper(module, name, wrapper)
            except Exception:
                logger.warning(
                    "hookscope could not instrument %s.%s (a %s version this instrumentation "
                    "does not know?); the rest is instrumented%s",
                    module,
                    name,
                    self.sdk,
                    self.missing_target_note,
                    exc_info=True,
                )
                continue
            wrapped.append((module, name))
        self.governor = governor
        self._wrapped = tuple(wrapped)
        self._undo = undo

    def _cannot_instrument(self, runner_given: bool) -> None:
        """Say that this SDK's modules are not where this instrumentation expects them.

        Raising would not stop the agents (``opentelemetry-instrument`` logs it and goes on),
        so they run ungoverned: when hooks or a policy were asked for (``runner=`` or
        ``HOOKSCOPE_CONFIG``) that is an error naming what to do, else a warning (only
        tracing is lost).
        """
        expected = ", ".join(self.instruments) or "a supported version"
        governed = runner_given or bool(os.environ.get(CONFIG_ENV, "").strip())
        if not governed:
            logger.warning(
                "hookscope cannot instrument this %s (expected %s); its agents run untraced",
                self.sdk,
                expected,
                exc_info=True,
            )
            return
        logger.error(
            "hookscope cannot instrument this %s (expected %s), so its agents run UNGOVERNED: "
            "no hook or policy checks their turns and tool calls. Install a supported %s "
            "version or upgrade hookscope.",
            self.sdk,
            expected,
            self.sdk,
            exc_info=True,
        )

    def _uninstrument(self, **kwargs: Any) -> None:
        for module_name, qualified in reversed(self._wrapped):
            owner_name, _, attribute = qualified.rpartition(".")
            owner: Any = importlib.import_module(module_name)
            for part in filter(None, owner_name.split(".")):
                owner = getattr(owner, part)
            unwrap(owner, attribute)
        self._wrapped = ()
        governor, self.governor = self.governor, None
        undo, self._undo = self._undo, _nothing
        if governor is None:
            undo()
            return
        runner = governor.runner

        def release() -> None:
            current = self.governor
            if current is not None and current.runner is runner and self._undo is _nothing:
                self._undo = undo  # instrumented again with this runner: its OTelHook serves on
            else:
                undo()

        # Sessions in flight keep their OTelHook until they end (their spans end, as spans
        # started before an OpenTelemetry instrumentor was removed do); new ones are not seen.
        governor.when_idle(release)
