"""``openwop-bridge keys`` and ``openwop-bridge audit``: administration of an existing database, and offline checks.

- ``keys list|rotate|retire``: the keys that sign interrupt links (and, made from them, the decision
  record's keys: :mod:`openwop_bridge.runtime.decision_records`).
- ``audit export --db …``: the decision record as JSON Lines, read a page at a time.
- ``audit verify FILE --keys URL|FILE``: every hash, link and signature of an export checked offline
  (:mod:`openwop_bridge.core.decision_verify`); exit 0 when all hold, 1 naming the first broken record.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from openwop_bridge.core.decision_verify import verify_lines
from openwop_bridge.core.record_signature import SignatureError, key_set
from openwop_bridge.host.options import env
from openwop_bridge.runtime.decision_records import export_lines
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.store import open_store
from openwop_bridge.store.base import Store

__all__ = ["add_audit_parser", "add_keys_parser", "audit", "database", "keys"]

KEYS_DESCRIPTION = """\
Manage the keys that sign interrupt links (resolution and inspect links, link pages, notices)
and, made from them, the keys that sign the decision record.
They live in the database, so every instance sharing it signs and verifies with the same keys.
The database must exist: these commands never create one (start `serve` once to create it).
Run them beside a running server only on PostgreSQL; a SQLite file is held by its server.
"""

AUDIT_DESCRIPTION = """\
The decision record: every decision (vote, answer, conversation turn, cancel, timeout, refusal)
is a record signed by the host and chained by hash to the one before, one chain per tenant.
`export` writes it as JSON Lines from a database; `verify` checks an export offline against the
host's public keys (GET /v1/audit/keys, or that document saved to a file).
"""


def _db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=env("DB", "./openwop-bridge.db"),
        help="SQLite file or postgresql:// URL of an existing database (default ./openwop-bridge.db; "
        "env OPENWOP_BRIDGE_DB)",
    )


def add_keys_parser(sub: Any) -> None:
    """``keys list|rotate|retire``, each with its description."""
    parser = sub.add_parser(
        "keys",
        help="manage interrupt-link signing keys in the database",
        description=KEYS_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{list,rotate,retire}")
    for name, summary, description in (
        ("list", "list the signing keys", "Print every signing key id and whether it signs (active) or only verifies."),
        (
            "rotate",
            "make a new key the one that signs",
            "Generate a new signing key and make it active. Older keys keep verifying the links they signed "
            "until you retire them, so links already handed out keep working. The decision record's signing "
            "key rotates with it; its older keys stay in GET /v1/audit/keys.",
        ),
        (
            "retire",
            "stop accepting links signed by a key",
            "Retire the key --kid: links it signed are refused from now on. The active key cannot be retired; "
            "rotate first. Decision records it signed stay verifiable.",
        ),
    ):
        action = actions.add_parser(name, help=summary, description=description)
        _db_argument(action)
        if name == "retire":
            action.add_argument("--kid", required=True, help="id of the key to retire (from `keys list`)")


def add_audit_parser(sub: Any) -> None:
    """``audit export|verify``."""
    parser = sub.add_parser(
        "audit",
        help="export the decision record, or verify an export offline",
        description=AUDIT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{export,verify}")
    export = actions.add_parser(
        "export",
        help="write the decision record as JSON Lines",
        description="Write every record of the database's decision record (or one tenant's) as JSON Lines, "
        "each chain in sequence order, reading a page at a time.",
    )
    _db_argument(export)
    export.add_argument("--tenant", help="only this tenant's chain (default: every tenant's)")
    export.add_argument("--out", "-o", help="file to write (default: standard output)")
    verify = actions.add_parser(
        "verify",
        help="check an export's hashes, links and signatures",
        description="Check every record of an export: its hash, its link to the record before it and its "
        "signature. Exits 0 when all hold; otherwise prints the first broken record (its tenant and sequence "
        "number, and why) and exits 1.",
    )
    verify.add_argument("file", help="the export (JSON Lines); - for standard input")
    verify.add_argument(
        "--keys",
        required=True,
        help="the public keys: the URL of GET /v1/audit/keys, or a file holding that JWK set",
    )
    verify.add_argument(
        "--partial",
        action="store_true",
        help="the file holds part of a chain (a receipt, a page after a cursor): check every record's hash and "
        "signature and the links between consecutive ones, but not that none is missing",
    )


def database(db: str) -> str:
    """``--db`` as given, unless it names a directory: then a one-line error saying so."""
    if "://" not in db and Path(db).is_dir():
        raise RuntimeError(
            f"--db {db} is a directory: name a SQLite file (such as {Path(db) / 'openwop-bridge.db'}) "
            "or a postgresql:// URL"
        )
    return db


async def _existing(db: str) -> Store:
    store = open_store(database(db))
    if not await store.exists():
        where = getattr(store, "display_url", db)
        raise RuntimeError(f"no openwop-bridge database at {where} (check --db; `serve` creates one)")
    return store


async def keys(args: argparse.Namespace) -> int:
    """``keys list|rotate|retire``."""
    async with Engine(await _existing(args.db)).maintaining() as engine:
        if args.action == "rotate":
            kid = await engine.rotate_signing_key()
            print(f"new active signing key: {kid} (older keys keep verifying until retired)")
        elif args.action == "retire":
            await engine.retire_signing_key(args.kid)
            print(f"retired {args.kid}: links signed with it are refused from now on")
        for kid, active in await engine.signing_key_ids():
            print(f"{kid}\t{'active' if active else 'verify-only'}")
    return 0


def audit(args: argparse.Namespace) -> int:
    """``audit export|verify``."""
    if args.action == "export":
        return asyncio.run(_export(args))
    return _verify(args.file, args.keys, partial=args.partial)


@contextmanager
def _output(path: str | None) -> Iterator[IO[bytes]]:
    if path is None:
        yield sys.stdout.buffer
        return
    try:
        with open(path, "wb") as out:
            yield out
    except OSError as exc:
        raise RuntimeError(f"cannot write {path}: {exc.strerror}") from None


async def _export(args: argparse.Namespace) -> int:
    store = await _existing(args.db)
    await store.open()
    written = 0
    try:
        with _output(args.out) as out:
            async for line in export_lines(store, args.tenant):
                out.write(line)
                written += 1
            out.flush()
    finally:
        await store.close()
    print(f"exported {written} record(s)", file=sys.stderr)
    return 0


def _load_keys(source: str) -> dict[str, Any]:
    """The JWK set at a URL (fetched) or in a file."""
    if source.startswith(("http://", "https://")):
        import httpx  # only here: `serve` starts without it

        try:
            response = httpx.get(source, timeout=10, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise RuntimeError(f"cannot fetch the keys from {source}: {exc}") from None
        if response.status_code != 200:
            raise RuntimeError(f"cannot fetch the keys from {source}: HTTP {response.status_code}")
        raw = response.content
    else:
        try:
            raw = Path(source).read_bytes()
        except OSError as exc:
            raise RuntimeError(f"cannot read the keys file {source}: {exc.strerror}") from None
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise RuntimeError(f"the keys at {source} are not JSON") from None
    if not isinstance(document, dict):
        raise RuntimeError(f'the keys at {source} are not a JWK set ({{"keys": [...]}})')
    return document


def _verify(path: str, keys_source: str, *, partial: bool = False) -> int:
    try:
        found = key_set(_load_keys(keys_source))
    except SignatureError as exc:
        raise RuntimeError(f"the keys at {keys_source}: {exc}") from None
    if not found:
        raise RuntimeError(f"the keys at {keys_source} hold no Ed25519 key")
    try:
        source = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise RuntimeError(f"cannot read {path}: {exc.strerror}") from None
    with source:
        verdict = verify_lines(source, found, partial=partial)
    if verdict.broken is not None:
        print(f"BROKEN: {verdict.broken}", file=sys.stderr)
        print(f"(the {verdict.records} record(s) before it hold)", file=sys.stderr)
        return 1
    chains = ", ".join(f"{tenant}: {last}" for tenant, last in sorted(verdict.tenants.items())) or "none"
    print(
        f"OK: {verdict.records} record(s) hold (last record per tenant: {chains}); signed by {len(verdict.kids)} key(s)"
    )
    return 0
