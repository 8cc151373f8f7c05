"""What a person asked to rule on an unsure decision is told: the decision itself, and how sure the agent was."""

from __future__ import annotations

from openwop_bridge.core.kinds import LOW_CONFIDENCE


def test_the_prompt_shows_the_decision_and_the_confidence() -> None:
    data = {"agentId": "support-supervisor", "threshold": 0.7, "observed": 0.45, "decision": {"route": "billing"}}
    prompt = LOW_CONFIDENCE.prompt(data)
    assert '{"route": "billing"}' in prompt
    assert "45%" in prompt and "70%" in prompt and "support-supervisor" in prompt


def test_a_long_decision_is_shortened_in_the_prompt() -> None:
    data = {"agentId": "a", "threshold": 0.7, "observed": 0.1, "decision": {"text": "x" * 5000}}
    prompt = LOW_CONFIDENCE.prompt(data)
    assert len(prompt) < 400 and "…" in prompt


def test_a_decision_that_is_plain_text_reads_as_text() -> None:
    data = {"agentId": "a", "threshold": 0.7, "observed": 0.5, "decision": "refund the order"}
    assert "refund the order" in LOW_CONFIDENCE.prompt(data)
    assert '"refund the order"' not in LOW_CONFIDENCE.prompt(data)
