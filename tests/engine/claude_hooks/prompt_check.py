#!/usr/bin/env -S uv run --script
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""A UserPromptSubmit hook run by `uv run --script`: blocks prompts with secrets, adds
context to the others."""

import json
import sys

event = json.load(sys.stdin)
if "password" in event["prompt"].lower():
    print(json.dumps({"decision": "block", "reason": "Prompts must not carry passwords"}))
else:
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "The project codename is BLUEBIRD-7.",
                }
            }
        )
    )
