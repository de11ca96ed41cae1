"""A real HTTP server on 127.0.0.1 for tests that need a peer to talk to (webhook receivers)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler],
    *,
    wrap: Callable[[socket.socket], socket.socket] | None = None,
) -> Iterator[ThreadingHTTPServer]:
    """Serve `handler` on a free port of 127.0.0.1 in a thread (its listening socket passed
    through `wrap` first, e.g. for TLS) until the block ends; yields the server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if wrap is not None:
        server.socket = wrap(server.socket)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
