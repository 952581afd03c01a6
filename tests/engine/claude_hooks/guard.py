#!/usr/bin/env python3
"""A PreToolUse guard in plain Python, as Claude Code users write them: exit 2 blocks."""

import json
import os
import sys

event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
log = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hook-log", "guard.log")
os.makedirs(os.path.dirname(log), exist_ok=True)
with open(log, "a") as out:
    out.write(f"{event['hook_event_name']} {event['tool_name']} {command}\n")
if "rm -rf" in command:
    print("Recursive deletes are blocked by the project guard", file=sys.stderr)
    sys.exit(2)
