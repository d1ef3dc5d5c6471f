"""The command line: subcommands, their options, and the few value syntaxes the options accept.

Parsing builds nothing heavy; the commands import the engine when they run.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from scriptorium._suggest import did_you_mean
from scriptorium._version import DISTRIBUTION, installed_version
from scriptorium.cli.mcp_options import add_mcp_parser
from scriptorium.cli.optimize import add_optimize_parser
from scriptorium.cli.test import add_test_parser
from scriptorium.promptdef.arguments import guess_value, split_input

__all__ = [
    "UsageError",
    "build_parser",
    "merge_leading_options",
    "parse_artifact",
    "parse_input",
]

_EPILOG = """\
exit codes: 0 success; 1 output invalid, check problems, batch lines failed, tests failed; 2 invalid
request or usage; 3 profile or key missing; 4 prompt, profile or artifact not loadable; 5 render failed;
6 LLM call failed; 7 schema or validator failed; 130 stopped by Ctrl-C (a batch keeps its
finished rows: the same command resumes).
"""


class UsageError(Exception):
    """A command line that cannot be acted on (exit 2, code ``usage``)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but failures are :class:`UsageError` so ``main`` reports them in one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # An unknown command gets a "did you mean"; other choices are argparse's to judge.
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            known = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                action,
                f"unknown command {value!r} (commands: {', '.join(known)})"
                + did_you_mean(str(value), known),
            )
        super()._check_value(action, value)


def parse_input(text: str) -> tuple[str, Any]:
    """``key=value`` with the value guessed: JSON when it parses as JSON, else the literal string
    (``NaN`` and ``Infinity`` stay text). What ``-i`` gives a key the prompt's schema does not
    type; a typed key is read as its type says (:mod:`scriptorium.promptdef.arguments`)."""
    key, raw = _split_input(text)
    return key, guess_value(raw)


