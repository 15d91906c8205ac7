"""The ``adaptive-retrieval`` command: index files, query with diagnostics, serve over REST, draw the pipelines.

Every subcommand loads the YAML pipelines (``yaml/``); the store is the local Qdrant folder given by ``--store``
(else ``$ADAPTIVE_QDRANT_PATH``, else ``$XDG_DATA_HOME/adaptive-retrieval/qdrant``, i.e.
``~/.local/share/adaptive-retrieval/qdrant``) or a server given by ``--url`` (or ``$QDRANT_URL``).

Usage::

    adaptive-retrieval index docs/ notes.md          # progress bar; unchanged files are skipped
    adaptive-retrieval query "What does Section 3.2 say about termination?"
    adaptive-retrieval query --json "error E1045"    # the full response with diagnostics, as JSON
    adaptive-retrieval query --fail-if-not-found "…"  # exit 3 unless the gate's verdict is "found"
    adaptive-retrieval delete notes.md               # remove a source (chunks, summaries, graph, upload)
    adaptive-retrieval calibrate --store .adaptive/qdrant   # fit the quality gate on this index (no labels)
    adaptive-retrieval stats --store .adaptive/qdrant  # per source: chunks, summaries, graph chunks, state
    adaptive-retrieval serve --port 1416             # Hayhooks REST app, read-only (+ /mcp, /diagrams)
    adaptive-retrieval draw --out build/diagrams --format mmd svg png html
    adaptive-retrieval --version
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from adaptive_retrieval.components.errors import AdaptiveRetrievalError
from adaptive_retrieval.pipelines.cli.args import checked, whole_number
from adaptive_retrieval.pipelines.cli.commands import (
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    cmd_calibrate,
    cmd_delete,
    cmd_draw,
    cmd_index,
    cmd_query,
    cmd_serve,
    cmd_stats,
)
from adaptive_retrieval.pipelines.cli.format import error_line
from adaptive_retrieval.pipelines.cli.model_commands import add_models_parser
from adaptive_retrieval.pipelines.processes import garbage_collection

EXIT_INTERRUPTED = 130


def package_version() -> str:
    """The installed distribution's version (what ``pip`` installed), from its metadata."""
    from importlib.metadata import version

    return version("adaptive-retrieval")


def _parent_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The options that several commands share: where the store is, and which model folder runs."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", metavar="DIR", help="local Qdrant folder (default: $ADAPTIVE_QDRANT_PATH)")
    store.add_argument("--url", help="Qdrant server URL instead of a local folder (default: $QDRANT_URL)")
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument(
        "--model",
        metavar="DIR",
        help="ONNX model folder, e.g. one built elsewhere (default: all-MiniLM-L6-v2 in $ADAPTIVE_MODELS_DIR or the "
        "models folder; see adaptive-retrieval models list)",
    )
    return store, model


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="adaptive-retrieval",
        description="Adaptive retrieval with Haystack: index, query with diagnostics, serve, draw.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{index,query,delete,stats,calibrate,serve,draw,models}"
    )
    store, model = _parent_parsers()

    _add_index_and_query(sub, store, model)
    _add_calibrate_serve_delete_stats(sub, store, model)
    _add_draw(sub)
    add_models_parser(sub)
    return parser


def _add_index_and_query(sub: Any, store: argparse.ArgumentParser, model: argparse.ArgumentParser) -> None:
    """The ``index`` and ``query`` commands."""
    p = sub.add_parser("index", parents=[store, model], help="index files and folders", description=cmd_index.__doc__)
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (.md .txt .html .pdf)")
    p.add_argument("--force", action="store_true", help="re-index files even when unchanged")
    p.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="follow symbolic links inside the folders, wherever they point (default: not followed, and listed)",
    )
    p.add_argument(
        "--batch-files",
        type=int,
        default=16,
        help="files per pipeline run at most (default 16; a file over 256 KiB runs alone)",
    )
    p.add_argument(
        "--no-calibrate",
        action="store_true",
        help="do not update the quality gate's calibration after indexing (it then judges new files by the last one)",
    )
    p.set_defaults(func=cmd_index, manages_collection=True)

    p = sub.add_parser("query", parents=[store, model], help="retrieve with diagnostics", description=cmd_query.__doc__)
    p.add_argument("text", nargs="+", metavar="TEXT", help="the question or keywords")
    p.add_argument("--top-k", type=whole_number("check_top_k"), default=None, help="show at most this many documents")
    p.add_argument("--json", action="store_true", help="print the full response as JSON")
    p.add_argument("--full", action="store_true", help="print whole passages instead of a preview")
    p.add_argument(
        "--fail-if-not-found",
        action="store_true",
        help=f"exit with status {EXIT_NOT_FOUND} unless the quality gate's verdict is 'found' (for scripts)",
    )
    p.set_defaults(func=cmd_query, manages_collection=True)


