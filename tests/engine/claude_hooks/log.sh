#!/bin/sh
# Logs every hook event it sees, one JSON line each (shell + jq, as many Claude Code users do).
mkdir -p "$CLAUDE_PROJECT_DIR/hook-log"
jq -c '{event: .hook_event_name, tool: .tool_name, command: .tool_input.command, has_transcript: (.transcript_path | type == "string" and length > 0), permission_mode: .permission_mode}' \
    >> "$CLAUDE_PROJECT_DIR/hook-log/events.jsonl"
