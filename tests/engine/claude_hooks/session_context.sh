#!/bin/sh
# SessionStart: plain stdout becomes context for the model.
cat > /dev/null
echo "Team rule: every file ends with a newline (TEAM-RULE-42)."
