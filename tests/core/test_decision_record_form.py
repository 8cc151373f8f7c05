"""The decision record's JCS form: the fast path writes the same bytes as the JCS implementation."""

from __future__ import annotations

import random
import string
from typing import Any

import rfc8785

from openwop_bridge.core.decision_record import canonical, digest

_CHARS = string.printable[:95]  # printable ASCII, the quote and the backslash among them


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice(
            [
                None,
                True,
                False,
                rng.randint(-(2**53) + 1, 2**53 - 1),
                "".join(rng.choices(_CHARS, k=rng.randint(0, 12))),
            ]
        )
    if roll < 0.65:
        return {
            "".join(rng.choices(_CHARS, k=rng.randint(0, 6))): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))
        }
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def test_plain_values_are_written_as_jcs_writes_them() -> None:
    rng = random.Random(20261202)
    for _ in range(5_000):
        value = _value(rng)
        assert canonical(value) == rfc8785.dumps(value), value


def test_other_values_go_through_jcs() -> None:
    for value in (
        {"amount": 100.0, "rate": 1e21, "tiny": 5e-324},
        {"name": "Zoë", "emoji": "\U0001f600", "ctl": "a\u0001b\nc"},
        {"\u00e9": 1, "e": 2, "\U0001f600": 3, "\uffff": 4},
    ):
        assert canonical(value) == rfc8785.dumps(value), value


def test_integers_beyond_doubles_are_written_as_doubles() -> None:
    big = 2**64 + 1
    assert canonical({"n": big}) == rfc8785.dumps({"n": float(big)}) == b'{"n":18446744073709552000}'
    assert digest({"n": big}) == digest({"n": float(big)})
