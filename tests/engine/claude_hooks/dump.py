#!/usr/bin/env python3
"""Appends every envelope it receives to hook-log/envelopes.jsonl (and checks its transcript)."""

import json
import os
import sys

event = json.load(sys.stdin)
event["transcript_is_a_file"] = os.path.isfile(event.get("transcript_path") or "")
log = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hook-log", "envelopes.jsonl")
os.makedirs(os.path.dirname(log), exist_ok=True)
with open(log, "a") as out:
    out.write(json.dumps(event) + "\n")
