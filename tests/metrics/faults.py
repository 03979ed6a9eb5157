"""A fault-injecting HTTP proxy on 127.0.0.1 in front of the real Prometheus.

``FaultProxy(upstream, rule)``: for every request ``rule(n, seen)`` (``n`` counts from 0) returns
``None`` to forward it unchanged, a ``Reply`` to answer instead, or a function that rewrites the
upstream JSON. Every request is recorded (method, path, URL query, form, headers, body); remote
read requests (protobuf) have no form.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    url_query: str
    form: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Rewrite = Callable[[dict[str, Any]], dict[str, Any]]
Rule = Callable[[int, Seen], "Reply | Rewrite | None"]


class FaultProxy:
    """Start with ``with FaultProxy(url, rule) as proxy:``; ``proxy.url`` is where to point."""

    def __init__(self, upstream: str | None, rule: Rule) -> None:
        self.upstream = upstream
        self.rule = rule
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def do_GET(self) -> None:
                self._handle(b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._handle(self.rfile.read(length))

            def _handle(self, body: bytes) -> None:
                parts = urlsplit(self.path)
                ctype = self.headers.get("Content-Type", "")
                form = (
                    {k: v[0] for k, v in parse_qs(body.decode()).items()}
                    if ctype.startswith("application/x-www-form-urlencoded")
                    else {}
                )
                seen = Seen(self.command, parts.path, parts.query, form, dict(self.headers), body)
                with proxy._lock:
                    n = len(proxy.seen)
                    proxy.seen.append(seen)
                action = proxy.rule(n, seen)
                if isinstance(action, Reply):
                    time.sleep(action.delay_s)
                    self._send(action.status, action.body, action.headers)
                    return
                assert proxy.upstream, "no upstream to forward to"
                upstream = requests.request(
                    self.command,
                    proxy.upstream + self.path,
                    data=body,
                    headers={
                        k: v
                        for k, v in self.headers.items()
                        if k.lower() in ("content-type", "content-encoding")
                    },
                    timeout=30,
                )
                content = upstream.content
                if action is not None:
                    content = json.dumps(action(upstream.json())).encode()
                headers = {"Content-Type": upstream.headers.get("Content-Type", "application/json")}
                self._send(upstream.status_code, content, headers)

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"status": "error", "errorType": kind, "error": message}).encode()


def empty_body(seen: Seen) -> bytes:
    ranged = seen.path.endswith("query_range") or seen.form.get("query", "").endswith("]")
    kind = "matrix" if ranged else "vector"
    return json.dumps({"status": "success", "data": {"resultType": kind, "result": []}}).encode()
