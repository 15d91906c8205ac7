"""Every environment variable the package reads, with its default and meaning: the one place that names them.

Components and pipelines read the environment only through this module, when they open, warm up or start (not
at import), so a variable set by the caller before that moment counts. An init parameter or a command-line flag
always wins over the variable. ``pipelines/README.md``'s configuration reference is generated from
:data:`SETTINGS` (``python scripts/settings_table.py --readme``), and a test keeps the two equal.

Usage::

    from adaptive_retrieval.components import settings

    settings.text("ADAPTIVE_PRECISION")       # "int8" unless the variable says otherwise
    settings.number("ADAPTIVE_MAX_UPLOAD_MB")  # 50.0; a bad value raises ValueError naming the variable
    settings.flag("ADAPTIVE_DEV_ALLOW_DEPLOY")  # False
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, default (``None``: unset means "not configured"), who reads it."""

    name: str
    default: str | None
    group: str
    meaning: str


_SETTINGS = (
    # -- stores ---------------------------------------------------------------------------------------------
    Setting(
        "ADAPTIVE_QDRANT_PATH",
        None,
        "stores",
        "Folder of the embedded Qdrant Edge index "
        "(default `$XDG_DATA_HOME/adaptive-retrieval/qdrant`, i.e. `~/.local/share/…`); `path` wins.",
    ),
    Setting(
        "ADAPTIVE_GRAPH_PATH",
        None,
        "stores",
        "The SQLite graph file (default `graph.sqlite` in the Qdrant folder; one found beside the folder, where "
        "earlier versions kept it, is moved in); `path` wins.",
    ),
    Setting(
        "QDRANT_URL",
        None,
        "stores",
        "A Qdrant server or cluster: the pipelines use qdrant-haystack's "
        "`QdrantDocumentStore` instead of the embedded store; `load_pipeline(url=...)` wins. `:memory:` or "
        "`file:///abs/folder`: the same store on qdrant-client's in-process mode (no server; one client per process, "
        "shared by every component: tests and CI).",
    ),
    Setting("QDRANT_API_KEY", None, "stores", "API key for `QDRANT_URL` (read by qdrant-haystack as a Secret)."),
    Setting("ADAPTIVE_QDRANT_SHARDS", None, "stores", "Shards of a collection created on `QDRANT_URL`."),
    Setting(
        "ADAPTIVE_QDRANT_REPLICATION", None, "stores", "Replication factor of a collection created on `QDRANT_URL`."
    ),
    Setting(
        "NEO4J_URI",
        None,
        "stores",
        "A Neo4j server for the graph instead of SQLite; `load_pipeline(graph_url=...)` wins.",
    ),
    Setting("NEO4J_USERNAME", None, "stores", "Neo4j user (read as a Haystack Secret; unset: no auth)."),
    Setting("NEO4J_PASSWORD", None, "stores", "Neo4j password (read as a Haystack Secret)."),
    Setting("NEO4J_DATABASE", "neo4j", "stores", "Neo4j database name."),
    Setting(
        "ADAPTIVE_NEO4J_LABEL_PREFIX",
        None,
        "stores",
        "Prefix of every Neo4j label the graph uses: two indexes on one Neo4j database stay apart by a prefix each "
        "(a graph written by another index is refused); `label_prefix` wins.",
    ),
    Setting(
        "ADAPTIVE_MIN_FREE_MB",
        "64",
        "stores",
        "Free disk space every open and write leaves, in MB "
        "(0 turns the check off); a write that would go below it is refused with a clear error.",
    ),
    Setting(
        "ADAPTIVE_STORE_SOCKET",
        None,
        "stores",
        "Set by `serve --workers N` in each worker: the store host's Unix socket "
        "(the pipelines' document store is then a `RemoteDocumentStore` on the host's index).",
    ),
    Setting(
        "ADAPTIVE_STORE_VECTOR_CACHE",
        "10000",
        "stores",
        "Dense vectors each `serve --workers` worker keeps from the store host (1.5 KB each at 384-d; one cache per "
        "index, shared by the pipeline's stores), so search answers carry no vectors; emptied on every write. 0: "
        "every answer carries its vectors.",
    ),
    Setting(
        "ADAPTIVE_STORE_POINT_CACHE",
        "10000",
        "stores",
        "Documents the embedded store (Qdrant Edge) keeps in its process once read (about 3 KB each at 384-d), so "
        "a search asks the shard for ids and scores only; emptied on every write. 0: every search reads them.",
    ),
    Setting(
        "ADAPTIVE_GRAPH_READ_CACHE",
        "4096",
        "stores",
        "Keys per kind of read (an entity's chunks, its neighbours, a chunk's entities, a name's entity) whose "
        "answers the embedded graph store (SQLite) keeps in its process (about 15 MB when full on the benchmark "
        "index); emptied when the graph file changes. 0: every read asks SQLite.",
    ),
    Setting(
        "ADAPTIVE_STORE_HOST_WAIT_S",
        "30",
        "stores",
        "Seconds a worker's store call keeps trying to reach a store host that does not answer (restarting).",
    ),
    # -- models ---------------------------------------------------------------------------------------------
    Setting("ADAPTIVE_DEVICE", "cpu", "models", "`cpu` or `cuda` for every model component; `device` wins."),
    Setting(
        "ADAPTIVE_PRECISION",
        "int8",
        "models",
        "`fp32`/`int8` (ONNX Runtime), `fp16`/`bf16`/`fp8` (GPU, PyTorch); `precision` wins. `fp8` runs as fp16 "
        "(measured slower than fp16) unless `ADAPTIVE_FP8_COMPILED` is set.",
    ),
    Setting(
        "ADAPTIVE_FP8_COMPILED",
        "0",
        "models",
        "`1`: the PyTorch back end runs `torch.compile` with static shapes, where `fp8` is torchao FP8 (an opt-in "
        "until scripts/lab/bench_gpu.py shows it faster than fp16 on the GPU).",
    ),
    Setting(
        "ADAPTIVE_MODELS_DIR",
        None,
        "models",
        "Where `adaptive-retrieval models build` writes and the "
        "components look for models (default: `models/` of a checkout, else "
        "`~/.local/share/adaptive-retrieval/models`); a folder passed as `model` wins.",
    ),
    Setting(
        "ADAPTIVE_CACHE_DIR",
        None,
        "models",
        "Cache of computed embeddings such as the router's exemplars "
        "(default `$XDG_CACHE_HOME/adaptive-retrieval/embeddings`, i.e. `~/.cache/…`).",
    ),
    Setting("ADAPTIVE_ORT_THREADS", "0", "models", "Intra-op threads of each ONNX Runtime session (0: ORT's choice)."),
    Setting(
        "ADAPTIVE_ORT_SPIN",
        "0",
        "models",
        "1 lets ONNX Runtime threads spin between calls (off: less CPU per query under load).",
    ),
    Setting(
        "ORT_DISABLE_TELEMETRY",
        "1",
        "models",
        "Set to 1 by the package unless the caller set it: ONNX Runtime sends no telemetry.",
    ),
    Setting(
        "ADAPTIVE_BLAS_THREADS",
        "1",
        "models",
        "BLAS threads per call: for the whole process in the CLI, the server and the scripts, and while the "
        "components multiply in any other (0 leaves BLAS alone).",
    ),
    # -- serving --------------------------------------------------------------------------------------------
    Setting(
        "ADAPTIVE_ACCESS_LOG",
        "0",
        "serving",
        "1 logs one line per HTTP request (uvicorn's access log; off by default: it costs CPU per request).",
    ),
    Setting(
        "ADAPTIVE_API_TOKEN",
        None,
        "serving",
        "Bearer token every route needs when set (REST, chat, MCP); the CLI sends it to a server that owns the store.",
    ),
    Setting(
        "ADAPTIVE_CORS_ORIGINS",
        None,
        "serving",
        "Comma-separated web origins allowed to call the API from a page (none by default).",
    ),
    Setting(
        "ADAPTIVE_ALLOWED_HOSTS", None, "serving", "Extra `Host` names the server answers (loopback names always)."
    ),
    Setting(
        "ADAPTIVE_DEV_ALLOW_DEPLOY",
        None,
        "serving",
        "Development only: keep Hayhooks' deploy/undeploy routes (they run uploaded code).",
    ),
    Setting(
        "ADAPTIVE_UPLOAD_DIR", None, "serving", "Where uploaded files are kept (default `uploads/` beside the store)."
    ),
    Setting(
        "ADAPTIVE_WORKER_INDEX",
        None,
        "serving",
        "Set by `serve --workers N` in each worker: its number (0..N-1), sent as `X-Adaptive-Worker`.",
    ),
    Setting("ADAPTIVE_WORKER_COUNT", None, "serving", "Set by `serve --workers N` in its processes: N."),
    Setting(
        "ADAPTIVE_SUPERVISOR_PID",
        None,
        "serving",
        "Set by `serve --workers N` in its processes: the pid of `serve`, which they do not outlive.",
    ),
    Setting(
        "ADAPTIVE_QUERY_CONCURRENCY",
        "2",
        "serving",
        "Queries each serving process runs at once; the others wait their turn (0: no bound): less CPU per request "
        "and a shorter tail of latencies under load.",
    ),
    Setting("ADAPTIVE_UPLOAD_QUEUE", "4", "serving", "Uploads waiting or running at once; more get 429."),
    Setting("ADAPTIVE_UPLOAD_TIMEOUT_S", "600", "serving", "Seconds an upload may wait and run before 503."),
    Setting(
        "ADAPTIVE_GATE_CALIBRATION_QUERIES",
        "200",
        "serving",
        "Most pseudo-queries one background update of the quality gate's calibration runs after an upload or a "
        "delete (0: no update; `adaptive-retrieval calibrate` re-runs it all).",
    ),
    Setting(
        "HAYHOOKS_DURABLE_MODE",
        None,
        "serving",
        "Hayhooks' own: `true` fixes pipelines at start-up; plain `hayhooks run` refuses to start without it.",
    ),
    Setting(
        "HAYHOOKS_CORS_ALLOW_ORIGINS",
        None,
        "serving",
        "Hayhooks' own CORS list: plain `hayhooks run` refuses to start while it allows every origin.",
    ),
    Setting("HAYHOOKS_CORS_ALLOW_ORIGIN_REGEX", None, "serving", "Hayhooks' own CORS pattern: refused when set."),
    Setting(
        "HAYHOOKS_TRACING_INCLUDE_HAYSTACK_SPANS",
        None,
        "serving",
        "Hayhooks' own: `true` copies the span of every component run into the buffer of its `/traces` routes. "
        "`adaptive-retrieval serve` leaves it off unless set (each span's tags JSON-encoded, 15 spans a query); the "
        "answers carry per-component timings (`timings_ms`) either way.",
    ),
    Setting(
        "LOG",
        None,
        "serving",
        "Hayhooks' own log level (loguru). `adaptive-retrieval serve` sets `WARNING` unless `ADAPTIVE_ACCESS_LOG=1`, "
        "so that no query's text is logged per request; set it (or `HAYHOOKS_LOG_LEVEL`) to choose.",
    ),
    Setting("HAYHOOKS_LOG_LEVEL", None, "serving", "Hayhooks' own log level; wins over `LOG`."),
    # -- limits ---------------------------------------------------------------------------------------------
    Setting("ADAPTIVE_MAX_UPLOAD_MB", "50", "limits", "Largest uploaded file, in MB (413 above)."),
    Setting("ADAPTIVE_MAX_REQUEST_MB", "100", "limits", "Largest upload request, in MB."),
    Setting("ADAPTIVE_MAX_REQUEST_FILES", "100", "limits", "Most files in one upload request."),
    Setting("ADAPTIVE_MAX_FILE_CHARS", "2000000", "limits", "Most characters of text one file may yield."),
    Setting("ADAPTIVE_MAX_FILE_CHUNKS", "3000", "limits", "Most chunks one file may produce."),
    Setting("ADAPTIVE_MAX_FILE_SECTIONS", "1500", "limits", "Most sections one file may produce."),
    Setting("ADAPTIVE_MAX_SECTION_DEPTH", "12", "limits", "Deepest heading nesting one file may have."),
    Setting("ADAPTIVE_MAX_PDF_PAGES", "300", "limits", "Most pages of one PDF."),
    # -- per-user folders (the freedesktop convention) -------------------------------------------------------
    Setting(
        "XDG_DATA_HOME",
        None,
        "folders",
        "Base of the per-user data folder (default `~/.local/share`): "
        "the default index and models live in `adaptive-retrieval/` there.",
    ),
    Setting("XDG_CACHE_HOME", None, "folders", "Base of the per-user cache (default `~/.cache`)."),
    Setting(
        "XDG_RUNTIME_DIR",
        None,
        "folders",
        "Where `serve --workers N` makes its private folder (mode 0700) for the store host's sockets "
        "(default: the temporary folder).",
    ),
    # -- diagrams and tests ---------------------------------------------------------------------------------
    Setting(
        "ADAPTIVE_NODE_MODULES",
        None,
        "diagrams",
        "The `node_modules` folder holding mermaid-cli (default: the checkout's `scripts/renderer/node_modules`).",
    ),
    Setting(
        "PUPPETEER_EXECUTABLE_PATH",
        None,
        "diagrams",
        "The Chromium that renders diagrams (default: `chromium` on PATH).",
    ),
    Setting(
        "ADAPTIVE_FAULT_AT",
        None,
        "testing",
        "Crash tests only: `<point>:<n>` SIGKILLs the process at the n-th pass of a named fault point.",
    ),
)

