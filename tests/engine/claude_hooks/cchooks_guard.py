#!/usr/bin/env python3
"""A PreToolUse guard written with the cchooks SDK (it validates its input: transcript_path,
session_id, cwd … must be there, else it exits 1)."""

from cchooks import PreToolUseContext, create_context

context = create_context()
assert isinstance(context, PreToolUseContext)
command = str(context.tool_input.get("command", ""))
if command.startswith("sudo"):
    context.output.deny("sudo is not allowed in this project")
else:
    context.output.allow("checked by cchooks_guard")
