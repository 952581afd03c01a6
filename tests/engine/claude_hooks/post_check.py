#!/usr/bin/env python3
"""A PostToolUse hook: a tool output with a warning sends feedback to the model."""

import json
import sys

event = json.load(sys.stdin)
if "WARN" in json.dumps(event.get("tool_response")):
    print(json.dumps({"decision": "block", "reason": "The command printed a warning: fix it"}))
