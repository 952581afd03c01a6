"""A minimal Model Context Protocol server on stdio, for end-to-end tests.

It speaks MCP's stdio transport (newline-delimited JSON-RPC 2.0) and offers two tools:
``lookup`` answers with text, ``explode`` answers with ``isError: true`` (a tool failure the
protocol reports as a result, not as a JSON-RPC error). Run: ``python -m tests.support.mcp_server``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["TOOLS", "handle", "main"]

#: The tools offered, as ``tools/list`` returns them.
TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup",
        "description": "Look a word up.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
    {
        "name": "explode",
        "description": "Always fails.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def _call(params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if name == "lookup":
        text = f"{arguments.get('word', '')}: a word"
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if name == "explode":
        return {"content": [{"type": "text", "text": "it exploded"}], "isError": True}
    return {"content": [{"type": "text", "text": f"no tool {name!r}"}], "isError": True}


def handle(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one JSON-RPC message (``None`` for a notification)."""
    if "id" not in message:
        return None
    method, params = message.get("method"), message.get("params") or {}
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hookscope-test-mcp", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = _call(params)
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    """Serve stdin → stdout until stdin closes."""
    for line in sys.stdin:
        if not line.strip():
            continue
        response = handle(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
