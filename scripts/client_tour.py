"""The README's tour, through a client generated from openapi/openapi.json by an independent
generator (openapi-python-client). Run by scripts/client-tour.sh, which generates the client
(the package `shardgate_client`), starts an embedded gateway and passes its base URL, an admin
token, and the binary and data directory that sign the tenant's token once the tenant exists. Every step checks the status and the parsed answer: a step the generated client cannot
express, or an answer it cannot parse into the model the document promises, fails the tour.

    python3 client_tour.py BASE ADMIN_TOKEN SHARDGATE DATA_DIR
"""

import hashlib
import os
import subprocess
import sys
import time
from http import HTTPStatus

import httpx
from shardgate_client import AuthenticatedClient, Client
from shardgate_client.api.admin import (
    create_tenant,
    explain_route,
    get_shard_map,
    list_audit,
    list_shards,
)
from shardgate_client.api.blobs import get_blob, put_blob
from shardgate_client.api.indexes import lookup_records, put_index
from shardgate_client.api.operations import readyz
from shardgate_client.api.records import get_record, list_records, put_record
from shardgate_client.api.valet import issue_valet_key
from shardgate_client.models import (
    BlobInfo,
    CreateTenant,
    IndexSpec,
    IssueValetKey,
    Problem,
    RecordEnvelope,
    Tenant,
    ValetKey,
)
from shardgate_client.types import File

STEPS = 0


def check(what, response, status, model=None):
    """Fails the tour unless `response` has `status` and parsed into `model`."""
    global STEPS
    if response.status_code != status:
        sys.exit(f"{what}: expected {int(status)}, got {int(response.status_code)}: {response.content[:400]!r}")
    if model is not None and not isinstance(response.parsed, model):
        sys.exit(f"{what}: the answer did not parse into {model.__name__}: {response.parsed!r}")
    STEPS += 1
    print(f"ok  {what}: {int(response.status_code)}")
    return response.parsed


def check_problem(what, response, status, code):
    """`check` of a refusal: fails the tour unless `response` is a Problem of `status` and `code`."""
    problem = check(what, response, status, Problem)
    assert problem.code == code, problem
    return problem