#: Every variable by name.
SETTINGS: dict[str, Setting] = {s.name: s for s in _SETTINGS}


def _setting(name: str) -> Setting:
    try:
        return SETTINGS[name]
    except KeyError:
        msg = f"{name} is not a setting of this package (components/settings.py names them all)"
        raise KeyError(msg) from None


def is_set(name: str) -> bool:
    """Whether the variable is set to something other than white space."""
    return bool(os.environ.get(_setting(name).name, "").strip())


def raw(name: str) -> str | None:
    """The variable's value exactly as set (not stripped: a secret is compared byte for byte), ``None`` when unset or
    empty."""
    return os.environ.get(_setting(name).name) or None


def text(name: str) -> str | None:
    """The variable's value (stripped), else its default; ``None`` when neither is set."""
    setting = _setting(name)
    raw = os.environ.get(name, "").strip()
    return raw or setting.default


def number(name: str, minimum: float = 0.0, strict: bool = False) -> float:
    """The variable as a finite number ``>= minimum`` (``> minimum`` when ``strict``), else its default.

    :raises ValueError: naming the variable, for a value that is not such a number.
    """
    raw = text(name)
    if raw is None:
        msg = f"${name} has no default: set it to a number"
        raise ValueError(msg)
    try:
        value = float(raw)
    except ValueError as err:
        msg = f"${name} must be a number, got {raw!r}"
        raise ValueError(msg) from err
    if value != value or value in (float("inf"), float("-inf")) or value < minimum or (strict and value == minimum):
        bound = f"more than {minimum:g}" if strict else f"{minimum:g} or more"
        msg = f"${name} must be {bound}, got {raw!r}"
        raise ValueError(msg)
    return value


