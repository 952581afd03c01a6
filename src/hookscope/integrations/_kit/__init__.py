"""The adapter kit: everything an SDK adapter needs that is not about the SDK (DESIGN §9, §10).

Private to :mod:`hookscope.integrations`: adapters import it, users do not.
"""

from hookscope.integrations._kit.calls import call_args, invoker, run_now
from hookscope.integrations._kit.correlate import LINGER_S, MAX_CLOSED, OpIndex
from hookscope.integrations._kit.govern import Governor, current_parent, run_tool
from hookscope.integrations._kit.guard import Guard
from hookscope.integrations._kit.identity import ambient_session_id, choose_session_id
from hookscope.integrations._kit.instrumenting import (
    CONFIG_ENV,
    KitInstrumentor,
    SessionBinder,
    Target,
    env_flag,
    resolve_runner,
    runner_from_env,
)
from hookscope.integrations._kit.lifecycle import Session, SubagentRun, Turn
from hookscope.integrations._kit.report import REPORTING, DispatchReport
from hookscope.integrations._kit.scopes import (
    CallInterrupted,
    DetachedScope,
    TurnInterrupted,
    ended_by,
)
from hookscope.integrations._kit.tool_ops import ToolOp
from hookscope.integrations._kit.verdicts import ToolVerdict, TurnVerdict

__all__ = [
    "CONFIG_ENV",
    "LINGER_S",
    "MAX_CLOSED",
    "REPORTING",
    "CallInterrupted",
    "DetachedScope",
    "DispatchReport",
    "Governor",
    "Guard",
    "KitInstrumentor",
    "OpIndex",
    "Session",
    "SessionBinder",
    "SubagentRun",
    "Target",
    "ToolOp",
    "ToolVerdict",
    "Turn",
    "TurnInterrupted",
    "TurnVerdict",
    "ambient_session_id",
    "call_args",
    "choose_session_id",
    "current_parent",
    "ended_by",
    "env_flag",
    "invoker",
    "resolve_runner",
    "run_now",
    "run_tool",
    "runner_from_env",
]