def main(base, admin_token, shardgate, data_dir):
    admin = AuthenticatedClient(base_url=base, token=admin_token, raise_on_unexpected_status=True)

    ready = readyz.sync_detailed(client=Client(base_url=base))
    check("the gateway is ready", ready, HTTPStatus.OK)

    tenant = check(
        "create tenant demo",
        create_tenant.sync_detailed(client=admin, body=CreateTenant(id="demo", name="Demo Inc.")),
        HTTPStatus.CREATED,
        Tenant,
    )
    assert tenant.id == "demo", tenant
    # A tenant's token is signed after the tenant exists (one dated before is refused).
    tenant_token = subprocess.run(
        [shardgate, "token", "--tenant", "demo", "--scopes", "read,write,manage", "--data-dir", data_dir],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    demo = AuthenticatedClient(base_url=base, token=tenant_token, raise_on_unexpected_status=True)

    # Records: any JSON value; 201 on create, 200 on update; the version is the ETag.
    order = {"total": 42, "currency": "EUR"}
    created = check(
        "put order-1",
        put_record.sync_detailed("demo", "orders", "order-1", client=demo, body=order),
        HTTPStatus.CREATED,
        RecordEnvelope,
    )
    assert created.version == 1, created
    check(
        "put order-2",
        put_record.sync_detailed("demo", "orders", "order-2", client=demo, body={"total": 7}),
        HTTPStatus.CREATED,
        RecordEnvelope,
    )
    # A value that is not an object is a record too, and reads back as it was written. (Not
    # null: the generated client passes it to httpx as `json=None`, which sends no body.)
    for key, value in [("n1", ["a", "b"]), ("n2", "a string"), ("n3", 9007199254740993), ("n4", True)]:
        check(f"put a record holding {value!r}", put_record.sync_detailed("demo", "notes", key, client=demo, body=value), HTTPStatus.CREATED, RecordEnvelope)
        back = check(f"get {key}", get_record.sync_detailed("demo", "notes", key, client=demo), HTTPStatus.OK, RecordEnvelope)
        assert back.value == value, (key, back.value)

    # Optimistic concurrency: If-Match the version.
    update = {"total": 43, "currency": "EUR"}
    updated = check(
        "update order-1 if still version 1",
        put_record.sync_detailed("demo", "orders", "order-1", client=demo, body=update, if_match='"1"'),
        HTTPStatus.OK,
        RecordEnvelope,
    )
    assert updated.version == 2, updated
    check_problem(
        "a stale If-Match is refused",
        put_record.sync_detailed("demo", "orders", "order-1", client=demo, body=update, if_match='"1"'),
        HTTPStatus.PRECONDITION_FAILED,
        "precondition_failed",
    )

    got = check(
        "get order-1",
        get_record.sync_detailed("demo", "orders", "order-1", client=demo),
        HTTPStatus.OK,
        RecordEnvelope,
    )
    assert got.value == {"total": 43, "currency": "EUR"}, got.value
    page = check(
        "list orders",
        list_records.sync_detailed("demo", "orders", client=demo, prefix="order-", limit=10),
        HTTPStatus.OK,
    )
    assert [item.key for item in page.items] == ["order-1", "order-2"], page
    check_problem(
        "a missing record is a problem",
        get_record.sync_detailed("demo", "orders", "nope", client=demo),
        HTTPStatus.NOT_FOUND,
        "record_not_found",
    )

    # An index table: look records up by another field without a fan-out.
    check(
        "define index by_currency",
        put_index.sync_detailed(
            "demo", "orders", "by_currency", client=demo, body=IndexSpec.from_dict({"field": "/currency"})
        ),
        HTTPStatus.CREATED,
    )
    found = None
    for _ in range(100):
        found = lookup_records.sync_detailed("demo", "orders", "by_currency", client=demo, value="EUR")
        if found.status_code == HTTPStatus.OK:
            break
        time.sleep(0.1)
    page = check("look up by currency", found, HTTPStatus.OK)
    assert [item.key for item in page.items] == ["order-1"], page

    route = check(
        "explain where order-1 lives",
        explain_route.sync_detailed(client=admin, tenant="demo", collection="orders", key="order-1"),
        HTTPStatus.OK,
    )
    assert route.shard, route
    audit = check("the audit log", list_audit.sync_detailed(client=admin, action="tenant."), HTTPStatus.OK)
    assert any(item.action == "tenant.create" for item in audit.items), audit

    # Blobs: bytes up and down, with a single range.
    photo = os.urandom(300_000)
    blob = check(
        "put a blob",
        put_blob.sync_detailed(
            "demo",
            "photos/cat.bin",
            client=demo,
            body=File(payload=photo, file_name="cat.bin", mime_type="application/octet-stream"),
        ),
        HTTPStatus.CREATED,
        BlobInfo,
    )
    assert blob.sha256 == hashlib.sha256(photo).hexdigest() and blob.size == len(photo), blob
    whole = check("get the blob", get_blob.sync_detailed("demo", "photos/cat.bin", client=demo), HTTPStatus.OK, File)
    assert whole.payload.read() == photo, "the blob came back different"
    part = check(
        "get its first 100 bytes",
        get_blob.sync_detailed("demo", "photos/cat.bin", client=demo, range_="bytes=0-99"),
        HTTPStatus.PARTIAL_CONTENT,
        File,
    )
    assert part.payload.read() == photo[:100], "the range came back different"

    # A valet key: an opaque URL, used exactly as issued, with no token.
    key = check(
        "issue a read valet key",
        issue_valet_key.sync_detailed(
            "demo",
            client=demo,
            body=IssueValetKey.from_dict({"path": "photos/cat.bin", "permission": "read", "expires_in": 600}),
        ),
        HTTPStatus.CREATED,
        ValetKey,
    )
    downloaded = httpx.get(key.url)
    if downloaded.status_code != 200 or downloaded.content != photo:
        sys.exit(f"the valet URL as issued did not give the blob: {downloaded.status_code}")
    print("ok  download through the valet URL without a token: 200")

    shard_map = check("the shard map", get_shard_map.sync_detailed(client=admin), HTTPStatus.OK)
    shards = check("the shards", list_shards.sync_detailed(client=admin), HTTPStatus.OK)
    assert shard_map is not None and shards is not None

    # Another tenant's records: to demo's token they do not exist (no oracle of which tenants do).
    check(
        "create tenant other",
        create_tenant.sync_detailed(client=admin, body=CreateTenant(id="other")),
        HTTPStatus.CREATED,
        Tenant,
    )
    check_problem(
        "another tenant's records are refused",
        get_record.sync_detailed("other", "orders", "order-1", client=demo),
        HTTPStatus.NOT_FOUND,
        "tenant_not_found",
    )
    print(f"the tour ran green through the generated client: {STEPS} checked steps")


if __name__ == "__main__":
    main(*sys.argv[1:5])