def _split_input(text: str) -> tuple[str, str]:
    try:
        return split_input(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def parse_artifact(text: str) -> tuple[str, str]:
    """``-a name=path``."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, path


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        sys.stdout.write(f"scriptorium {installed_version()} ({DISTRIBUTION})\n")
        parser.exit()


def _verbosity(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        dest=dest,
        action="count",
        default=0,
        help="log to stderr: -v each retry, repair and fallback (INFO), -vv everything (DEBUG)",
    )


def _common(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    _verbosity(parser, "verbose")
    parser.add_argument(
        "--root",
        default=".",
        metavar="DIR",
        help="the project directory holding prompts/ and profiles/ (default: .)",
    )
    parser.add_argument("--json", action="store_true", help=json_help)


def _request_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", metavar="PROMPT", help="prompt id, e.g. extract/contact")
    parser.add_argument("-p", "--profile", help="profile name (default: the prompt's own)")
    parser.add_argument(
        "-i",
        "--input",
        dest="input_pairs",
        action="append",
        default=[],
        type=_split_input,
        metavar="KEY=VALUE",
        help="a template input, read as the prompt's inputs schema types KEY (a string property "
        "takes VALUE as text); an untyped KEY is JSON if VALUE parses as JSON, else text "
        "(repeatable)",
    )
    parser.add_argument(
        "--inputs",
        dest="inputs_file",
        metavar="FILE",
        help="a JSON object of inputs from FILE, or '-' for stdin (-i values win)",
    )
    parser.add_argument(
        "-a",
        "--artifact",
        dest="artifact_pairs",
        action="append",
        default=[],
        type=parse_artifact,
        metavar="NAME=PATH",
        help="an input artifact; PATH is relative to the artifact root (repeatable)",
    )
    parser.add_argument(
        "--artifact-root",
        metavar="DIR",
        help="the artifact root: where artifact paths resolve, nothing outside it is read "
        "(default: the project root, --root)",
    )
    parser.add_argument("--model", help="override the profile's model")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="override max_tokens")
    parser.add_argument("--temperature", type=float, metavar="T", help="override temperature")
    parser.add_argument(
        "--reasoning",
        choices=("off", "low", "medium", "high", "xhigh", "max"),
        metavar="LEVEL",
        help="how much the model thinks: off, low, medium, high, xhigh or max (each provider "
        "maps it to what the model takes; prepare shows it as sent)",
    )
    parser.add_argument(
        "--reasoning-budget",
        type=int,
        metavar="TOKENS",
        help="override reasoning_budget_tokens (a thinking budget, for models that take one)",
    )
    parser.add_argument(
        "--repair",
        action="store_true",
        help="repair invalid JSON output with the model: up to the prompt's repair_attempts, "
        "at least one",
    )
    parser.add_argument(
        "--repair-attempts", type=int, metavar="N", help="override the prompt's repair_attempts"
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``scriptorium`` argument parser."""
    parser = _Parser(
        prog="scriptorium",
        description="Execute prompt definitions against LLMs.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-V", "--version", action=_Version, nargs=0, help="print the version and exit"
    )
    # Before the command too (`scriptorium -v run ...`); added to the command's own count.
    _verbosity(parser, "verbose_before")
    # --root and --json before the command too (`scriptorium --root DIR list`); the command's own
    # win when both are given (see ``merge_leading_options``).
    parser.add_argument("--root", dest="root_before", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--json", dest="json_before", action="store_true", help=argparse.SUPPRESS)
    # Not required: `scriptorium` alone prints this help (main does it).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = commands.add_parser(
        "run",
        help="run a prompt and print its output (the parsed value, as JSON, for a JSON prompt)",
    )
    _request_options(run)
    run.add_argument(
        "--stream",
        action="store_true",
        help="write the text as the model writes it (and, for JSON prompts, the parsed value at "
        "the end); with --json, one JSON line per event",
    )
    _common(run, json_help="print the whole RunResult as JSON")
    run.add_argument(
        "--raw", action="store_true", help="print the model's text as it came, not the parsed value"
    )

    prepare = commands.add_parser(
        "prepare", help="show messages, target, settings and hashes without calling the model"
    )
    _request_options(prepare)
    _common(prepare, json_help="print the PreparedRun as JSON")
    prepare.add_argument(
        "--count-tokens",
        action="store_true",
        help="also count the input tokens (Anthropic's counting endpoint; elsewhere an estimate)",
    )

    batch = commands.add_parser("batch", help="run a prompt over a JSONL file of inputs")
    _request_options(batch)
    batch.add_argument(
        "--in",
        dest="in_file",
        required=True,
        metavar="FILE",
        help="JSONL: one object per line with inputs, artifacts and an optional id",
    )
    batch.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where the rows run: threads here (default) or a Ray cluster (extra 'ray')",
    )
    batch.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: the cluster to join (default: RAY_ADDRESS, else a local one)",
    )
    batch.add_argument(
        "--out",
        dest="out_file",
        required=True,
        metavar="FILE",
        help="JSONL results in input order; lines already answered there are not run again",
    )
    batch.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that is not a batch output of this prompt (without it "
        "such a file is refused)",
    )
    batch.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="runs in flight (default: 4)"
    )
    batch.add_argument(
        "--provider-batch",
        action="store_true",
        help="send the rows through the provider's batch API (half price, results within 24 h)",
    )
    batch.add_argument(
        "--state",
        metavar="FILE",
        help="with --provider-batch: the job's state file, to resume after a crash "
        "(default: <out>.state.json)",
    )
    batch.add_argument(
        "--poll-s",
        type=float,
        default=15.0,
        metavar="S",
        help="with --provider-batch: seconds between polls at first, backing off to 60 "
        "(default: 15)",
    )
    batch.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="N",
        help="with --provider-batch: at most N requests per provider batch "
        "(default: the provider's limit)",
    )
    _common(batch, json_help="print the summary (and errors) as JSON")

    listing = commands.add_parser("list", help="list prompts and profiles")
    _common(listing, json_help="print the listing as JSON")

    check = commands.add_parser(
        "check", help="lint every prompt, template, schema and profile (exit 1 on problems)"
    )
    _common(check, json_help="same as --format json")
    check.add_argument("--format", choices=("text", "json"), default="text")

    verify = commands.add_parser(
        "verify", help="prove a profile's key, endpoint and model with a minimal request"
    )
    verify.add_argument("-p", "--profile", help="the profile to verify")
    verify.add_argument("--model", help="override the profile's model")
    verify.add_argument(
        "--structured",
        action="store_true",
        help="prove whether the server enforces a JSON schema: enforced (exit 0), "
        "not enforced or refused (exit 1)",
    )
    _common(verify, json_help="print the verification as JSON")

    add_test_parser(commands, _common)
    add_optimize_parser(commands, _common)

    serve = commands.add_parser(
        "serve", help="serve the prompts over HTTP (token from SCRIPTORIUM_HTTP_TOKEN)"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument(
        "--artifact-root",
        metavar="DIR",
        help="read string artifact references as files under DIR (default: artifacts by value only)",
    )
    serve.add_argument(
        "--concurrency",
        type=int,
        default=64,
        metavar="N",
        help="runs in flight at once (default: 64)",
    )
    serve.add_argument(
        "--repair",
        action="store_true",
        help="give the server a repairer: requests may ask for repairs "
        "(overrides.repair_attempts); without it such requests are refused with 400",
    )
    serve.add_argument(
        "--cors-origin",
        dest="cors_origins",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin (https://app.example) allowed to call the API (repeatable; "
        "none by default)",
    )
    _common(serve, json_help="report a failure to start as JSON")

    add_mcp_parser(commands, _common)
    return parser


def merge_leading_options(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with ``--root`` and ``--json`` given before the command applied to it (the
    command's own ``--root`` wins when it names one)."""
    root = getattr(args, "root_before", None)
    if root is not None and getattr(args, "root", None) in (None, "."):
        args.root = root
    if getattr(args, "json_before", False) and hasattr(args, "json"):
        args.json = True
    return args


def wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` (or ``--format json``) was asked for, even if parsing then fails."""
    args = list(argv)
    if "--json" in args or "--format=json" in args:
        return True
    return any(a == "--format" and b == "json" for a, b in itertools.pairwise(args))


def argv_or_default(argv: Sequence[str] | None) -> list[str]:
    """``argv`` as a list, defaulting to the process's arguments."""
    return list(sys.argv[1:] if argv is None else argv)
