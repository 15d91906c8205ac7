"""The commands of ``adaptive-retrieval`` (index, query, delete, calibrate, serve, stats, draw): what each does
once its arguments are parsed (:mod:`adaptive_retrieval.pipelines.cli.main` parses them and reports errors).

Each command imports what it needs when it runs, so that ``--help`` and the commands that need no pipeline
never import Haystack.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import AdaptiveRetrievalError
from adaptive_retrieval.components.locations import QDRANT_PATH_ENV as STORE_PATH_ENV
from adaptive_retrieval.components.locations import QDRANT_URL_ENV
from adaptive_retrieval.pipelines.cli.format import print_query, print_stats
from adaptive_retrieval.pipelines.processes import garbage_collection
from adaptive_retrieval.pipelines.processes.owner_client import ServerCallError, answer_field
from adaptive_retrieval.pipelines.processes.owner_client import call_server as _call_server
from adaptive_retrieval.pipelines.processes.owner_client import owned_message as _owned_message

#: Exit status of a command that failed (the parser exits 2 for usage errors).
EXIT_ERROR = 1
#: Exit status of ``query --fail-if-not-found`` when the quality gate's verdict is not "found".
EXIT_NOT_FOUND = 3


class CliError(AdaptiveRetrievalError):
    """A user-facing error: printed as ``error: <message>`` without a traceback."""


def _store_overrides(args: argparse.Namespace) -> dict[str, str]:
    """``load_pipeline`` overrides from ``--url``/``--store`` (none: the environment or the YAML decide), and
    ``--model`` for the commands that run the models."""
    model = {"model": _model_arg(args.model)} if getattr(args, "model", None) else {}
    if getattr(args, "url", None):
        return {"url": args.url, **model}
    if getattr(args, "store", None):
        return {"path": os.path.abspath(args.store), **model}
    return model


def _model_arg(model: str) -> str:
    """A model folder given on the command line as an absolute path (the YAML's name otherwise)."""
    return os.path.abspath(os.path.expanduser(model)) if os.path.isdir(os.path.expanduser(model)) else model


def _store_owner(args: argparse.Namespace) -> dict[str, Any] | None:
    """The live server that owns the local store this command would open (``None``: nobody, or a store server)."""
    from adaptive_retrieval.pipelines.processes.ownership import local_store_path, store_owner

    if getattr(args, "url", None):
        return None
    path = local_store_path(os.path.abspath(args.store) if getattr(args, "store", None) else None)
    return None if path is None else store_owner(path)


def _progress_callback(out: TextIO) -> tuple[Any, Any, Any]:
    """A tqdm bar over files, the ``progress(done, total)`` callback that drives it and a ``starting(batch)`` one
    that names the file being read (index_paths' ``check`` hook, called before each batch)."""
    from tqdm import tqdm

    bar = tqdm(total=None, unit="file", desc="indexing files", file=out, dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    def starting(batch: list[Path]) -> None:
        bar.set_postfix_str(batch[0].name + (f" +{len(batch) - 1}" if len(batch) > 1 else ""))

    return bar, progress, starting


def cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    """Index files and folders (``.md``, ``.txt``, ``.html``, ``.pdf``, recursively)."""
    from haystack.core.errors import PipelineRuntimeError
    from haystack.document_stores.errors import DocumentStoreError

    from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES
    from adaptive_retrieval.pipelines.file_walk import find_files
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.indexing_pipeline import store_of
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    try:
        found = find_files(args.paths, follow_symlinks=args.follow_symlinks)
    except FileNotFoundError as err:
        raise CliError(str(err)) from err
    files = found.files
    for link in found.skipped_links:
        print(f"skipped: {link.path} -> {link.target}: {link.reason}", file=sys.stderr)
    if not files:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        links = f"; {len(found.skipped_links)} link(s) not followed" if found.skipped_links else ""
        msg = f"No supported file under {', '.join(args.paths)} (supported: {supported}){links}"
        raise CliError(msg)
    if owner := _store_owner(args):
        msg = (
            f"{_owned_message(owner)}: stop that server to index from the command line, or upload through it "
            f"(curl -s {owner.get('url')}/indexing/run -F files=@FILE)"
        )
        raise CliError(msg)
    pipeline = load_pipeline("indexing", **_store_overrides(args))
    garbage_collection.resume()  # indexing many files makes garbage: collect from here on
    for _, instance in pipeline.walk():  # one bar, over files: the embedders' own bars would add two per batch
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    bar, progress, starting = _progress_callback(sys.stderr)
    try:
        # The paths as given (not the files found): a followed link keeps its own name, as the walk gave it.
        counts = index_paths(
            pipeline,
            args.paths,
            force=args.force,
            batch_files=args.batch_files,
            progress=progress,
            check=starting,
            follow_symlinks=args.follow_symlinks,
        )
    except PipelineRuntimeError as err:
        # A store error inside a component (a full disk, a damaged index) says what to do: print it, on one line.
        cause = err.__cause__
        if isinstance(cause, (DocumentStoreError, ValueError, OSError)):
            raise CliError(f"{cause} (in the indexing pipeline's '{err.component_name}')") from err
        raise
    finally:
        if bar.total is None:  # nothing needed indexing: close the bar as complete, not as "0 files, unknown total"
            bar.total = 0
        bar.close()
    total = store_of(pipeline).count_documents()
    print(
        f"{counts['files']} files: {counts['indexed']} indexed, {counts['skipped']} unchanged; "
        f"{counts['chunks_written']} chunks written, {counts['chunks_deleted']} removed; {total} documents in store",
        file=out,
    )
    if found.skipped_links:
        print(f"{len(found.skipped_links)} link(s) not followed (see 'skipped:' above)", file=out)
    if counts.get("redone"):
        print(f"{counts['redone']} source(s) left unfinished by an earlier run were redone", file=out)
    for partial in counts.get("partial", []):
        print(f"partial: {partial['source']}: {partial['reason']}", file=sys.stderr)
    if counts.get("partial"):
        print(f"warning: {len(counts['partial'])} file(s) indexed in part (`stats` lists them)", file=sys.stderr)
    if not getattr(args, "no_calibrate", False) and total:
        _keep_calibration(args, out)
    return _report_failures(counts.get("failed", []))


def _report_failures(failed: list[dict[str, Any]]) -> int:
    """Print each file that was not indexed and a summary by kind; the exit status (1 when any failed)."""
    for failure in failed:
        print(f"failed: {failure['source']}: {failure['reason']}", file=sys.stderr)
    if not failed:
        return 0
    kinds: dict[str, int] = {}
    for failure in failed:
        kinds[failure.get("kind", "failed")] = kinds.get(failure.get("kind", "failed"), 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    print(f"error: {len(failed)} file(s) not indexed ({summary})", file=sys.stderr)
    return EXIT_ERROR


def _keep_calibration(args: argparse.Namespace, out: TextIO) -> None:
    """Bring the quality gate's calibration up to date with what was just indexed (a bounded number of the index's
    own pseudo-queries for the new or changed sources, with a progress bar; nothing when nothing changed). A
    failure leaves the previous calibration and is reported, never fatal: the files are indexed."""
    from tqdm import tqdm

    from adaptive_retrieval.pipelines.gate_upkeep import update_calibration
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    bar = tqdm(total=None, unit="query", desc="calibrating the quality gate", file=sys.stderr, dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        result = update_calibration(load_pipeline("query", **_store_overrides(args)), progress=progress)
    except (ValueError, OSError, RuntimeError) as err:
        print(f"warning: the quality gate's calibration was not updated ({err}); it keeps the previous one", file=out)
        return
    finally:
        if bar.total is None:
            bar.total = 0
        bar.close()
    if result.written:
        print(
            f"quality gate calibrated on {result.samples} pseudo-queries of this index ({result.added} new, "
            f"{result.dropped} dropped, {result.seconds:.1f} s): {result.path}",
            file=out,
        )
    elif result.reason and result.reason != "up to date":
        print(f"quality gate not calibrated: {result.reason}; it judges with its built-in prior", file=out)


def cmd_query(args: argparse.Namespace, out: TextIO) -> int:
    """Retrieve passages for a question and show the routing diagnostics."""
    from adaptive_retrieval.pipelines.query_pipeline import run_query
    from adaptive_retrieval.pipelines.query_result import QueryResult
    from adaptive_retrieval.pipelines.validation import check_query, check_top_k
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    text = check_query(" ".join(args.text).strip())  # ValueError/TypeError: printed as `error: ...`, exit 1
    top_k = check_top_k(args.top_k)
    if owner := _store_owner(args):
        # One process owns an embedded store: ask it rather than open the folder a second time.
        print(f"({_owned_message(owner)}: asking it)", file=sys.stderr)
        body = {"query": text, **({"top_k": top_k} if top_k is not None else {})}
        answer = answer_field(owner, _call_server(owner, "POST", "/query/run", json=body), "result", dict)
        try:
            result = QueryResult.from_dict(answer)
        except ValueError as err:  # not the answer of this package's query route
            msg = f"{_owned_message(owner)}, which answered with a result of another shape: {str(err)[:300]}"
            raise ServerCallError(msg) from err
    else:
        pipeline = load_pipeline("query", **_store_overrides(args))
        result = run_query(pipeline, text).head(top_k)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False), file=out)
    else:
        print_query(result, out, args.full)
    if getattr(args, "fail_if_not_found", False) and result.verdict != "found":
        return EXIT_NOT_FOUND
    return 0


#: What each deleted source reports (``sources.delete_sources``), printed by ``delete``.
_DELETED_KEYS = frozenset({"source", "documents_removed", "graph_chunks_removed", "file_removed"})


def cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    """Delete indexed sources: their chunks, summaries and graph records, and the file when it is an upload."""
    if owner := _store_owner(args):
        print(f"({_owned_message(owner)}: asking it)", file=sys.stderr)
        # The server resolves names against its own working directory: send paths as absolute.
        names = [str(Path(n).resolve()) if "/" in n else n for n in args.sources]
        answer = _call_server(owner, "DELETE", "/sources", params={"source": names})
        removed = answer_field(owner, answer, "deleted", list)
        if not all(isinstance(item, dict) and item.keys() >= _DELETED_KEYS for item in removed):
            msg = f"{_owned_message(owner)}, which answered with deletions of another shape: {str(removed)[:200]!r}"
            raise ServerCallError(msg)
    else:
        from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of
        from adaptive_retrieval.pipelines.serving.wrapper_support import uploads_dir
        from adaptive_retrieval.pipelines.sources import SourceNotFoundError, delete_sources
        from adaptive_retrieval.pipelines.yaml_io import load_pipeline

        pipeline = load_pipeline("indexing", **_store_overrides(args))
        store = store_of(pipeline)
        try:
            removed = delete_sources(store, args.sources, uploads_dir(store), graph_store_of(pipeline))
        except SourceNotFoundError as err:
            raise CliError(str(err)) from err
    for item in removed:
        file = "; uploaded file removed" if item["file_removed"] else ""
        print(
            f"{item['source']}: {item['documents_removed']} documents, "
            f"{item['graph_chunks_removed']} graph chunks removed{file}",
            file=out,
        )
    return 0


def cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    """Fit the quality gate on pseudo-queries drawn from this index (no labels) and save it with the index: a full
    re-run of what indexing keeps current."""
    from adaptive_retrieval.pipelines.gate_calibration import DEFAULT_QUERIES
    from adaptive_retrieval.pipelines.gate_upkeep import update_calibration
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("query", **_store_overrides(args))
    gate = pipeline.get_component("gate")
    target = Path(args.out) if args.out else (gate.calibration_file() if gate is not None else None)
    if target is None:
        msg = "The index has no local folder to keep the calibration in (a server store): pass --out FILE"
        raise CliError(msg)
    if gate.document_store is not None and gate.document_store.count_documents() == 0:
        msg = "The index is empty: index files first with `adaptive-retrieval index PATH`"
        raise CliError(msg)
    queries = DEFAULT_QUERIES if args.queries is None else args.queries
    result = update_calibration(pipeline, budget=queries, full=True, path=target, seed=args.seed)
    if not result.written or result.model is None:
        raise CliError(f"The gate could not be calibrated: {result.reason}")
    fitted, path = result.model, result.path
    r = fitted["report"]
    print(
        f"{r['pseudo_queries']} pseudo-queries in {result.seconds:.1f} s: AUROC {r['auroc_in_sample']:.3f} "
        f"({r['auroc_cross_validated']:.3f} cross-validated; the prior {r['prior_auroc']:.3f}); pass "
        f"{r['pass_present']:.0%} with the source present, {r['pass_excluded']:.0%} with it excluded "
        f"(the prior {r['prior_pass_present']:.0%} / {r['prior_pass_excluded']:.0%})\n"
        + (
            f"asked check at {fitted['asked_threshold']:.2f} (the prior's; soft matches from word similarity "
            f"{fitted.get('asked_floor', 1.0):.2f}): passes {r['asked_pass_present']:.0%} of the named "
            f"pseudo-queries, {r['asked_pass_absent']:.0%} of their absent-attribute variants\n"
            if "asked_pass_present" in r
            else ""
        )
        + f"wrote {path}",
        file=out,
    )
    return 0


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Serve the wrappers under ``pipelines/`` read-only with Hayhooks, plus MCP at ``/mcp`` and ``/diagrams``
    (see README "Serving securely" for the token, CORS and Host settings)."""
    from adaptive_retrieval.pipelines.processes.torch_free import import_haystack_without_torch

    import_haystack_without_torch()  # this process serves: before anything imports Haystack
    from haystack.lazy_imports import LazyImport

    from adaptive_retrieval.components.extras import install_hint
    from adaptive_retrieval.pipelines.serving.request_logs import quiet_request_logs

    quiet_request_logs()  # before Hayhooks is imported: it reads its log level then
    with LazyImport(install_hint("serve")) as serve_import:
        from hayhooks.server.app import run_app
        from hayhooks.server.exceptions import PipelineModuleLoadError

        from adaptive_retrieval.pipelines.serving.app import create_app
    serve_import.check()

    # The wrappers load their pipelines inside the server: they read the store from the environment.
    overrides = _store_overrides(args)
    if "url" in overrides:
        os.environ[QDRANT_URL_ENV] = overrides["url"]
    elif "path" in overrides:
        os.environ[STORE_PATH_ENV] = overrides["path"]
        os.environ.pop(QDRANT_URL_ENV, None)
    if owner := _store_owner(args):
        raise CliError(f"{_owned_message(owner)}: stop it first, or serve another --store")
    from adaptive_retrieval.pipelines.processes.workers import WorkersError, default_workers, serve_workers
    from adaptive_retrieval.pipelines.store_config import in_process_location

    workers = args.workers or default_workers()
    if workers > 1 and (url := settings.text(QDRANT_URL_ENV)) and in_process_location(url):
        # qdrant-client's in-process database lives in one process: workers could not share it.
        if args.workers:
            msg = f"--workers {workers} needs an index every worker reaches: QDRANT_URL={url} is in one process only"
            raise CliError(msg)
        workers = 1
    if workers > 1:
        try:
            return serve_workers(workers, args.host, args.port, args.pipelines_dir, out)
        except (WorkersError, OSError) as err:
            raise CliError(str(err)) from err
    try:
        app = create_app(args.pipelines_dir, host=args.host, port=args.port)
    except PipelineModuleLoadError as err:
        raise CliError(str(err)) from err
    print(f"serving on http://{args.host}:{args.port} (docs at /docs, MCP at /mcp, diagrams at /diagrams)", file=out)
    out.flush()
    garbage_collection.for_serving()
    run_app(app, host=args.host, port=args.port)
    return 0


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    """Show what an index holds per source (chunks, summaries, graph chunks, entities, hash, state) and totals;
    exits 1 when a source is not complete. ``--verify`` also checks every node, vector and graph record against
    the manifest records and prints one line per problem with the command that repairs it."""
    from adaptive_retrieval.components.indexing.index_identity import graph_problem
    from adaptive_retrieval.components.indexing.manifest import index_stats
    from adaptive_retrieval.pipelines.store_config import make_graph_store, make_store

    overrides = _store_overrides(args)
    path = overrides.get("path") or (None if overrides.get("url") else settings.text(STORE_PATH_ENV))
    if path and not os.path.isdir(path):
        msg = f"No index at {path}: index files first with `adaptive-retrieval index --store {path} PATH`"
        raise CliError(msg)
    store = make_store(create=False, **overrides)  # stats never create an index, nor write to its graph
    graph = make_graph_store(qdrant_path=getattr(store, "path", None), create=False)
    if problem := graph_problem(store, graph):  # another index's graph: its counts would describe that index
        raise CliError(problem)
    stats = index_stats(store, graph)
    if args.json and not args.verify:
        print(json.dumps(stats, indent=2), file=out)
    elif not args.json:
        print_stats(stats, out)
    complete = all(row["state"] == "complete" for row in stats["sources"].values())
    healthy = complete and not stats["totals"]["orphan_graph_chunks"]
    problems = _verify(args, store, graph, stats, out) if args.verify else 0
    return 0 if healthy and not problems else EXIT_ERROR


#: Findings printed per source by ``stats --verify`` (a damaged vector page can touch every node).
VERIFY_LINES_PER_SOURCE = 3


def _verify(args: argparse.Namespace, store: Any, graph: Any, stats: dict[str, Any], out: TextIO) -> int:
    """``stats --verify``: one line per problem with the command that repairs it; returns how many."""
    import shlex

    from adaptive_retrieval.components.indexing.verify import DELETE, INDEX, REINDEX, verify_index

    problems = verify_index(store, graph)
    where = " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in (("url", args.url), ("store", args.store)) if v)
    where = f" {where}" if where else ""
    fixes = {
        REINDEX: "adaptive-retrieval index --force" + where + " {source}",
        DELETE: "adaptive-retrieval delete" + where + " {source}",
        INDEX: "adaptive-retrieval index" + where + " FILES... (any indexing run repairs it)",
    }
    rebuild = "index your files into a new folder: adaptive-retrieval index --store NEW_FOLDER FILES..."
    shown: dict[str, int] = {}
    lines = []
    for p in problems:
        shown[p.source] = shown.get(p.source, 0) + 1
        if shown[p.source] > VERIFY_LINES_PER_SOURCE:
            continue
        fix = fixes.get(p.action, rebuild).format(source=shlex.quote(p.source))
        lines.append(f"problem: {p.source or '(index)'}: {p.what}; fix: {fix}")
    lines += [
        f"problem: {s}: {n - VERIFY_LINES_PER_SOURCE} more finding(s) like these"
        for s, n in shown.items()
        if n > VERIFY_LINES_PER_SOURCE
    ]
    if args.json:
        print(json.dumps({**stats, "problems": [p.__dict__ for p in problems]}, indent=2), file=out)
    else:
        for line in lines:
            print(line, file=out)
        sources = stats["totals"]["sources"]
        print(f"verify: {sources} sources checked, {len(problems)} problem(s)", file=out)
    return len(problems)


def cmd_draw(args: argparse.Namespace, out: TextIO) -> int:
    """Write the pipelines' mermaid text and render it offline (SVG/PNG/PDF, HTML page)."""
    from adaptive_retrieval.pipelines.diagrams.drawing import draw_pipelines

    for path in draw_pipelines(args.out, names=args.pipeline, formats=args.format, details=args.detail):
        print(path, file=out)
    return 0
