"""Ready-made hooks (DESIGN §8): logging, tiers, limits, budgets, retries, audit, recovery …

Each is small, configured by keyword, validates its options when built (``ValueError`` naming
the option), keeps per-session state in the session's context (never in the hook object, so
one instance serves any number of concurrent sessions) and reports under its class name.
"""

from hookscope.builtins.answers import AutoAnswer
from hookscope.builtins.approvals import Approvals
from hookscope.builtins.audit import AuditLog, AuditLogError
from hookscope.builtins.cost import CostBudget
from hookscope.builtins.limits import TokenBudget, TurnLimit, TurnRateLimit
from hookscope.builtins.logs import LoggingHook
from hookscope.builtins.secret_guard import SecretGuard
from hookscope.builtins.tools import (
    AllowAll,
    RecoverErrors,
    RetryLoopDetector,
    SlowToolWarning,
    ToolTiers,
)

__all__ = [
    "AllowAll",
    "Approvals",
    "AuditLog",
    "AuditLogError",
    "AutoAnswer",
    "CostBudget",
    "LoggingHook",
    "RecoverErrors",
    "RetryLoopDetector",
    "SecretGuard",
    "SlowToolWarning",
    "TokenBudget",
    "ToolTiers",
    "TurnLimit",
    "TurnRateLimit",
]
