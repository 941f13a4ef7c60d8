"""What every `engram` command shares: its output (text or `--json`), its errors and exit codes.

A command returns an `Output`; `main` prints its text, or its data as JSON with `--json`. Failures
carry the API's machine codes (`not_found`, `unauthorized` ...), whether they come from the service's
own exceptions, the SDK's, or the command line, and each code family has its own exit status.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NoReturn

import msgspec


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # anything unexpected (a bug, an internal error of the service)
    USAGE = 2  # the command line is wrong (argparse's convention)
    NOT_FOUND = 3  # no such tenant, key, memory ...
    AUTH = 4  # no API key, an invalid or revoked one, or not allowed
    CONFLICT = 5  # already exists, or a concurrent change: retry
    INVALID = 6  # the service refused the input (400, 413, 415, 422)
    UNAVAILABLE = 7  # the service or the database cannot be reached, or answers 503
    RATE_LIMITED = 8  # a limit of the tenant was reached (429): retry later


EXIT_CODES: dict[str, ExitCode] = {
    "usage": ExitCode.USAGE,
    "not_found": ExitCode.NOT_FOUND,
    "unauthorized": ExitCode.AUTH,
    "forbidden": ExitCode.AUTH,
    "conflict": ExitCode.CONFLICT,
    "bad_request": ExitCode.INVALID,
    "validation_error": ExitCode.INVALID,
    "payload_too_large": ExitCode.INVALID,
    "unsupported_media_type": ExitCode.INVALID,
    "unavailable": ExitCode.UNAVAILABLE,
    "connection_error": ExitCode.UNAVAILABLE,
    "rate_limited": ExitCode.RATE_LIMITED,
    # Tenant limits (issue 23).
    "concurrency_limited": ExitCode.RATE_LIMITED,
    "token_quota_exceeded": ExitCode.RATE_LIMITED,
    "memory_quota_exceeded": ExitCode.CONFLICT,
}


def exit_code(code: str) -> ExitCode:
    return EXIT_CODES.get(code, ExitCode.ERROR)


class CommandFailed(Exception):
    """A command's failure with a machine code (see `EXIT_CODES`) and a sentence for a person."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Output:
    data: Any  # printed as JSON with --json (anything msgspec encodes)
    text: str  # printed otherwise; empty prints nothing


def emit(output: Output, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(msgspec.json.encode(output.data).decode() + "\n")
    elif output.text:
        sys.stdout.write(output.text.rstrip("\n") + "\n")
    sys.stdout.flush()


def report(code: str, detail: str, as_json: bool) -> ExitCode:
    """Print a failure on stderr; returns the exit status for it."""
    if as_json:
        sys.stderr.write(msgspec.json.encode({"error": code, "detail": detail}).decode() + "\n")
    else:
        sys.stderr.write(f"error: {detail}\n")
    return exit_code(code)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is reported like any failure (and `--json` is honoured)."""

    def error(self, message: str) -> NoReturn:
        raise CommandFailed("usage", f"{self.prog}: {message}")


def json_flag() -> Parser:
    """The parent parser every command takes, for `--json`."""
    parent = Parser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    return parent
