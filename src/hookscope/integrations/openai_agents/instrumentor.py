"""``OpenAIAgentsInstrumentor`` (``opentelemetry-instrument`` entry point ``openai_agents``).

The run seams (:mod:`.runs`) are installed once, by whoever needs them first: ``govern()``
(for good: a governed agent may run at any time) or ``instrument()`` (until ``uninstrument()``,
when no governed agent needs them). They pass every run of an agent nobody governs through
untouched, so installing them twice never doubles a turn.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, ClassVar, Final

from wrapt import wrap_function_wrapper

from hookscope.integrations._kit import Governor, KitInstrumentor, Target
from hookscope.integrations._kit.unwrapping import unwrap_path
from hookscope.integrations.openai_agents.governed import SDK, Binding
from hookscope.integrations.openai_agents.runs import (
    instrumented,
    run_seam,
    set_instrumented,
    streamed_seam,
    streaming_loop_seam,
)

__all__ = ["GOVERN_OWNER", "INSTRUMENTS", "OpenAIAgentsInstrumentor", "ensure_run_seams"]

#: The openai-agents versions this instrumentation is written against.
INSTRUMENTS: Final = ("openai-agents >= 0.24, < 0.25",)
#: The owner of the run seams that ``govern()`` installs for good.
GOVERN_OWNER: Final = "govern"
_INSTRUMENTOR_OWNER: Final = "instrumentor"

#: module, attribute path, wrapper: where a run begins (``Runner.run`` → ``AgentRunner.run``;
#: ``run_streamed`` → ``AgentRunner.run_streamed`` → the ``start_streaming`` task).
_SEAMS: Final[tuple[tuple[str, str, Any], ...]] = (
    ("agents.run", "AgentRunner.run", run_seam),
    ("agents.run", "AgentRunner.run_streamed", streamed_seam),
    ("agents.run", "start_streaming", streaming_loop_seam),
)
_owners: set[str] = set()
_lock = threading.Lock()


def ensure_run_seams(owner: str) -> None:
    """Install the run seams (once) on behalf of ``owner``."""
    with _lock:
        if not _owners:
            for module, name, wrapper in _SEAMS:
                wrap_function_wrapper(module, name, wrapper)
        _owners.add(owner)


def release_run_seams(owner: str) -> None:
    """``owner`` no longer needs the run seams; the last owner removes them."""
    with _lock:
        if owner not in _owners:
            return
        _owners.discard(owner)
        if _owners:
            return
        for module, name, _ in reversed(_SEAMS):
            unwrap_path(module, name)


class OpenAIAgentsInstrumentor(KitInstrumentor):
    """Govern and trace every openai-agents run, with no change to the application.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None,
    ask="hookscope")``: every ``Runner.run`` / ``run_streamed`` / ``run_sync`` afterwards runs
    its agent (and the agents it hands off to or uses as tools) governed by ``runner`` — or
    by the hooks and policy of ``HOOKSCOPE_CONFIG``, or, with neither, only traced.
    ``uninstrument()`` restores the SDK: runs started afterwards are not governed (runs in
    flight finish governed; end sessions still open with ``end_session``); agents governed
    with ``govern()`` stay governed. The SDK's own tracing is left as the application set it.
    """

    sdk: ClassVar[str] = SDK
    instruments: ClassVar[tuple[str, ...]] = INSTRUMENTS
    binding: Binding | None = None

    def targets(self, governor: Governor) -> Iterable[Target]:
        """Nothing to wrap per instrumentation: the run seams are shared (see the module)."""
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        super()._instrument(**kwargs)
        governor = self.governor
        if governor is None:
            return
        governor.provider = "openai"
        self.binding = Binding(governor, kwargs.get("agent_name"), kwargs.get("ask", "hookscope"))
        ensure_run_seams(_INSTRUMENTOR_OWNER)
        set_instrumented(self.binding)

    def _uninstrument(self, **kwargs: Any) -> None:
        binding, self.binding = self.binding, None
        if binding is not None and instrumented() is binding:
            set_instrumented(None)
        release_run_seams(_INSTRUMENTOR_OWNER)
        super()._uninstrument(**kwargs)

    async def end_sessions(self) -> None:
        """End the sessions this instrumentation opened that are still open."""
        if self.binding is not None:
            await self.binding.end_all()
