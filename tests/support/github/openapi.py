"""Validation of every emulator request and response against GitHub's OpenAPI description.

The description is ``@octokit/openapi`` ``generated/api.github.com.json`` (OpenAPI 3.0.3), read
from the project's ``node_modules`` (installed by ``scripts/setup``). It is loaded once per
process with spec self-validation switched off (toolchain.md section 5: 35 s otherwise) and a
relative server ``/api/v3`` added so any host with the GHES prefix matches.

Statuses GitHub may answer on any endpoint (401, 403 and 429 rate limits, 5xx) are often not
listed per operation; for those the body is checked against ``basic-error`` instead.
"""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from pathlib import Path
from typing import Any

from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_schema_validator import OAS30Validator

SPEC_PATH = (
    Path(__file__).resolve().parents[3]
    / "node_modules"
    / "@octokit"
    / "openapi"
    / "generated"
    / "api.github.com.json"
)
"""GitHub's REST description (13 MB); ``scripts/setup`` installs the npm package."""

GLOBAL_STATUSES = frozenset({401, 403, 404, 429, 500, 502, 503, 504})
"""Statuses any endpoint may return, validated against ``basic-error`` when undocumented."""

_LOCK = threading.Lock()


@cache
def _spec() -> dict[str, Any]:
    assert SPEC_PATH.is_file(), f"{SPEC_PATH} missing: run scripts/setup"
    spec: dict[str, Any] = json.loads(SPEC_PATH.read_bytes())
    spec["servers"] = [{"url": "https://api.github.com"}, {"url": "/api/v3"}]
    return spec


@cache
def _api() -> OpenAPI:
    return OpenAPI.from_dict(_spec(), config=Config(spec_validator_cls=None))


@cache
def _basic_error_validator() -> OAS30Validator:
    return OAS30Validator(_spec()["components"]["schemas"]["basic-error"])


def examples() -> dict[str, Any]:
    """``components.examples`` of the description, name -> example object."""
    return {k: v.get("value") for k, v in _spec()["components"]["examples"].items()}


def documented_statuses(method: str, pattern: str) -> set[str]:
    """Response statuses the description lists for ``method`` on path ``pattern``."""
    operation = _spec()["paths"].get(pattern, {}).get(method.lower(), {})
    return set(operation.get("responses", {}))


def validate_request(
    host_url: str, method: str, path: str, query: dict[str, str], body: bytes | None
) -> list[str]:
    """Problems with one request; empty when it conforms."""
    with _LOCK:
        try:
            _api().validate_request(_request(host_url, method, path, query, body))
        except Exception as exc:  # openapi-core raises many unrelated classes
            return [f"request {method} {path}: {_describe(exc)}"]
    return []


def validate_response(
    host_url: str,
    method: str,
    path: str,
    query: dict[str, str],
    request_body: bytes | None,
    status: int,
    response_body: bytes,
    pattern: str,
) -> list[str]:
    """Problems with one response to a conforming request; empty when it conforms."""
    with _LOCK:
        if str(status) not in documented_statuses(method, pattern) and status in GLOBAL_STATUSES:
            errors = list(_basic_error_validator().iter_errors(json.loads(response_body or b"{}")))
            return [f"response {status} {method} {path}: {e.message}" for e in errors]
        response = MockResponse(response_body, status_code=status, content_type="application/json")
        try:
            _api().validate_response(
                _request(host_url, method, path, query, request_body), response
            )
        except Exception as exc:
            return [f"response {status} {method} {path}: {_describe(exc)}"]
    return []


_SLASHED_PARAMETER = re.compile(r"^(?P<head>.*/git/(?:ref|refs|matching-refs)/)(?P<ref>.+)$")
"""Paths whose last template parameter (``{ref}``) holds slashes on GitHub (``heads/a/b``)."""


def _request(
    host_url: str, method: str, path: str, query: dict[str, str], body: bytes | None
) -> MockRequest:
    # OpenAPI path templates never match "/" inside a parameter; GitHub's {ref} does.
    match = _SLASHED_PARAMETER.match(path)
    if match:
        path = match["head"] + match["ref"].replace("/", "%2F")
    return MockRequest(
        host_url,
        method.lower(),
        path,
        args=query,
        data=body or None,
        content_type="application/json",
    )


def _describe(exc: BaseException) -> str:
    """The schema errors behind an openapi-core exception, without the (large) offending value."""
    details: list[str] = []
    cause: BaseException | None = exc
    while cause is not None:
        for error in getattr(cause, "schema_errors", None) or ():
            details.extend(_leaf_errors(error))
        cause = cause.__cause__
    head = f"{type(exc).__name__}: {str(exc)[:200]}"
    return head if not details else f"{type(exc).__name__}: " + "; ".join(dict.fromkeys(details))


def _leaf_errors(error: Any) -> list[str]:
    if error.context:
        return [m for sub in error.context for m in _leaf_errors(sub)][:6]
    where = "/".join(str(p) for p in error.absolute_path)
    return [f"{error.message[:200]} at /{where}"]
