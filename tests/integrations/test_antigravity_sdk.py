"""google-antigravity values read as hookscope values: policy rules and answers."""

from __future__ import annotations

from typing import Any

import pytest
from google.antigravity import types
from google.antigravity.hooks import policy

from hookscope.integrations.antigravity.sdk_values import answers_of, rule_of
from hookscope.policy import Decision


def approve(call: types.ToolCall) -> bool:
    return True


@pytest.mark.parametrize(
    ("sdk_policy", "bucket"),
    [
        (policy.deny("run_command"), 0),
        (policy.ask_user("github/create_issue", handler=approve), 1),
        (policy.allow("view_file"), 2),
        (policy.deny("github/*"), 3),
        (policy.ask_user("github/*", handler=approve), 4),
        (policy.allow("github/*"), 5),
        (policy.deny_all(), 6),
        (policy.ask_user("*", handler=approve), 7),
        (policy.allow_all(), 8),
    ],
)
def test_sdk_rules_fall_in_hookscopes_nine_buckets(sdk_policy: Any, bucket: int) -> None:
    assert rule_of(sdk_policy).bucket == bucket


def test_a_target_hookscope_cannot_read_has_no_bucket() -> None:
    # The SDK takes "run_*" as a literal tool name; hookscope's rules reject such patterns.
    rule = rule_of(policy.deny("run_*"))

    assert (rule.name, rule.decision, rule.bucket) == ("run_*", Decision.DENY, None)


def test_no_responses_are_no_answers() -> None:
    assert answers_of(types.QuestionHookResult(responses=[])) is None


def test_only_skipped_responses_are_no_answers() -> None:
    skipped = types.QuestionHookResult(responses=[types.QuestionResponse(skipped=True)])

    assert answers_of(skipped) is None
