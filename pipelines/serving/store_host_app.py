"""The store host of ``adaptive-retrieval serve --workers N`` as a process: Haystack imported without torch, the
store served on its private socket (:mod:`~adaptive_retrieval.pipelines.processes.store_host`) and the app with the
indexing pipeline only on the other, where the workers forward every write.

Run by the supervisor (:mod:`~adaptive_retrieval.pipelines.processes.workers`), not by hand::

    python -m adaptive_retrieval.pipelines.serving.store_host_app --runtime DIR --host 127.0.0.1 --port 1416
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes import garbage_collection
from adaptive_retrieval.pipelines.processes.process_group import (
    HTTP_SOCKET,
    STORE_SOCKET,
    die_with_parent,
    private_pipelines_dir,
)
from adaptive_retrieval.pipelines.processes.torch_free import import_haystack_without_torch


def main(argv: list[str] | None = None) -> int:
    """Run the store host until stopped (SIGTERM/SIGINT), or until the process that started it dies."""
    parser = argparse.ArgumentParser(description="store host of `adaptive-retrieval serve --workers N`")
    parser.add_argument("--runtime", required=True, help="private folder for the sockets (0700)")
    parser.add_argument("--host", required=True, help="public interface the workers serve")
    parser.add_argument("--port", type=int, required=True, help="public port the workers serve")
    parser.add_argument("--pipelines-dir", default=None)
    args = parser.parse_args(argv)
    die_with_parent()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s store-host %(levelname)s %(name)s: %(message)s")

    # Before anything imports Haystack: the store host module imports it at its top (about 200 MB less).
    import_haystack_without_torch()
    import uvicorn

    from adaptive_retrieval.components.locations import qdrant_folder
    from adaptive_retrieval.pipelines.processes.store_host import StoreHost, bind_private_socket, serve_store
    from adaptive_retrieval.pipelines.serving.app import PIPELINES_DIR, create_app
    from adaptive_retrieval.pipelines.serving.request_logs import quiet_request_logs
    from adaptive_retrieval.pipelines.store_config import QDRANT_URL_ENV

    quiet_request_logs()

    runtime = Path(args.runtime)
    server = None
    if not settings.text(QDRANT_URL_ENV):
        server = serve_store(StoreHost(qdrant_folder(None)), runtime / STORE_SOCKET)
    # Bound before the app loads its pipeline: a forwarded upload waits in the backlog instead of being refused.
    listener = bind_private_socket(runtime / HTTP_SOCKET)
    source = Path(args.pipelines_dir or PIPELINES_DIR).resolve()
    app = create_app(private_pipelines_dir(runtime, ["indexing"], source), host=args.host, port=args.port)
    garbage_collection.for_serving()
    try:
        # Only this user's workers reach the private socket: trust the scheme they forward (see ForwardWrites).
        uvicorn.run(
            app,
            fd=listener.fileno(),
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=30,
            forwarded_allow_ips="*",
        )
    finally:
        if server is not None:
            server.shutdown()
            server.host.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
