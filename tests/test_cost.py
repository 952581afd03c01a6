"""Cost in currency (DESIGN §11): prices, gen_ai.usage.cost on spans, counters, CostBudget."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from hookscope import HookRunner
from hookscope.builtins import CostBudget
from hookscope.engine import ConfigError, load
from hookscope.telemetry import configure
from hookscope.telemetry.cost import PriceError, Pricer, current_pricer, set_prices
from hookscope.testing import recording
from hookscope.types import ChatResponse, LlmRequest, LlmResponse, Usage


@pytest.fixture(autouse=True)
def no_prices() -> Iterator[None]:
    """Every test starts and ends with no user price table installed."""
    set_prices(None)
    yield
    set_prices(None)


def reference(model: str, usage: Usage, provider: str | None = None) -> float:
    """What genai-prices itself says the call costs."""
    calculated = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_creation_tokens,
        ),
        model,
        provider_id=provider,
    )
    return float(calculated.total_price)


def test_a_user_table_prices_fresh_cached_and_output_tokens() -> None:
    pricer = Pricer({"m": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}})
    usage = Usage(10_000, 2_000, cache_read_tokens=4_000, cache_creation_tokens=1_000)
    # (5,000 fresh * 3 + 4,000 * 0.3 + 1,000 * 3.75 + 2,000 * 15) / 1e6
    assert pricer.price(None, "m", usage) == pytest.approx(0.04995, abs=1e-12)
    assert Pricer({"m": {"input": 1, "output": 2}}).price(None, "m", Usage(1000, 0, 500)) == (
        pytest.approx(0.001, abs=1e-12)  # cache reads at the input price when none is given
    )


@pytest.mark.parametrize(
    ("provider", "model", "usage"),
    [
        ("openai", "gpt-4o", Usage(1000, 200, cache_read_tokens=100)),
        ("anthropic", "claude-sonnet-4-5", Usage(5000, 300, 1000, 2000)),
        ("anthropic", "claude-sonnet-4-5", Usage(250_000, 300, 1000, 2000)),  # the upper tier
        (None, "gemini-2.5-pro", Usage(300_000, 200, cache_read_tokens=100)),
        ("gcp.gemini", "gemini-2.5-flash", Usage(1000, 10)),  # our provider name, theirs "google"
    ],
)
def test_genai_prices_data_gives_what_genai_prices_computes(
    provider: str | None, model: str, usage: Usage
) -> None:
    expected = reference(model, usage, None if provider == "gcp.gemini" else provider)
    assert expected > 0
    assert Pricer().price(provider, model, usage) == pytest.approx(expected, rel=1e-12)


def test_unknown_models_cost_nothing_and_the_table_wins() -> None:
    assert Pricer().price("openai", "no-such-model-xyz", Usage(10, 10)) is None
    assert Pricer().price(None, None, Usage(10, 10)) is None
    mine = Pricer({"gpt-4o": {"input": 1.0, "output": 1.0}})
    assert mine.price("openai", "gpt-4o", Usage(1_000_000, 0)) == pytest.approx(1.0)
    assert Pricer(use_genai_prices=False).price("openai", "gpt-4o", Usage(10, 10)) is None


def test_bad_price_tables_are_refused_naming_every_problem(tmp_path: Path) -> None:
    table = {"a": {"input": -1, "output": 2}, "b": {"input": "cheap", "output": 1}, "c": {"in": 1}}
    with pytest.raises(PriceError) as refused:
        Pricer(table)
    assert str(refused.value) == (
        "prices.a.input: must be a non-negative number of USD per million tokens, got -1; "
        "prices.b.input: must be a non-negative number of USD per million tokens, got 'cheap'; "
        "prices.c: unknown key(s) ['in']; allowed: input, output, cache_read, cache_write; "
        "prices.c: needs input (USD per million input tokens); "
        "prices.c: needs output (USD per million output tokens)"
    )
    with pytest.raises(ConfigError) as caught:
        configure(prices={"m": {"input": 1, "output": float("nan")}}, set_global=False)
    assert caught.value.problems == (
        "prices.m.output: must be a non-negative number of USD per million tokens, got nan",
    )
    path = tmp_path / "hookscope.toml"
    path.write_text("[prices.m]\ninput = 1\noutput = -2\n\n[prices.n]\ninput = true\noutput = 1\n")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert caught.value.problems == (
        "prices.m.output: must be a non-negative number of USD per million tokens, got -2",
        "prices.n.input: must be a non-negative number of USD per million tokens, got True",
    )
    assert current_pricer().table == {}  # nothing applied from the bad file


def test_a_config_file_installs_its_prices(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text('[prices."my-model"]\ninput = 2.0\noutput = 8.0\n')
    assert len(load(path)) == 0
    assert current_pricer().price(None, "my-model", Usage(1_000_000, 1_000_000)) == 10.0


async def _session(runner: HookRunner, calls: list[tuple[str, Usage]], turns: int = 1) -> None:
    async with runner.session(agent_name="coder", provider="openai") as session:
        for _ in range(turns):
            async with session.turn("go") as turn:
                for model, usage in calls:
                    await turn.llm_request(LlmRequest(model))
                    await turn.llm_response(LlmResponse(model, text="ok", usage=usage))
                turn.respond(ChatResponse("done"))


def test_chat_turn_and_session_spans_carry_cost_and_counters_count_it() -> None:
    set_prices({"mine": {"input": 3.0, "output": 15.0}})
    with recording() as rec:
        calls = [
            ("mine", Usage(1000, 100)),  # 0.0045
            ("gpt-4o", Usage(2000, 50)),  # genai-prices
            ("secret-model", Usage(10, 10)),  # unpriced
        ]
        asyncio.run(_session(HookRunner([rec.hook]), calls, turns=2))
        gpt = reference("gpt-4o", Usage(2000, 50), "openai")
        spans = {span.name: dict(span.attributes or {}) for span in rec.spans}
        assert spans["chat mine"]["gen_ai.usage.cost"] == pytest.approx(0.0045)
        assert spans["chat mine"]["hookscope.cost.currency"] == "USD"
        assert spans["chat gpt-4o"]["gen_ai.usage.cost"] == pytest.approx(gpt)
        assert "gen_ai.usage.cost" not in spans["chat secret-model"]
        assert spans["invoke_agent coder"]["gen_ai.usage.cost"] == pytest.approx(0.0045 + gpt)
        assert spans["session coder"]["gen_ai.usage.cost"] == pytest.approx(2 * (0.0045 + gpt))
        assert spans["session coder"]["hookscope.cost.currency"] == "USD"
        points = rec.metric_points(["hookscope.cost", "hookscope.cost.unpriced"])
        cost = {dict(k)["gen_ai.request.model"]: v for k, v in points["hookscope.cost"].items()}
        assert cost == {"mine": pytest.approx(0.009), "gpt-4o": pytest.approx(2 * gpt)}
        assert points["hookscope.cost.unpriced"] == {
            frozenset(
                {
                    "gen_ai.agent.name": "coder",
                    "gen_ai.request.model": "secret-model",
                    "gen_ai.provider.name": "openai",
                }.items()
            ): 2
        }


def test_a_turn_without_model_calls_is_priced_from_its_usage() -> None:
    set_prices({"mine": {"input": 1.0, "output": 1.0}})
    with recording() as rec:

        async def run() -> None:
            runner = HookRunner([rec.hook])
            async with runner.session(agent_name="a") as session, session.turn("go") as turn:
                turn.respond(ChatResponse("done", "mine", Usage(500_000, 500_000)))

        asyncio.run(run())
        spans = {span.name: dict(span.attributes or {}) for span in rec.spans}
        assert spans["invoke_agent a"]["gen_ai.usage.cost"] == 1.0
        assert spans["session a"]["gen_ai.usage.cost"] == 1.0


def outcome_of(budget: CostBudget, spend: list[Usage], turns: int) -> list[Any]:
    """Per turn: whether it ran, and each model call's fate."""
    seen: list[Any] = []

    async def run() -> None:
        runner = HookRunner([budget])
        async with runner.session() as session:
            for _ in range(turns):
                async with session.turn("go") as turn:
                    if not turn.allowed:
                        seen.append(("blocked", turn.result.message))
                        continue
                    fates = []
                    for usage in spend:
                        decision = await turn.llm_request(LlmRequest("mine"))
                        if decision.action == "block":
                            fates.append(decision.message)
                            continue
                        await turn.llm_response(LlmResponse("mine", usage=usage))
                        fates.append("called")
                    seen.append(("ran", fates))

    asyncio.run(run())
    return seen


