#!/bin/sh
# A plugin's guard: found through ${CLAUDE_PLUGIN_ROOT}; denies chmod 777 with a JSON verdict.
command=$(jq -r '.tool_input.command // ""')
case "$command" in
  *"chmod 777"*)
    jq -n --arg root "$CLAUDE_PLUGIN_ROOT" '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "chmod 777 is refused by the safety plugin"}}'
    ;;
esac
