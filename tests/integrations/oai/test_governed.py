"""govern(agent, runner) against the real openai-agents runner and the scripted model server.

Each multi-turn scenario runs three times (``attempt``): the same session must give the same
span tree and the same metric totals every time.
"""

from __future__ import annotations

import pytest
from agents import Runner, SQLiteSession

from hookscope import HookRunner
from hookscope.integrations.openai_agents import end_session, govern
from hookscope.policy import deny, enforce
from hookscope.testing import Recording
from tests.integrations.oai.support import (
    ATTEMPTS,
    RAN,
    add,
    agent,
    call,
    confirm_transfers,
    delete_file,
    fetch,
    lines,
    no_shell,
    offline_fallback,
    sandbox_paths,
    shell,
    small_amounts_only,
    totals,
    transfer,
    write_note,
)
from tests.support.model_server import ScriptedModelServer

GOVERNED_SCRIPT = {
    "Add two": [call("add", a=2, b=3), {"text": "2+3={tool_result}"}],
    "Delete the password file": [
        call("delete_file", path="/etc/passwd"),
        {"text": "delete: {tool_result}"},
    ],
    "List the files": [call("shell", command="ls"), {"text": "shell: {tool_result}"}],
    "Write a note": [call("write_note", path="notes.txt", text="hi"), {"text": "{tool_result}"}],
}


def governed_runner(rec: Recording) -> HookRunner:
    return HookRunner(
        [
            rec.hook,
            no_shell,
            sandbox_paths,  # before the policy: it decides on the arguments the tool gets
            enforce([deny("delete_file", reason="deleting files is not allowed")]),
        ]
    )


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_a_session_of_four_turns_allows_denies_and_modifies_calls(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(GOVERNED_SCRIPT) as server:
        governed = govern(
            agent(server.base_url, tools=[add, delete_file, shell, write_note]),
            governed_runner(rec),
        )
        session = SQLiteSession(f"conversation-{attempt}")
        answers = []
        for prompt in GOVERNED_SCRIPT:
            result = await Runner.run(governed, prompt, session=session)
            answers.append(result.final_output)
        await end_session(session)
    assert answers == [
        "2+3=5",
        "delete: denied by policy rule 'deny:delete_file': deleting files is not allowed",
        "shell: shell is off limits in this workspace",
        "wrote /sandbox/notes.txt",
    ]
    assert RAN == ["add 2 3", "write_note /sandbox/notes.txt"]
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow by=PolicyEnforcer",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool delete_file ERROR tool=denied decision=deny by=PolicyEnforcer",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool shell ERROR tool=denied decision=deny by=no_shell",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool write_note tool=succeeded decision=allow by=PolicyEnforcer",
        "    chat scripted-model in=100 out=10",
    ]
    assert totals(rec, "hookscope.tool.calls", "gen_ai.tool.name", "hookscope.tool.outcome") == {
        ("add", "succeeded"): 1,
        ("delete_file", "denied"): 1,
        ("shell", "denied"): 1,
        ("write_note", "succeeded"): 1,
    }
    assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {("completed",): 4}
    assert totals(rec, "hookscope.sessions", "gen_ai.agent.name") == {("assistant",): 1}
    assert totals(rec, "gen_ai.client.token.usage", "gen_ai.token.type") == {
        ("input",): 8,
        ("output",): 8,
    }
    spans = {span.name: span for span in rec.spans}
    session_span = spans["session assistant"].attributes or {}
    assert session_span["session.id"] == f"conversation-{attempt}"
    assert session_span["gen_ai.conversation.id"] == f"conversation-{attempt}"