def test_cost_budget_blocks_the_next_turn_and_model_call() -> None:
    prices = {"mine": {"input": 1.0, "output": 0.0}}  # $1 per million input tokens
    one = Usage(1_000_000, 0)  # $1
    per_session = CostBudget(1.5, prices=prices)
    message = "cost budget exhausted: $2.0000 of $1.50 spent this session (CostBudget); "
    assert outcome_of(per_session, [one, one, one], 2) == [
        ("ran", ["called", "called", message + "no further model calls"]),
        ("blocked", message + "start a new session to go on"),
    ]
    per_turn = CostBudget(1.0, per="turn", prices=prices)
    turn_message = "cost budget exhausted: $1.0000 of $1.00 spent this turn (CostBudget); "
    assert outcome_of(per_turn, [one, one], 2) == [
        ("ran", ["called", turn_message + "no further model calls"]),
        ("ran", ["called", turn_message + "no further model calls"]),
    ]
    with pytest.raises(ValueError, match="per='week'"):
        CostBudget(1.0, per="week")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_usd"):
        CostBudget(0)


def test_a_daily_budget_spans_sessions() -> None:
    budget = CostBudget(1.0, per="day", prices={"mine": {"input": 1.0, "output": 0.0}})
    assert outcome_of(budget, [Usage(700_000, 0)], 1) == [("ran", ["called"])]
    later = outcome_of(budget, [Usage(700_000, 0)], 2)
    assert later[0] == ("ran", ["called"])
    assert later[1][0] == "blocked"
    assert "$1.4000 of $1.00 spent today (UTC)" in later[1][1]
    assert Decimal(str(round(budget.spent(_any_context()), 4))) == Decimal("1.4")


def _any_context() -> Any:
    from hookscope.context import SessionContext

    return SessionContext("s", "a")


def test_the_readme_price_table_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("## Cost\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    (toml,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    (tmp_path / "hookscope.toml").write_text(toml)
    load(tmp_path / "hookscope.toml")
    usage = Usage(2_000_000, 1_000_000, cache_read_tokens=1_000_000)
    # 1M fresh * 3 + 1M cached * 0.3 + 1M output * 15
    assert current_pricer().price(None, "my-finetune", usage) == pytest.approx(18.3)
