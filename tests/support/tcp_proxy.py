"""A TCP forwarder on 127.0.0.1, for tests where a server becomes reachable only later: until
`start()` nothing listens on its port (connections are refused), then every connection is
relayed to the target; `close()` stops listening and cuts the relayed connections."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Relay 127.0.0.1:`port` to `target_host`:`target_port` once started."""

    def __init__(self, port: int, target_host: str, target_port: int) -> None:
        self.port = port
        self._target = (target_host, target_port)
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self._listener = listener
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
