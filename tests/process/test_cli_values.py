"""A value of the wrong type or out of its range, on the command line or in an ``OPENWOP_BRIDGE_*``
variable, stops the command line in one line on stderr with exit code 2: never a traceback, and
``--help`` works whatever the variables hold."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openwop_bridge.host.cli import build_parser, main
from openwop_bridge.host.options import env_name

ROOT = Path(__file__).resolve().parents[2]


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _valued(name: str) -> list[argparse.Action]:
    """The options of ``name`` that take a typed value or one of a few choices."""
    return [
        a
        for a in _subparser(name)._actions
        if a.option_strings and a.nargs != 0 and (a.choices or a.type not in (None, str.lower, Path))
    ]


def _switches() -> list[argparse.Action]:
    return [a for a in _subparser("serve")._actions if isinstance(a, argparse._StoreTrueAction)]


def _refused_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2, (argv, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (argv, err)
    return err


SERVE_VALUED = [a.option_strings[-1] for a in _valued("serve")]
BENCH_VALUED = [a.option_strings[-1] for a in _valued("bench")]


def test_the_options_with_typed_values_are_all_found() -> None:
    assert {"--port", "--escalation-threshold", "--lease-ms", "--log-level"} <= set(SERVE_VALUED)
    assert len(SERVE_VALUED) >= 20
    assert {"--instances", "--pending"} <= set(BENCH_VALUED)


@pytest.mark.parametrize("flag", SERVE_VALUED)
def test_a_wrong_typed_or_out_of_range_serve_value_is_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("abc", "-5", "nan", "1e400"):
        err = _refused_in_one_line(["serve", flag, bad], capsys)
        assert flag in err, err


@pytest.mark.parametrize("flag", SERVE_VALUED)
def test_a_wrong_variable_is_one_line_naming_it_and_help_still_works(
    flag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    action = next(a for a in _valued("serve") if a.option_strings[-1] == flag)
    monkeypatch.setenv(env_name(action), "abc")
    with pytest.raises(SystemExit) as shown:
        main(["serve", "--help"])
    assert shown.value.code == 0 and flag in capsys.readouterr().out
    err = _refused_in_one_line(["serve"], capsys)
    assert env_name(action) in err, err


@pytest.mark.parametrize("flag", [a.option_strings[-1] for a in _switches()])
def test_a_switch_variable_that_is_neither_1_nor_0_is_one_line(
    flag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    action = next(a for a in _switches() if a.option_strings[-1] == flag)
    monkeypatch.setenv(env_name(action), "yes")
    err = _refused_in_one_line(["serve"], capsys)
    assert env_name(action) in err, err
    for value, on in (("1", True), ("0", False), ("", False)):
        monkeypatch.setenv(env_name(action), value)
        assert getattr(build_parser().parse_args(["serve"]), action.dest) is on


def test_ranges_the_help_states_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["serve", "--escalation-threshold", "2"],
        ["serve", "--port", "99999"],
        ["serve", "--port", "65536"],
        ["bench", "--instances", "0"],
        ["bench", "--pending", "0"],
    ):
        _refused_in_one_line(argv, capsys)
    args = build_parser().parse_args(["serve", "--escalation-threshold", "0", "--port", "0"])
    assert (args.escalation_threshold, args.port) == (0.0, 0)
    assert build_parser().parse_args(["serve", "--escalation-threshold", "1"]).escalation_threshold == 1.0


@pytest.mark.parametrize("flag", BENCH_VALUED)
def test_a_wrong_typed_bench_value_is_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused_in_one_line(["bench", flag, "abc"], capsys)


def test_an_unknown_serve_option_shows_serves_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--prot", "9000"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.startswith("usage: openwop-bridge serve "), err
    assert err.strip().splitlines()[-1] == "openwop-bridge serve: error: unrecognized arguments: --prot 9000"
    with pytest.raises(SystemExit):
        main(["keys", "list", "--kid", "x"])
    assert capsys.readouterr().err.startswith("usage: openwop-bridge keys list ")


def test_db_naming_a_directory_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["serve", "--db", str(tmp_path)], ["keys", "list", "--db", str(tmp_path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "is a directory" in err, err


def test_the_installed_command_stops_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENWOP_BRIDGE_")}
    helped = subprocess.run(
        [sys.executable, "-m", "openwop_bridge", "serve", "--help"],
        env={**env, "OPENWOP_BRIDGE_PORT": "abc"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert helped.returncode == 0 and "--port" in helped.stdout, helped.stderr
    for argv, extra in ((["serve"], {"OPENWOP_BRIDGE_PORT": "abc"}), (["serve", "--port", "99999"], {})):
        done = subprocess.run(
            [sys.executable, "-m", "openwop_bridge", *argv],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "--port" in done.stderr or "OPENWOP_BRIDGE_PORT" in done.stderr
