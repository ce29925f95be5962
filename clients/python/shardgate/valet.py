"""Valet URLs, used exactly as issued and with no token: whoever holds one may do the one
operation it was signed for (docs/api.md, "Using a valet URL"). The URL is opaque: its path and
every `sg-` parameter are signed, so it is sent as it is, never taken apart and rebuilt (the
generated `valet_get` and `valet_put` rebuild it from parts, and the document declares only
`sg-sig` of them).
"""

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from .client import Source, raise_for_problem


@contextmanager
def valet_download(url: str, *, byte_range: str | None = None, timeout: float = 30.0) -> Iterator[httpx.Response]:
    """Opens the download of a read valet URL, streamed: iterate the answer's `iter_bytes()`.
    Raises `ShardgateProblem` before yielding when refused (403 `valet_expired`, ...)."""
    headers = {"Range": byte_range} if byte_range else {}
    with httpx.stream("GET", url, headers=headers, timeout=timeout) as response:
        raise_for_problem(response)
        yield response


def valet_upload(url: str, source: Source, *, content_type: str | None = None, timeout: float = 30.0) -> int:
    """Uploads through a write valet URL, streamed from `source` (bytes, a binary file-like
    object or an iterable of byte strings); answers the status, 201 (created) or 200 (replaced).
    `content_type` must be the one the key signed, if it signed one."""
    headers = {"Content-Type": content_type} if content_type else {}
    response = httpx.put(url, content=source, headers=headers, timeout=timeout)
    raise_for_problem(response)
    return response.status_code
