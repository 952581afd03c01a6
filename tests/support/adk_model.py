"""A Google ADK model that speaks OpenAI Chat Completions to the scripted model server.

ADK has no OpenAI-compatible model of its own without litellm; this ``BaseLlm`` turns an ADK
``LlmRequest`` into a Chat Completions request (non-streaming) and the reply into an
``LlmResponse`` with function calls and usage (adapted from ``shared/sdk-recipes``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class ScriptedChatLlm(BaseLlm):
    """``ScriptedChatLlm(model="scripted-model", base_url=server.base_url)``."""

    base_url: str = ""

    def _messages(self, request: LlmRequest) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        system = request.config.system_instruction if request.config else None
        if system:
            messages.append({"role": "system", "content": str(system)})
        for content in request.contents:
            texts, calls, results = [], [], []
            for part in content.parts or []:
                if part.text:
                    texts.append(part.text)
                if part.function_call:
                    call = part.function_call
                    calls.append(
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.args)},
                        }
                    )
                if part.function_response:
                    response = part.function_response
                    results.append(
                        {
                            "role": "tool",
                            "tool_call_id": response.id,
                            "content": json.dumps(response.response),
                        }
                    )
            if content.role == "model":
                message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
                if calls:
                    message["tool_calls"] = calls
                messages.append(message)
            else:
                messages.extend(results)
                if texts:
                    messages.append({"role": "user", "content": "\n".join(texts)})
        return messages

    def _tools(self, request: LlmRequest) -> list[dict[str, Any]]:
        tools = []
        for tool in (request.config.tools or []) if request.config else []:
            for declaration in getattr(tool, "function_declarations", None) or []:
                parameters = declaration.parameters_json_schema or (
                    declaration.parameters.model_dump(mode="json", exclude_none=True)
                    if declaration.parameters
                    else {"type": "object", "properties": {}}
                )
                tools.append(
                    {
                        "type": "function",
                        "function": {
                            "name": declaration.name,
                            "description": declaration.description or "",
                            "parameters": parameters,
                        },
                    }
                )
        return tools

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        body: dict[str, Any] = {"model": self.model, "messages": self._messages(llm_request)}
        tools = self._tools(llm_request)
        if tools:
            body["tools"] = tools
        async with httpx.AsyncClient(timeout=30) as client:
            reply = await client.post(self.base_url + "/v1/chat/completions", json=body)
            reply.raise_for_status()
        data = reply.json()
        message = data["choices"][0]["message"]
        parts = [types.Part(text=message["content"])] if message.get("content") else []
        for call in message.get("tool_calls") or []:
            parts.append(
                types.Part(
                    function_call=types.FunctionCall(
                        id=call["id"],
                        name=call["function"]["name"],
                        args=json.loads(call["function"]["arguments"] or "{}"),
                    )
                )
            )
        usage = data.get("usage") or {}
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            model_version=self.model,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=usage.get("prompt_tokens", 0),
                candidates_token_count=usage.get("completion_tokens", 0),
                total_token_count=usage.get("total_tokens", 0),
            ),
        )
