"""A proxy on 127.0.0.1 in front of the GitHub emulator that floods one endpoint.

``with FloodProxy(gh.api_url, r"/repos/octo/boom/pulls$") as proxy:`` point the bot at
``proxy.api_url``: every request (REST and git) is forwarded to the emulator (method, headers
and body both ways; the emulator's address in answers becomes the proxy's, as PyGithub follows
only URLs of its own base), except those whose path matches the pattern: they are answered
``200`` with a body
that never ends (chunked, or ``declare`` a ``Content-Length`` of 1 TiB) until the client hangs
up. ``proxy.flooded`` counts such answers, ``proxy.sent`` the bytes written to them (final once
``proxy.ended`` is set: the writer counts after each write, in its own thread).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

CHUNK = b"[" + b'{"title": "' + b"x" * 65_000 + b'"},'
"""One piece of the endless answer: JSON that never closes."""

DECLARED_BYTES = 1 << 40
"""The ``Content-Length`` of a declared flood."""

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def read_body(request: BaseHTTPRequestHandler) -> bytes:
    """The request's body, sent with a length or chunked (git sends large pushes chunked)."""
    if request.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return request.rfile.read(int(request.headers.get("Content-Length") or 0))
    out = bytearray()
    while size := int(request.rfile.readline().split(b";")[0], 16):
        out += request.rfile.read(size)
        request.rfile.readline()
    request.rfile.readline()
    return bytes(out)


class FloodProxy:
    """Forward to ``upstream`` (the emulator's ``api_url``), flood paths matching ``path_regex``."""

    def __init__(self, upstream: str, path_regex: str, *, declare: bool = False) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.pattern = re.compile(path_regex)
        self.declare = declare
        self.flooded = 0
        self.sent = 0
        self.ended = threading.Event()
        """Set when a flooded answer has ended (the client hung up): ``sent`` is final."""
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def handle(self) -> None:
                # the client may close a kept-alive connection at any time
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def do_GET(self) -> None:
                proxy.handle(self)

            def do_POST(self) -> None:
                proxy.handle(self)

            def do_PATCH(self) -> None:
                proxy.handle(self)

            def do_PUT(self) -> None:
                proxy.handle(self)

            def do_DELETE(self) -> None:
                proxy.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.api_url = self.url + self.prefix
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FloodProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = read_body(request)
        if self.pattern.search(urlsplit(request.path).path):
            self.flood(request)
            return
        upstream = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream.request(request.command, request.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
            data = answer.read().replace(self.origin.encode(), self.url.encode())
            request.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    request.send_header(key, value.replace(self.origin, self.url))
            request.send_header("Content-Length", str(len(data)))
            request.end_headers()
            request.wfile.write(data)
        finally:
            upstream.close()

    def flood(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.flooded += 1
        request.close_connection = True
        try:
            request.send_response(200)
            request.send_header("Content-Type", "application/json; charset=utf-8")
            if self.declare:
                request.send_header("Content-Length", str(DECLARED_BYTES))
            else:
                request.send_header("Transfer-Encoding", "chunked")
            request.end_headers()
            while True:
                piece = CHUNK if self.declare else b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK)
                request.wfile.write(piece)
                with self._lock:
                    self.sent += len(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what the bound is for
        finally:
            self.ended.set()