def whole(name: str, minimum: int = 0) -> int:
    """The variable as a whole number ``>= minimum``, else its default.

    :raises ValueError: naming the variable, for a value that is not such a number.
    """
    raw = text(name)
    try:
        value = int(raw or "")
    except ValueError as err:
        msg = f"${name} must be a whole number >= {minimum}, got {raw!r}"
        raise ValueError(msg) from err
    if value < minimum:
        msg = f"${name} must be a whole number >= {minimum}, got {raw!r}"
        raise ValueError(msg)
    return value


def flag(name: str) -> bool:
    """Whether the variable (or its default) says yes: ``1``, ``true``, ``yes`` or ``on``, in any case."""
    return (text(name) or "").lower() in ("1", "true", "yes", "on")


def items(name: str) -> tuple[str, ...]:
    """The variable as a comma-separated list, blanks dropped."""
    return tuple(item.strip() for item in (text(name) or "").split(",") if item.strip())


def markdown_table() -> str:
    """The configuration reference as a Markdown table, grouped as :data:`SETTINGS` is."""
    rows = ["| variable | group | default | meaning |", "|---|---|---|---|"]
    for setting in _SETTINGS:
        default = f"`{setting.default}`" if setting.default is not None else "—"
        rows.append(f"| `{setting.name}` | {setting.group} | {default} | {setting.meaning} |")
    return "\n".join(rows)
