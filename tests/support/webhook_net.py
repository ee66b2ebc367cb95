"""Test stand-ins for the network a webhook reaches: a fake DNS (`FakeDNS`, patched over
lab.webhook_targets.resolve, so no test asks a real resolver) and receivers on 127.0.0.1 (an
HTTP server answering a chosen status and body, optionally over TLS, and a raw TCP service
that answers a non-HTTP banner)."""

from __future__ import annotations

import ipaddress
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lab.webhook_targets import IP


@dataclass
class FakeDNS:
    """Names and the addresses they resolve to; a name not listed does not resolve."""

    table: dict[str, list[str]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def resolve(self, host: str, port: int) -> list[IP]:
        self.calls.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(a) for a in self.table[host]]


@dataclass
class Receiver:
    """A running receiver: its port, the POSTs it got, and what it answers."""

    port: int = 0
    got: list[dict[str, Any]] = field(default_factory=list)
    code: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)


def _handler(rec: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            rec.got.append({"headers": dict(self.headers), "body": body, "path": self.path})
            self.send_response(rec.code)
            for name, value in rec.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(rec.body)))
            self.end_headers()
            self.wfile.write(rec.body)

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler


@contextmanager
def receiver(tls: ssl.SSLContext | None = None) -> Iterator[Receiver]:
    """An HTTP(S) receiver on 127.0.0.1, stopped on exit."""
    rec = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    rec.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def banner_service(banner: bytes) -> Iterator[int]:
    """A non-HTTP TCP service on 127.0.0.1 (say, SSH) that writes `banner` and closes; its port."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(banner)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
