#!/bin/sh
# A Stop hook (shell + jq): keeps a copy of the transcript, and the first time the agent
# wants to stop, asks it to go on.
input=$(cat)
mkdir -p "$CLAUDE_PROJECT_DIR/hook-log"
transcript=$(printf '%s' "$input" | jq -r .transcript_path)
jq -c 'select(.type == "user" and (.message.content | type) == "string") | .message.content' \
    "$transcript" > "$CLAUDE_PROJECT_DIR/hook-log/prompts-in-transcript.txt"
printf '%s\n' "$input" | jq -c '{active: .stop_hook_active, last: .last_assistant_message}' \
    >> "$CLAUDE_PROJECT_DIR/hook-log/stops.jsonl"
if [ "$(printf '%s' "$input" | jq -r .stop_hook_active)" = "false" ]; then
    jq -n '{decision: "block", reason: "Not done yet: also create DONE.txt"}'
fi