FAILING_SCRIPT = {
    "Fetch the page": [call("fetch", url="https://example.com"), {"text": "{tool_result}"}],
    "Fetch the cached page": [
        call("fetch", url="https://example.com/cached"),
        {"text": "{tool_result}"},
    ],
    "Send a small transfer": [call("transfer", amount=50), {"text": "{tool_result}"}],
    "Send a large transfer": [call("transfer", amount=500), {"text": "{tool_result}"}],
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_failing_recovered_and_asked_calls_in_one_session(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(FAILING_SCRIPT) as server:
        guarded = govern(
            agent(server.base_url, tools=[fetch, transfer]),
            HookRunner([rec.hook, confirm_transfers, small_amounts_only, offline_fallback]),
        )
        session = SQLiteSession(f"failing-{attempt}")
        failed = await Runner.run(guarded, "Fetch the page", session=session)
        recovered = await Runner.run(guarded, "Fetch the cached page", session=session)
        approved = await Runner.run(guarded, "Send a small transfer", session=session)
        rejected = Runner.run_streamed(guarded, "Send a large transfer", session=session)
        async for _ in rejected.stream_events():
            pass
        await end_session(session)
    assert failed.final_output == "An error occurred while running the tool. Please try again."
    assert recovered.final_output == "cached page"
    assert approved.final_output == "sent 50"
    assert rejected.final_output == "send 500? (the user answered 'deny')"
    assert RAN == ["fetch https://example.com", "fetch https://example.com/cached", "transfer 50"]
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool fetch ERROR tool=failed decision=allow error=ConnectionError",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool fetch tool=recovered decision=allow error=ConnectionError",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool transfer tool=succeeded decision=ask_user by=confirm_transfers",
        "    chat scripted-model in=100 out=10",
        # run_streamed: the SDK asks Chat Completions for no usage unless
        # ModelSettings(include_usage=True)
        "  invoke_agent assistant turn=completed in=0 out=0",
        "    chat scripted-model in=0 out=0",
        "    execute_tool transfer ERROR tool=denied decision=ask_user by=confirm_transfers",
        "    chat scripted-model in=0 out=0",
    ]
    assert totals(rec, "hookscope.tool.errors", "error.type", "hookscope.recovery.recovered") == {
        ("ConnectionError", False): 1,
        ("ConnectionError", True): 1,
    }
    assert totals(
        rec, "hookscope.policy.decisions", "hookscope.policy.decision", "hookscope.policy.outcome"
    ) == {("allow", "allowed"): 2, ("ask_user", "allowed"): 1, ("ask_user", "denied"): 1}


DELEGATING_SCRIPT = {
    "I have a billing question": [
        call("transfer_to_billing"),
        call("add", a=40, b=2),
        {"text": "billing: {tool_result}"},
    ],
    "Ask the researcher": [call("researcher", input="Research this"), {"text": "{tool_result}"}],
    "Research this": [
        call("add", a=1, b=1),
        call("shell", command="rm -rf /"),
        {"text": "r={tool_result}"},
    ],
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_a_handoff_and_an_agent_as_tool_are_invoke_agent_runs(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(DELEGATING_SCRIPT) as server:
        billing = agent(server.base_url, "billing", tools=[add])
        researcher = agent(server.base_url, "researcher", tools=[add, shell])
        triage = agent(
            server.base_url,
            "triage",
            tools=[researcher.as_tool("researcher", "Researches a question.")],
            handoffs=[billing],
        )
        governed = govern(triage, HookRunner([rec.hook, no_shell]))
        session = SQLiteSession(f"delegating-{attempt}")
        handed = await Runner.run(governed, "I have a billing question", session=session)
        delegated = await Runner.run(governed, "Ask the researcher", session=session)
        await end_session(session)
    assert handed.final_output == "billing: 42"
    assert handed.last_agent.name == "billing"
    assert delegated.final_output == "r=shell is off limits in this workspace"
    assert RAN == ["add 40 2", "add 1 1"]
    assert lines(rec) == [
        "session triage session=completed",
        "  invoke_agent triage turn=completed in=300 out=30",
        "    chat scripted-model in=100 out=10",
        "    invoke_agent billing turn=completed",
        "      chat scripted-model in=100 out=10",
        "      execute_tool add tool=succeeded decision=allow",
        "      chat scripted-model in=100 out=10",
        # the SDK adds the nested run's usage to the delegating run's
        "  invoke_agent triage turn=completed in=500 out=50",
        "    chat scripted-model in=100 out=10",
        "    execute_tool researcher tool=succeeded decision=allow",
        "      invoke_agent researcher turn=completed",
        "        chat scripted-model in=100 out=10",
        "        execute_tool add tool=succeeded decision=allow",
        "        chat scripted-model in=100 out=10",
        "        execute_tool shell ERROR tool=denied decision=deny by=no_shell",
        "        chat scripted-model in=100 out=10",
        "    chat scripted-model in=100 out=10",
    ]
    assert totals(rec, "hookscope.turns", "gen_ai.agent.name", "hookscope.turn.outcome") == {
        ("triage", "completed"): 2,
        ("billing", "completed"): 1,
        ("researcher", "completed"): 1,
    }


async def test_an_agent_another_runner_governs_runs_as_a_session_of_its_own(
    rec: Recording,
) -> None:
    with ScriptedModelServer(DELEGATING_SCRIPT) as server:
        researcher = govern(
            agent(server.base_url, "researcher", tools=[add, shell]), HookRunner([rec.hook])
        )
        triage = govern(
            agent(
                server.base_url,
                "triage",
                tools=[researcher.as_tool("researcher", "Researches a question.")],
            ),
            HookRunner([rec.hook, no_shell]),
        )
        result = await Runner.run(triage, "Ask the researcher")
    # the researcher's own runner governs its calls: no_shell (triage's) does not apply there
    assert result.final_output == "r=ran"
    assert RAN == ["add 1 1", "shell rm -rf /"]
    assert lines(rec) == [
        "session triage session=completed",
        "  invoke_agent triage turn=completed in=500 out=50",
        "    chat scripted-model in=100 out=10",
        "    execute_tool researcher tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
        # a trace of its own (linked to the tool's span); the nested run shares the
        # delegating run's usage object (the SDK's accounting): 1 + 3 model calls by then
        "session researcher session=completed",
        "  invoke_agent researcher turn=completed in=400 out=40",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
        "    execute_tool shell tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
    ]
