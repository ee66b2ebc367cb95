"""A TCP proxy in a thread, to cut a server off from its clients without stopping it.

`cut()` closes every open connection and refuses new ones (they are accepted and closed at
once), which is what a client sees of a database that went down; `restore()` lets them
through again. The shared Postgres server is never touched.
"""

from __future__ import annotations

import selectors
import socket
import threading


class TcpProxy:
    """127.0.0.1:<port> -> target, with an outage switch."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._down = threading.Event()
        self._closed = threading.Event()
        self.refused = 0  # connections closed on arrival during an outage
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._thread.start()

    # -- outage switch -------------------------------------------------------
    def cut(self) -> None:
        """Drop every open connection and refuse new ones until restore()."""
        self._down.set()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for sock in (a, b):
                _close(sock)

    def restore(self) -> None:
        """Let connections through again."""
        self._down.clear()

    def close(self) -> None:
        """Stop accepting and drop everything."""
        self._closed.set()
        self.cut()
        _close(self._listener)

    # -- plumbing --------------------------------------------------------------
    def _accept_loop(self) -> None:
        self._listener.settimeout(0.2)
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._down.is_set():
                self.refused += 1
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(
                target=self._pump, args=(client, upstream), name="tcp-proxy-pump", daemon=True
            ).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while True:
                for key, _ in sel.select(timeout=0.5):
                    src: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = src.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
                if self._closed.is_set():
                    return
        except (OSError, ValueError):
            return  # cut() closed the sockets under us
        finally:
            sel.close()
            _close(a)
            _close(b)
            with self._lock:
                if (a, b) in self._pairs:
                    self._pairs.remove((a, b))


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
