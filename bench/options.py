"""The ``bench`` subcommand's options, apart from the harness so that building the CLI's parser
(which every ``openwop-bridge serve`` does) loads no benchmark code."""

from __future__ import annotations

import argparse
from pathlib import Path

from openwop_bridge.host.arguments import whole


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand's options."""
    parser.add_argument("--quick", action="store_true", help="run each scenario briefly (CI keeps the harness alive)")
    parser.add_argument("--json", metavar="PATH", help="write {scenario: {bridge, peer, unit, ratio, n}} to PATH")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only these scenarios (repeatable or comma list; a family such as 'http' or a figure name)",
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="store for the HTTP scenarios (default: a fresh SQLite file; a postgresql:// URL for shared stores)",
    )
    parser.add_argument(
        "--instances",
        type=whole("instances", 1),
        default=1,
        metavar="N",
        help="server processes sharing the --db store in the HTTP scenarios; clients are spread round-robin",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        type=Path,
        help="also run each bridge workload under py-spy (unmeasured); speedscope files and a summary go to DIR",
    )
    parser.add_argument(
        "--pending",
        type=whole("runs", 1),
        default=None,
        metavar="N",
        help="suspended runs in the scale scenario (default 100,000; 2,000 with --quick)",
    )
    parser.add_argument(
        "--sweep",
        metavar="DIR",
        type=Path,
        help="also run the scale scenario at 10,000 and 100,000 runs; its figures against the size go to DIR "
        "(scale-sweep.md, .json, .svg)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (databases, server logs)")
