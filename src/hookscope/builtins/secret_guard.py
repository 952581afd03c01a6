"""An output guardrail that blocks model responses carrying secrets (seed 003's guardrails).

The patterns are not ours: they are the regex-based detectors of Yelp's ``detect-secrets``
(AWS, Azure, GitHub, GitLab, Slack, Stripe, OpenAI, PyPI and npm tokens, JWTs, private keys,
basic-auth URLs …), a maintained, widely used source that tracks new token formats.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, Final, Literal

from hookscope.context import TurnContext
from hookscope.hooks import Hook
from hookscope.types import LlmResponse, ResponseDecision

__all__ = ["SecretGuard"]

#: detect-secrets detectors left out by default: a public IP address is no secret, and the
#: keyword and entropy detectors flag ordinary prose and code far too often for a guardrail.
_NOT_SECRETS: Final = frozenset({"Public IP (ipv4)"})
Action = Literal["block", "retry_with_feedback"]


def _detectors() -> dict[str, Any]:
    """Secret type → detector class, for detect-secrets' regex-based detectors."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError as error:  # pragma: no cover - a declared dependency
        raise ImportError(
            f"SecretGuard needs the detect-secrets package ({error}); pip install detect-secrets"
        ) from error
    mapping: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    return {kind: cls for kind, cls in mapping.items() if issubclass(cls, RegexBasedDetector)}


class SecretGuard(Hook):
    """Blocks a model response whose text or tool-call arguments carry a secret.

    The verdict names the kind of secret (``AWS Access Key``, ``Private Key`` …), never the
    secret itself. With ``action="retry_with_feedback"`` the model is asked again, told to
    leave the secret out.

    Args:
        secret_types: detect-secrets secret types to look for (e.g. ``{"AWS Access Key",
            "Private Key"}``); every regex-based type but public IPs by default.
        action: ``"block"`` or ``"retry_with_feedback"``.

    Example::

        runner = HookRunner([SecretGuard()])
        decision = await turn.llm_response(response)   # ResponseDecision.block(...) on a leak
    """

    def __init__(
        self, secret_types: Collection[str] | None = None, *, action: Action = "block"
    ) -> None:
        available = _detectors()
        if secret_types is None:
            chosen = sorted(t for t in available if t not in _NOT_SECRETS)
        else:
            if isinstance(secret_types, str) or not isinstance(secret_types, Iterable):
                raise ValueError(
                    f"SecretGuard: secret_types must be a collection of names, got "
                    f"{secret_types!r}; e.g. SecretGuard(secret_types={{'AWS Access Key'}})"
                )
            chosen = sorted(set(secret_types))
            unknown = [t for t in chosen if t not in available]
            if unknown or not chosen:
                raise ValueError(
                    f"SecretGuard: secret_types has unknown or no names {unknown!r}; choose "
                    f"from {', '.join(sorted(available))}"
                )
        if action not in ("block", "retry_with_feedback"):
            raise ValueError(
                f"SecretGuard: action is {action!r}; use 'block' or 'retry_with_feedback'"
            )
        self.action: Action = action
        self.secret_types: tuple[str, ...] = tuple(chosen)
        self._detectors = tuple((t, available[t]()) for t in chosen)

    def find(self, text: str) -> list[str]:
        """The secret types found in ``text``, in order of name."""
        return [
            secret_type
            for secret_type, detector in self._detectors
            if any(True for _ in detector.analyze_string(text))
        ]

    def on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> ResponseDecision | None:
        """Block (or retry) a response that carries a secret."""
        found = set(self.find(response.text)) if response.text else set()
        for call in response.tool_calls:
            for value in _strings(call.args):
                found.update(self.find(value))
        if not found:
            return None
        kinds = ", ".join(sorted(found))
        if self.action == "block":
            return ResponseDecision.block(
                f"the response carries a secret ({kinds}); blocked by SecretGuard"
            )
        return ResponseDecision.retry_with_feedback(
            f"Your response contained a secret ({kinds}). Answer again without it; refer to "
            "secrets by name, never by value."
        )


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` — mapping keys included — at any depth.

    Iterative, so no nesting is too deep to scan; each container is scanned once, so a
    structure that contains itself ends.
    """
    stack: list[Any] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, (Mapping, list, tuple, set, frozenset)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Mapping):
                for key, child in item.items():
                    stack.append(key if isinstance(key, str) else str(key))
                    stack.append(child)
            else:
                stack.extend(item)
