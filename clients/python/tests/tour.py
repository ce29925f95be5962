"""The README's tour through the Python SDK, against a running gateway (scripts/sdk-check.sh
starts one). Every step checks what it got back: values, versions, bytes, problem codes. The
first step that fails ends the tour with a non-zero status.

    TOUR_BASE_URL=http://127.0.0.1:8080 TOUR_ADMIN_TOKEN=... \
    TOUR_SHARDGATE=target/debug/shardgate TOUR_DATA_DIR=shardgate-data python tests/tour.py

`TOUR_SHARDGATE` and `TOUR_DATA_DIR` sign the tenants' tokens (`shardgate token`), once each
tenant exists: a token dated before its tenant is refused.
"""

import hashlib
import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

from shardgate import Shardgate, ShardgateProblem, valet_download, valet_upload
from shardgate.generated.api.admin import create_tenant
from shardgate.generated.api.indexes import lookup_records, put_index
from shardgate.generated.api.records import get_record, list_records, put_record
from shardgate.generated.models import CreateTenant, IndexSpec

TENANT = "tour-python"
OTHER = "tour-python-other"


class TourFailed(Exception):
    pass


def ok(what: str, condition: bool, got: object = None) -> None:
    """Ends the tour unless `condition` holds; prints the step otherwise."""
    if not condition:
        raise TourFailed(f"{what}: got {got!r}")
    print(f"ok  {what}")


def refused(what: str, code: str, status: int, action: Callable[[], object]) -> ShardgateProblem:
    """Ends the tour unless `action` raises the problem `code` with `status`."""
    try:
        got = action()
    except ShardgateProblem as problem:
        ok(what, (problem.code, problem.status) == (code, status) and bool(problem.detail), problem)
        return problem
    raise TourFailed(f"{what}: expected the problem {code} ({status}), got {got!r}")


def tenant_token(tenant: str) -> str:
    command = [os.environ["TOUR_SHARDGATE"], "token", "--tenant", tenant, "--scopes", "read,write,manage"]
    command += ["--data-dir", os.environ["TOUR_DATA_DIR"]]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def downloaded(open_download: Callable[[], object]) -> bytes:
    """The whole body of a download opened by `open_download` (a `download_blob` or
    `valet_download` call)."""
    with open_download() as answer:
        return answer.read()