def _add_calibrate_serve_delete_stats(sub: Any, store: argparse.ArgumentParser, model: argparse.ArgumentParser) -> None:
    """The ``calibrate``, ``serve``, ``delete`` and ``stats`` commands."""
    p = sub.add_parser(
        "calibrate",
        parents=[store, model],
        help="fit the quality gate on this index",
        description=cmd_calibrate.__doc__,
    )
    p.add_argument("--queries", type=int, default=None, help="pseudo-queries to draw (default 500)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--out", default=None, help="calibration file (default: gate_calibration.json in the store)")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("serve", parents=[store], help="serve the REST API (Hayhooks)", description=cmd_serve.__doc__)
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=whole_number("check_port"), default=1416, help="port, 1-65535 (default 1416)")
    p.add_argument("--pipelines-dir", default=None, help="folder of pipeline wrappers (default: the package's)")
    p.add_argument(
        "--workers",
        type=whole_number("check_workers"),
        default=None,
        help="serving processes over the one index (default: the cores available, at most 4; README 'Scale out')",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("delete", parents=[store], help="delete indexed sources", description=cmd_delete.__doc__)
    source = checked("check_source_name")
    p.add_argument("sources", nargs="+", type=source, metavar="SOURCE", help="an indexed file's path or upload's name")
    p.set_defaults(func=cmd_delete, manages_collection=True)

    p = sub.add_parser("stats", parents=[store], help="what an index holds, per source", description=cmd_stats.__doc__)
    p.add_argument("--json", action="store_true", help='print {"sources": {...}, "totals": {...}} as JSON')
    p.add_argument("--verify", action="store_true", help="check every node, vector and graph record too")
    p.set_defaults(func=cmd_stats, manages_collection=True)


def _add_draw(sub: Any) -> None:
    """The ``draw`` command."""
    from adaptive_retrieval.pipelines.diagrams.drawing import DETAILS, FORMATS, PIPELINE_NAMES

    p = sub.add_parser("draw", help="write and render the pipeline diagrams", description=cmd_draw.__doc__)
    p.add_argument("--out", default="build/diagrams", help="output folder (default build/diagrams)")
    p.add_argument("--format", nargs="+", choices=FORMATS, default=["mmd", "svg"], help="formats (default mmd svg)")
    p.add_argument(
        "--detail",
        nargs="+",
        choices=DETAILS,
        default=["overview"],
        help="overview (at a glance; <name>.<format>), sockets (every connection) or haystack (socket types); "
        "other than overview written as <name>.<detail>.<format> (default overview)",
    )
    p.add_argument("--pipeline", nargs="+", choices=PIPELINE_NAMES, default=list(PIPELINE_NAMES))
    p.set_defaults(func=cmd_draw)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage, 3 not found with
    ``query --fail-if-not-found``, 130 interrupted)."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    if getattr(args, "queries", None) is not None and args.queries < 2:
        build_parser().error("--queries must be at least 2")
    if getattr(args, "batch_files", 1) < 1:
        build_parser().error("--batch-files must be at least 1")
    from adaptive_retrieval.pipelines.processes.threads import limit_blas_threads

    # A failing component makes Haystack build a debugging snapshot of the run (saved only on request) and warn
    # about every input it cannot serialise: noise around the one error line printed below.
    logging.getLogger("haystack.utils.base_serialization").setLevel(logging.ERROR)
    if not getattr(args, "manages_collection", False):
        # Long or unbounded commands (calibrate, serve, draw, models) collect as usual from here on; index
        # resumes once its pipeline is loaded; query, stats and delete are short and finish paused.
        garbage_collection.resume()
    try:
        limit_blas_threads()
        return args.func(args, out)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        if not isinstance(err, _user_errors()):
            raise
        print(f"error: {error_line(err)}", file=sys.stderr)
        return EXIT_ERROR


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors whose message is for the user (printed as ``error: ...``, no traceback); imported when one is
    raised, so that a command that needs no pipeline never imports Haystack."""
    from haystack.core.errors import PipelineError, PipelineRuntimeError

    # AdaptiveRetrievalError: every error the package raises on purpose (CliError, a store error, a refused input,
    # a model command's error, a missing renderer...); its message says what to do.
    # PipelineError: a component failed loudly (e.g. a store path that is a file); its message names it.
    # RuntimeError covers Qdrant's "storage folder is already accessed by another instance" (a server holds the
    # folder): its message says what to do. ImportError: an optional part used without its extra; the message
    # names the extra to install.
    return (
        AdaptiveRetrievalError,
        FileNotFoundError,
        ValueError,
        RuntimeError,
        ImportError,
        PipelineError,
        PipelineRuntimeError,
    )


#: Exit status when the reader of standard output went away (``query ... | head -1``): 128 + SIGPIPE, what a shell
#: reports for ``cat``, ``grep`` and other commands that SIGPIPE ends.
EXIT_BROKEN_PIPE = 141


def run() -> None:
    """The console entry point: :func:`main` with the garbage collector paused while the command sets up.

    When the reader of standard output has gone (``adaptive-retrieval query ... | head -1``), the command ends
    quietly with :data:`EXIT_BROKEN_PIPE`, as other command-line tools do, instead of a ``BrokenPipeError`` traceback.
    """
    garbage_collection.pause()
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's documented recipe: point stdout at /dev/null, so that the flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = EXIT_BROKEN_PIPE
    garbage_collection.before_exit()
    sys.exit(status)


if __name__ == "__main__":
    run()
