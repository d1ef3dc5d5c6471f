"""The ``scriptorium`` command: ``run``, ``prepare``, ``batch``, ``list``,
``check``, ``verify``, ``test``, ``optimize``, ``serve`` and ``mcp`` over a project directory.

Results go to stdout. A failure is one line on stderr, ``scriptorium: <code>: <message>`` (with
``--json``, ``{"error": {"code": ..., "message": ...}}``), and the exit status says which kind:
0 success; 1 invalid output, check problems, failed batch lines or failed tests; 2 invalid
request or usage; 3 profile or key missing; 4 prompt, profile or artifact not loadable; 5 render
failure; 6 LLM failure; 7 schema or validator failure; 130 stopped by Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from scriptorium.cli.logs import logging_for
from scriptorium.cli.output import EXIT_INTERRUPTED, EXIT_USAGE, Reporter
from scriptorium.cli.parser import (
    UsageError,
    argv_or_default,
    build_parser,
    merge_leading_options,
    wants_json,
)
from scriptorium.errors import ScriptoriumError

__all__ = ["main"]

Command = Callable[[argparse.Namespace, Reporter], int]


#: Each command's module and function: a command imports its own module only, so ``run`` never
#: loads the batch or serve code (nor what they import).
_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("scriptorium.cli.commands", "cmd_run"),
    "prepare": ("scriptorium.cli.commands", "cmd_prepare"),
    "batch": ("scriptorium.cli.batch", "cmd_batch"),
    "list": ("scriptorium.cli.commands", "cmd_list"),
    "check": ("scriptorium.cli.commands", "cmd_check"),
    "verify": ("scriptorium.cli.commands", "cmd_verify"),
    "serve": ("scriptorium.cli.serve", "cmd_serve"),
    "test": ("scriptorium.cli.test", "cmd_test"),
    "optimize": ("scriptorium.cli.optimize", "cmd_optimize"),
    "mcp": ("scriptorium.cli.mcp", "cmd_mcp"),
}


def _command(name: str) -> Command:
    # Imported per command, so `scriptorium --help` stays quick and a command loads only itself.
    import importlib

    module, function = _COMMANDS[name]
    command: Command = getattr(importlib.import_module(module), function)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: the process's arguments); return the exit status."""
    arguments = argv_or_default(argv)
    reporter = Reporter(json_mode=wants_json(arguments))
    try:
        parser = build_parser()
        args = merge_leading_options(parser.parse_args(arguments))
        if args.command is None:
            # `scriptorium` alone: what it can do, not a usage error.
            parser.print_help(reporter.out)
            return 0
        reporter.json_mode = bool(args.json or getattr(args, "format", "text") == "json")
        verbosity = args.verbose + args.verbose_before
        with logging_for(verbosity, reporter.err):
            return _command(args.command)(args, reporter)
    except SystemExit as done:
        # --help and --version: argparse has printed what was asked and wants to stop.
        return done.code if isinstance(done.code, int) else 0
    except UsageError as err:
        reporter.error("usage", str(err))
        return EXIT_USAGE
    except ScriptoriumError as err:
        return reporter.failure(err)
    except KeyboardInterrupt:
        reporter.error("interrupted", "stopped by the user")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`scriptorium list | head -1`): say nothing more, anywhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as err:
        # A bug of ours. The type only: a foreign message could quote anything it was given.
        reporter.error("internal", f"unexpected {type(err).__name__}; please report it")
        return 70
