"""The command line's parser: a value it refuses is one line on stderr with exit code 2.

A value of the wrong type or out of its range, given as a flag or in the option's
``OPENWOP_BRIDGE_*`` variable, is refused in one line naming the flag (and the
variable, when it gave the value), like the other start-up errors: never a
traceback, and ``--help`` works whatever the variables hold, since a variable's
value is checked only when the option is used. An unknown option shows the usage of
the command it was given to (``serve --prot`` shows ``serve``'s).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

#: The attribute of an argparse action naming its ``OPENWOP_BRIDGE_*`` variable (set by
#: :mod:`openwop_bridge.host.options`).
ENV_VARIABLE = "openwop_env_variable"
#: The namespace member naming the (sub)command parser that read the arguments.
OWNER = "_parser"
#: What a switch's variable may hold: on, and off.
SWITCH_VALUES = {"1": True, "0": False, "": False}


class OptionParser(argparse.ArgumentParser):
    """An argument parser whose refusals of a value are one line, naming the variable that gave it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_defaults(**{OWNER: self})

    def error(self, message: str) -> NoReturn:
        """One line for a refused value; the usage first for anything else (an unknown or missing option)."""
        if not message.startswith("argument "):
            self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """Convert a value; a variable's value (the default) is checked against the choices as a flag's is."""
        variable = getattr(action, ENV_VARIABLE, None)
        from_env = variable is not None and arg_string is action.default and os.environ.get(variable) == arg_string
        try:
            value = super()._get_value(action, arg_string)
            if from_env and action.choices is not None and value not in action.choices:
                choices = ", ".join(repr(c) for c in action.choices)
                raise argparse.ArgumentError(action, f"invalid choice: {arg_string!r} (choose from {choices})")
        except argparse.ArgumentError as exc:
            if not from_env:
                raise
            raise argparse.ArgumentError(action, f"{exc.message} (from {variable})") from None
        return value

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, then check the switches' variables (``1`` on, ``0`` or empty off) of the options used."""
        parsed, extra = super().parse_known_args(args, namespace)
        for action in self._actions:
            variable = getattr(action, ENV_VARIABLE, None)
            given = getattr(parsed, action.dest, False)  # the flag itself overrides its variable
            if isinstance(action, argparse._StoreTrueAction) and variable is not None and not given:
                raw = os.environ.get(variable)
                if raw is not None and raw.strip() not in SWITCH_VALUES:
                    flag = action.option_strings[-1]
                    self.error(f"argument {flag}: {variable}={raw!r} is neither 1 (on) nor 0 (off)")
        return parsed, extra


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed; arguments no command knows are refused by the (sub)command that was given them."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner: argparse.ArgumentParser = getattr(args, OWNER, parser)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def switch_default(variable: str) -> bool:
    """A switch's default from its variable: on for ``1`` (a value neither on nor off is refused when parsing)."""
    return SWITCH_VALUES.get(os.environ.get(variable, "").strip(), False)


def whole(unit: str, low: int, high: int | None = None) -> Callable[[str], int]:
    """A converter of a whole number of ``unit`` (may be empty) from ``low`` to ``high`` (no upper bound without it)."""
    of = f" of {unit}" if unit else ""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{of}") from None
        if value < low or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bounds}{' ' + unit if unit else ''}, not {text}")
        return value

    return parse


def number(what: str, low: float, high: float | None = None, *, above_low: bool = False) -> Callable[[str], float]:
    """A converter of a finite number from ``low`` (excluded with ``above_low``) to ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what}") from None
        below = value <= low if above_low else value < low
        if not math.isfinite(value) or below or (high is not None and value > high):
            if high is None:
                bounds = f"greater than {low:g}" if above_low else f"at least {low:g}"
            else:
                bounds = f"from {low:g} to {high:g}"
            raise argparse.ArgumentTypeError(f"must be a number {bounds}, not {text!r}")
        return value

    return parse
