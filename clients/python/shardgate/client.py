"""A shardgate client from a base URL and a token.

Every JSON operation is the generated one (`shardgate.generated.api`), called through
`Shardgate.call`, which turns a problem into a `ShardgateProblem`. This module adds what the
generated code cannot say: listings as iterators that follow `next_cursor`, blobs streamed both
ways, and valet keys. Valet URLs themselves are used in `shardgate.valet`, with no token.
"""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import IO, Any
from urllib.parse import quote

import httpx

from .generated import AuthenticatedClient
from .generated.api.valet import issue_valet_key
from .generated.models import BlobInfo, IssueValetKey, ValetKey
from .generated.types import UNSET
from .problem import ShardgateProblem

# What an upload reads from: the bytes, a binary file-like object (read in pieces), or an
# iterable of byte strings (sent as they come, chunked).
Source = bytes | IO[bytes] | Iterable[bytes]


class Shardgate:
    """One server and one token (a tenant's or an admin's).

    `api` is the generated client, for any generated operation called directly.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0):
        self.api = AuthenticatedClient(
            base_url=base_url.rstrip("/"),
            token=token,
            timeout=httpx.Timeout(timeout),
            raise_on_unexpected_status=False,
        )

    def close(self) -> None:
        self.api.get_httpx_client().close()

    def __enter__(self) -> "Shardgate":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Any:
        """Calls a generated operation (a module of `shardgate.generated.api`) with this client
        and answers its parsed body (None for an answer without one, such as 204 or 304).

        Raises `ShardgateProblem` for any status of 400 or more.
        """
        response = operation.sync_detailed(*args, client=self.api, **kwargs)
        if response.status_code >= 400:
            raise ShardgateProblem.from_answer(response.status_code, response.headers, response.content)
        return response.parsed

    def pages(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Each page of a listing (records, blobs, index look-ups, tenants, jobs, the audit log),
        passing each page's `next_cursor` as the next request's `cursor` until it is null.
        `limit` sets the page size; other arguments are the operation's."""
        cursor = kwargs.pop("cursor", UNSET)
        while True:
            page = self.call(operation, *args, cursor=cursor, **kwargs)
            yield page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def items(self, operation: ModuleType, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Each item of every page of a listing, in the listing's order."""
        for page in self.pages(operation, *args, **kwargs):
            yield from page.items

    @contextmanager
    def download_blob(self, tenant: str, path: str, *, byte_range: str | None = None) -> Iterator[httpx.Response]:
        """Opens a blob's download, streamed: iterate the answer's `iter_bytes()`; `headers`
        has its `ETag` (the quoted SHA-256) and `Content-Type`. `byte_range` is one `bytes=` range
        (the answer is then 206). Raises `ShardgateProblem` before yielding when refused."""
        headers = {"Range": byte_range} if byte_range else {}
        with self.api.get_httpx_client().stream("GET", blob_url(tenant, path), headers=headers) as response:
            raise_for_problem(response)
            yield response

    def upload_blob(
        self,
        tenant: str,
        path: str,
        source: Source,
        *,
        content_type: str = "application/octet-stream",
        if_match: str | None = None,
        if_none_match: str | None = None,
    ) -> BlobInfo:
        """Uploads a blob, streamed from `source`, replacing any blob at `path` at once; answers
        its description (size, SHA-256, version). `if_match` takes a quoted SHA-256 (or `*`),
        `if_none_match="*"` creates only."""
        headers = {"Content-Type": content_type}
        if if_match is not None:
            headers["If-Match"] = if_match
        if if_none_match is not None:
            headers["If-None-Match"] = if_none_match
        response = self.api.get_httpx_client().put(blob_url(tenant, path), content=source, headers=headers)
        raise_for_problem(response)
        return BlobInfo.from_dict(response.json())

    def valet_key(self, tenant: str, path: str, permission: str = "read", **options: Any) -> ValetKey:
        """Asks for a valet key: a URL (`.url`) that lets anyone, with no token, read
        (`permission="read"`: GET and HEAD) or write (`"write"`: PUT) the blob at `path` until it
        expires. `options` are the other fields of `IssueValetKey`: `expires_in` (seconds),
        `content_type`, `max_size`, `content_disposition`, `single_use`."""
        body = IssueValetKey.from_dict({"path": path, "permission": permission, **options})
        return self.call(issue_valet_key, tenant, body=body)


def blob_url(tenant: str, path: str) -> str:
    """The path of a blob's URL, each segment percent-encoded."""
    segments = "/".join(quote(segment, safe="") for segment in path.split("/"))
    return f"/v1/tenants/{quote(tenant, safe='')}/blobs/{segments}"


def raise_for_problem(response: httpx.Response) -> None:
    """Raises the problem a (possibly streamed) answer of 400 or more carries."""
    if response.status_code >= 400:
        raise ShardgateProblem.from_answer(response.status_code, response.headers, response.read())
