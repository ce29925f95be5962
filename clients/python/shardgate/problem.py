"""The one exception the client raises for an answer that is not a success."""

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any


class ShardgateProblem(Exception):
    """A failed answer: shardgate's problem+json document (RFC 9457), as an exception.

    Branch on `code`, the stable machine-readable code (`precondition_failed`,
    `record_not_found`, ...; docs/api.md lists them all); `detail` is a sentence for people.
    `request_id` is the server's `x-request-id`: quote it when asking an operator. An answer that
    is not problem+json (a proxy's error page) has `code` None and its text in `detail`.
    """

    def __init__(
        self,
        *,
        status: int,
        code: str | None,
        title: str,
        detail: str,
        request_id: str | None = None,
        document: Mapping[str, Any] | None = None,
    ):
        super().__init__(f"{status} {code or title}: {detail}")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.document = dict(document or {})

    @classmethod
    def from_answer(cls, status: int, headers: Mapping[str, str], body: bytes) -> "ShardgateProblem":
        """The problem an answer's status, headers and body describe."""
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        request_id = headers.get("x-request-id")
        if isinstance(document, dict) and isinstance(document.get("code"), str):
            return cls(
                status=int(document.get("status", status)),
                code=document["code"],
                title=str(document.get("title", "")),
                detail=str(document.get("detail", "")),
                request_id=request_id,
                document=document,
            )
        try:
            title = HTTPStatus(status).phrase
        except ValueError:
            title = "Unknown Status"
        text = body[:500].decode("utf-8", errors="replace")
        return cls(status=status, code=None, title=title, detail=text, request_id=request_id)
