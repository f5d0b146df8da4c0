"""Typed problems: every error answer of the API is an RFC 7807 ``application/problem+json``
document, raised as the exception class of its status."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Type


class LongrunError(Exception):
    """A problem the API answered with, or (``status`` 0) an API that could not be reached."""

    status: int = 0

    def __init__(
        self,
        status: int,
        title: str,
        detail: str = "",
        type: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(f"{title}: {detail}" if detail else title)
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.body = body or {}


class Unreachable(LongrunError):
    """The API did not answer (connection refused, DNS, timeout)."""


class BadRequest(LongrunError):
    """400: the request is malformed (a bad cursor, a bad query value)."""


class Unauthorized(LongrunError):
    """401: no token, or a token the server does not know."""


class Forbidden(LongrunError):
    """403"""


class NotFound(LongrunError):
    """404: no such run, document or resource, or one that is not yours."""


class Conflict(LongrunError):
    """409: the run is not in a state that allows this (e.g. no report yet)."""


class Unprocessable(LongrunError):
    """422: the body does not satisfy the API's rules (a blank objective, a budget < 1)."""


class TooManyRequests(LongrunError):
    """429: e.g. the active-run limit."""


class ServerError(LongrunError):
    """5xx"""


_BY_STATUS: Dict[int, Type[LongrunError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Unprocessable,
    429: TooManyRequests,
}


def problem_from(status: int, content: bytes, reason: str = "") -> LongrunError:
    """The exception for an error answer: its class from the status, its fields from the
    problem document (a body that is not one still gives an exception of the right class)."""
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else LongrunError)
    title = reason or f"HTTP {status}"
    detail = ""
    type_ = None
    body: Dict[str, Any] = {}
    try:
        parsed = json.loads(content or b"null")
    except ValueError:
        parsed = None
        detail = f"The server answered {status} without a readable body."
    if isinstance(parsed, dict):
        body = parsed
        title = str(parsed.get("title", title))
        detail = str(parsed.get("detail", ""))
        type_ = None if parsed.get("type") is None else str(parsed["type"])
    return cls(status, title, detail, type_, body)
