"""Signed links and API keys (pure)."""

from __future__ import annotations

import pytest

from openwop_bridge.core.auth import KeyRing, Principal, load_keys_file, make_key, parse_key_spec
from openwop_bridge.core.errors import (
    ForbiddenError,
    InterruptExpiredError,
    InterruptNotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from openwop_bridge.core.tokens import TokenSigner, parse_secret_spec, token_expiry


def test_token_round_trip_and_subject() -> None:
    signer = TokenSigner({"k1": "s" * 32}, "k1")
    token = signer.mint("run_1", "gate", "int_1", 10_000, "resolve", subject="bob")
    claims = signer.verify(token, 5_000)
    assert (claims.run_id, claims.node_id, claims.interrupt_id, claims.intent, claims.kid, claims.subject) == (
        "run_1",
        "gate",
        "int_1",
        "resolve",
        "k1",
        "bob",
    )


def test_a_delegates_token_names_whose_place_its_subject_answers_in() -> None:
    signer = TokenSigner({"k1": "s" * 32}, "k1")
    claims = signer.verify(signer.mint("run_1", "gate", "int_1", 10_000, "resolve", "bob", "alice"), 5_000)
    assert (claims.subject, claims.on_behalf) == ("bob", "alice")
    assert signer.verify(signer.mint("run_1", "gate", "int_1", 10_000, "resolve", "bob"), 5_000).on_behalf is None
    # Without a subject there is nobody to stand in: no ``for`` is minted.
    nobody = signer.mint("run_1", "gate", "int_1", 10_000, "resolve", None, "alice")
    assert signer.verify(nobody, 5_000).on_behalf is None


def test_expired_tampered_and_unknown_key_tokens() -> None:
    signer = TokenSigner({"k1": "s" * 32}, "k1")
    token = signer.mint("run_1", "gate", "int_1", 10_000, "inspect")
    with pytest.raises(InterruptExpiredError):
        signer.verify(token, 10_000)
    head, mac = token.split(".")
    with pytest.raises(InterruptNotFoundError):
        signer.verify(head[:-2] + "AA." + mac, 0)
    with pytest.raises(InterruptNotFoundError):
        TokenSigner({"k2": "t" * 32}, "k2").verify(token, 0)
    with pytest.raises(InterruptNotFoundError):
        signer.verify("garbage", 0)


def test_rotation_overlap() -> None:
    old = TokenSigner({"k1": "s" * 32}, "k1")
    token = old.mint("r", "n", "i", 10_000, "resolve")
    rotated = TokenSigner({"k1": "s" * 32, "k2": "t" * 32}, "k2")
    assert rotated.verify(token, 0).kid == "k1"
    assert rotated.verify(rotated.mint("r", "n", "i", 10_000, "resolve"), 0).kid == "k2"


def test_expiry_is_capped_by_the_interrupt_deadline() -> None:
    assert token_expiry(1_000, None) == 1_000 + 30 * 60 * 1000
    assert token_expiry(1_000, 5_000) == 5_000


def test_secret_spec() -> None:
    assert parse_secret_spec("main:abcdefabcdefabcdefab") == ("main", "abcdefabcdefabcdefab")
    kid, secret = parse_secret_spec("a-long-enough-secret")
    assert secret == "a-long-enough-secret" and len(kid) == 8
    with pytest.raises(ValidationError):
        parse_secret_spec("short")


def test_key_spec_grammar() -> None:
    key = parse_key_spec("carol=secret-key-1:runs:read,approvals:respond@acme+operator,reviewer")
    assert key.principal == Principal(
        "carol", "acme", frozenset({"runs:read", "approvals:respond"}), frozenset({"operator", "reviewer"})
    )
    plain = parse_key_spec("plain-key-12345")
    assert plain.principal.scopes == frozenset({"*"}) and plain.principal.tenant == "default"
    for misspelt in ("k-123456789:runs:frobnicate", "k-123456789:approval", "k-123456789:approvals:respnd"):
        with pytest.raises(ValidationError):
            parse_key_spec(misspelt)
    # A scope of its own namespace is for approval gates' requiredScope (RFC 0051's deploy:promote).
    deployer = parse_key_spec("dee=deploy-key-1:approvals:respond,deploy:promote")
    assert deployer.principal.has_scope("deploy:promote") and not deployer.principal.has_scope("deploy:rollback")


def test_scope_matching_and_act_as() -> None:
    p = Principal("x", scopes=frozenset({"runs:*"}))
    assert p.has_scope("runs:cancel") and not p.has_scope("approvals:respond")
    assert Principal("y", roles=frozenset({"operator"})).can_act_as
    assert Principal("z", scopes=frozenset({"approvals:act-as"})).can_act_as
    assert not Principal("w", scopes=frozenset({"approvals:respond"})).can_act_as


def test_keyring_and_keys_file(tmp_path) -> None:
    path = tmp_path / "keys.json"
    path.write_text('[{"key": "file-key-123", "principal": "dee", "tenant": "t1", "roles": ["admin"]}]')
    ring = KeyRing(load_keys_file(path))
    assert ring.authenticate("Bearer file-key-123").id == "dee"
    for header in (None, "Basic abc", "Bearer nope-nope-nope", "Bearer "):
        with pytest.raises(UnauthenticatedError):
            ring.authenticate(header)


def test_derived_keys_follow_the_signing_keys_and_reveal_neither_secret_nor_link() -> None:
    old = TokenSigner({"k1": "s" * 32}, "k1")
    rotated = TokenSigner({"k1": "s" * 32, "k2": "t" * 32}, "k2")
    retired = TokenSigner({"k2": "t" * 32}, "k2")
    [k1] = old.derived_keys("mcp request state")
    k2, k1_again = rotated.derived_keys("mcp request state")
    assert k1_again == k1 and k2 != k1  # the active key first; the previous one still there
    assert retired.derived_keys("mcp request state") == [k2]  # retiring drops it
    assert len(k1) == 32 and b"s" * 32 not in k1
    assert old.derived_keys("another use") != [k1]  # one key per purpose


def test_a_key_ring_hands_other_bearer_credentials_to_its_token_resolver() -> None:
    ring = KeyRing([make_key("k" * 12, principal="ops")])
    assert not ring.takes_tokens
    with pytest.raises(UnauthenticatedError, match="unknown API key"):
        ring.authenticate("Bearer eyJ.a.b")
    person = Principal(id="alice", scopes=frozenset({"runs:read"}))
    seen: list[str] = []

    def resolve(token: str) -> Principal | None:
        seen.append(token)
        if token == "refused":
            raise ForbiddenError("refused by the resolver")
        return person if token == "eyJ.a.b" else None

    ring.use_tokens(resolve)
    assert ring.takes_tokens
    assert ring.authenticate(f"Bearer {'k' * 12}").id == "ops" and seen == []  # a key never reaches it
    assert ring.authenticate("Bearer  eyJ.a.b ") is person
    with pytest.raises(UnauthenticatedError, match="unknown API key"):
        ring.authenticate("Bearer something-else")
    with pytest.raises(ForbiddenError, match="refused by the resolver"):
        ring.authenticate("Bearer refused")