def pieces(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    """`data` as a stream of pieces, as a file or a socket would give it (no length known)."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def main() -> None:
    base = os.environ["TOUR_BASE_URL"]
    admin = Shardgate(base, os.environ["TOUR_ADMIN_TOKEN"])

    # A tenant (admin token), then a token of its own.
    tenant = admin.call(create_tenant, body=CreateTenant(id=TENANT, name="Tour (Python)"))
    ok("create the tenant", tenant.id == TENANT and tenant.name == "Tour (Python)", tenant)
    refused("creating it again", "tenant_exists", 409, lambda: admin.call(create_tenant, body=CreateTenant(id=TENANT)))
    sg = Shardgate(base, tenant_token(TENANT))

    # Records, with If-Match on the version (the ETag).
    created = sg.call(put_record, TENANT, "orders", "order-1", body={"total": 42, "currency": "EUR"})
    ok("put order-1: version 1", created.version == 1 and created.value == {"total": 42, "currency": "EUR"}, created)
    updated = sg.call(put_record, TENANT, "orders", "order-1", body={"total": 43, "currency": "EUR"}, if_match='"1"')
    ok("update order-1 if still version 1: version 2", updated.version == 2, updated)
    stale = refused(
        "a stale If-Match is a 412 problem",
        "precondition_failed",
        412,
        lambda: sg.call(put_record, TENANT, "orders", "order-1", body={"total": 0}, if_match='"1"'),
    )
    ok("the problem carries its title and request id", stale.title == "Precondition Failed" and bool(stale.request_id), stale)
    got = sg.call(get_record, TENANT, "orders", "order-1")
    ok("get order-1: the update, version 2", (got.version, got.value) == (2, {"total": 43, "currency": "EUR"}), got)
    refused("a missing record", "record_not_found", 404, lambda: sg.call(get_record, TENANT, "orders", "nope"))

    # A listing longer than one page, followed by its cursor.
    keys = [f"item-{n:02}" for n in range(25)]
    for n, key in enumerate(keys):
        sg.call(put_record, TENANT, "items", key, body={"n": n})
    sizes = [len(page.items) for page in sg.pages(list_records, TENANT, "items", limit=10)]
    ok("25 records come in pages of 10, 10 and 5", sizes == [10, 10, 5], sizes)
    listed = [(record.key, record.value["n"]) for record in sg.items(list_records, TENANT, "items", limit=10)]
    ok("iterating the pages gives every record in key order", listed == list(zip(keys, range(25))), listed)

    # An index: define it (scope manage), wait for its backfill, look records up by the field.
    sg.call(put_record, TENANT, "orders", "order-2", body={"total": 7, "currency": "USD"})
    sg.call(put_record, TENANT, "orders", "order-3", body={"total": 9, "currency": "EUR"})
    index = sg.call(put_index, TENANT, "orders", "by-currency", body=IndexSpec(field="/currency"))
    ok("define the index by-currency", index.name == "by-currency" and index.fields == ["/currency"], index)
    found: list[str] = []
    for _ in range(100):
        try:
            found = [record.key for record in sg.items(lookup_records, TENANT, "orders", "by-currency", value="EUR", limit=1)]
            break
        except ShardgateProblem as problem:
            if problem.code != "index_building":
                raise
            time.sleep(0.1)
    ok("look up by currency EUR (pages of 1)", sorted(found) == ["order-1", "order-3"], found)

    # A blob up and down, streamed both ways.
    photo = os.urandom(700_000)
    digest = hashlib.sha256(photo).hexdigest()
    blob = sg.upload_blob(TENANT, "photos/cat.bin", pieces(photo))
    ok("upload a blob from a stream of pieces", (blob.size, blob.sha256, blob.version) == (len(photo), digest, 1), blob)
    with sg.download_blob(TENANT, "photos/cat.bin") as answer:
        chunks = list(answer.iter_bytes())
        etag = answer.headers["etag"]
    ok("download it streamed: the same bytes", b"".join(chunks) == photo and etag == f'"{digest}"', (len(chunks), etag))
    with sg.download_blob(TENANT, "photos/cat.bin", byte_range="bytes=100-199") as answer:
        ok("a range of it: 206", answer.status_code == 206 and answer.read() == photo[100:200], answer.status_code)
    replaced = sg.upload_blob(TENANT, "photos/cat.bin", io.BytesIO(photo[:1000]), if_match=f'"{digest}"')
    ok("replace it from a file, If-Match its SHA-256: version 2", (replaced.size, replaced.version) == (1000, 2), replaced)
    refused(
        "a stale If-Match on a blob",
        "precondition_failed",
        412,
        lambda: sg.upload_blob(TENANT, "photos/cat.bin", b"x", if_match=f'"{digest}"'),
    )
    kept = photo[:1000]

    # Valet keys: URLs used as issued, with no token.
    key = sg.valet_key(TENANT, "photos/cat.bin", "read", expires_in=600)
    ok("a read valet key", key.method == "GET" and key.url.startswith("http"), key)
    ok("download through it without a token", downloaded(lambda: valet_download(key.url)) == kept)
    tampered = re.sub(r"sg-sig=(.)", lambda sig: "sg-sig=" + ("B" if sig[1] == "A" else "A"), key.url)
    refused("a tampered valet URL", "valet_bad_signature", 403, lambda: downloaded(lambda: valet_download(tampered)))
    upload = sg.valet_key(TENANT, "photos/dog.png", "write", content_type="image/png", expires_in=600)
    dog = os.urandom(300_000)
    status = valet_upload(upload.url, pieces(dog), content_type="image/png")
    ok("upload through a write valet key", upload.method == "PUT" and status == 201, (upload, status))
    with sg.download_blob(TENANT, "photos/dog.png") as answer:
        ok("what it uploaded is stored, with its type", (answer.read(), answer.headers["content-type"]) == (dog, "image/png"))

    # Another tenant's data does not exist for this token.
    admin.call(create_tenant, body=CreateTenant(id=OTHER))
    refused("another tenant's records", "tenant_not_found", 404, lambda: sg.call(get_record, OTHER, "orders", "order-1"))
    refused("another tenant's blobs", "tenant_not_found", 404, lambda: downloaded(lambda: sg.download_blob(OTHER, "photos/cat.bin")))
    print("the tour ran green through the Python SDK")


if __name__ == "__main__":
    try:
        main()
    except TourFailed as failure:
        sys.exit(f"FAILED {failure}")
