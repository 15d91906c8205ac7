"""Argument types of the ``adaptive-retrieval`` command backed by :mod:`~adaptive_retrieval.pipelines.validation`,
so that the command line refuses what every other entry point refuses, with the same message, as a usage error
(exit 2). The validation module is imported when an option is parsed, not when the parser is built: ``--help``
stays light (``tests/pipelines/test_cli_help.py``).

Usage::

    parser.add_argument("--top-k", type=whole_number("check_top_k"))   # "0" -> usage error "top_k must be from 1 ..."
    parser.add_argument("sources", nargs="+", type=checked("check_source_name"))
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def checked(check: str, convert: Callable[[str], Any] = str, what: str = "") -> Callable[[str], Any]:
    """An argparse ``type``: ``convert(text)`` passed through the validation function named ``check``, whose
    ``TypeError``/``ValueError`` message becomes the usage error (as does a failed conversion, named ``what``)."""

    def parse(text: str) -> Any:
        from adaptive_retrieval.pipelines import validation

        try:
            value = convert(text)
        except ValueError:
            msg = f"not {what or 'valid'}: {text!r}"
            raise argparse.ArgumentTypeError(msg) from None
        try:
            return getattr(validation, check)(value)
        except (TypeError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = check.removeprefix("check_")  # argparse names the type in its messages
    return parse


def whole_number(check: str) -> Callable[[str], Any]:
    """:func:`checked` for an integer option (``--top-k``, ``--port``)."""
    return checked(check, lambda text: int(text.strip()), "a whole number")
