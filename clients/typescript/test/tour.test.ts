// The README's tour through the TypeScript SDK, against a running gateway (scripts/sdk-check.sh
// starts one). Every step checks what it got back: values, versions, bytes, problem codes; a
// step after a failed one is skipped.
//
//     TOUR_BASE_URL=http://127.0.0.1:8080 TOUR_ADMIN_TOKEN=... \
//     TOUR_SHARDGATE=target/debug/shardgate TOUR_DATA_DIR=shardgate-data node --test dist/test/
//
// `TOUR_SHARDGATE` and `TOUR_DATA_DIR` sign the tenants' tokens (`shardgate token`), once each
// tenant exists: a token dated before its tenant is refused.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";

import { Shardgate, ShardgateProblem, valetDownload, valetUpload } from "../src/index.js";

const TENANT = "tour-typescript";
const OTHER = "tour-typescript-other";
const RECORD = "/v1/tenants/{tenant}/collections/{collection}/records/{key}";
const RECORDS = "/v1/tenants/{tenant}/collections/{collection}/records";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function tenantToken(tenant: string): string {
  const args = ["token", "--tenant", tenant, "--scopes", "read,write,manage", "--data-dir", env("TOUR_DATA_DIR")];
  return execFileSync(env("TOUR_SHARDGATE"), args, { encoding: "utf8" }).trim();
}

/** The problem `action` must be refused with. */
async function refused(action: Promise<unknown>, code: string, status: number): Promise<ShardgateProblem> {
  const outcome = await action.then(
    (got) => assert.fail(`expected the problem ${code} (${status}), got ${JSON.stringify(got)}`),
    (error: unknown) => error,
  );
  assert.ok(outcome instanceof ShardgateProblem, `expected a ShardgateProblem, got ${String(outcome)}`);
  assert.equal(outcome.code, code);
  assert.equal(outcome.status, status);
  assert.ok(outcome.detail.length > 0, "a problem has a detail");
  return outcome;
}

/** `data` as a stream of pieces, as a file or a socket would give it (no length known). */
function* pieces(data: Uint8Array, size = 64 * 1024): Generator<Uint8Array> {
  for (let start = 0; start < data.length; start += size) {
    yield data.subarray(start, start + size);
  }
}

/** The rest of an answer's body, read as the stream it is, and how many chunks it came in. */
async function streamed(response: Response): Promise<{ bytes: Buffer; chunks: number }> {
  assert.ok(response.body, "a download has a body");
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body) {
    chunks.push(chunk);
  }
  return { bytes: Buffer.concat(chunks), chunks: chunks.length };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

test("the tour through the TypeScript SDK", async (t) => {
  let failed = false;
  const step = (name: string, body: () => Promise<void>) =>
    t.test(name, { skip: failed && "an earlier step failed" }, async () => {
      try {
        await body();
      } catch (error) {
        failed = true;
        throw error;
      }
    });

  const base = env("TOUR_BASE_URL");
  const admin = new Shardgate(base, env("TOUR_ADMIN_TOKEN"));
  let sg: Shardgate | undefined;
  const tenant = () => {
    assert.ok(sg, "the tenant exists");
    return sg;
  };

  await step("create a tenant with the admin token", async () => {
    const created = await admin.call(admin.api.POST("/v1/admin/tenants", { body: { id: TENANT, name: "Tour (TypeScript)" } }));
    assert.equal(created.id, TENANT);
    assert.equal(created.name, "Tour (TypeScript)");
    await refused(admin.call(admin.api.POST("/v1/admin/tenants", { body: { id: TENANT } })), "tenant_exists", 409);
    sg = new Shardgate(base, tenantToken(TENANT));
  });

  await step("records with If-Match", async () => {
    const sg = tenant();
    const path = (key: string) => ({ tenant: TENANT, collection: "orders", key });
    const created = await sg.call(sg.api.PUT(RECORD, { params: { path: path("order-1") }, body: { total: 42, currency: "EUR" } }));
    assert.equal(created.version, 1);
    assert.deepEqual(created.value, { total: 42, currency: "EUR" });
    const ifVersion1 = { path: path("order-1"), header: { "If-Match": '"1"' } };
    const updated = await sg.call(sg.api.PUT(RECORD, { params: ifVersion1, body: { total: 43, currency: "EUR" } }));
    assert.equal(updated.version, 2);
    const stale = await refused(sg.call(sg.api.PUT(RECORD, { params: ifVersion1, body: { total: 0 } })), "precondition_failed", 412);
    assert.equal(stale.title, "Precondition Failed");
    assert.ok(stale.requestId, "a problem names its request");
    const got = await sg.call(sg.api.GET(RECORD, { params: { path: path("order-1") } }));
    assert.equal(got.version, 2);
    assert.deepEqual(got.value, { total: 43, currency: "EUR" });
    await refused(sg.call(sg.api.GET(RECORD, { params: { path: path("nope") } })), "record_not_found", 404);
  });

  await step("a listing longer than one page, followed by its cursor", async () => {
    const sg = tenant();
    const keys = Array.from({ length: 25 }, (_, n) => `item-${String(n).padStart(2, "0")}`);
    for (const [n, key] of keys.entries()) {
      await sg.call(sg.api.PUT(RECORD, { params: { path: { tenant: TENANT, collection: "items", key } }, body: { n } }));
    }
    const request = (cursor: string | undefined) =>
      sg.api.GET(RECORDS, { params: { path: { tenant: TENANT, collection: "items" }, query: { limit: 10, cursor } } });
    const sizes: number[] = [];
    for await (const page of sg.pages(request)) {
      sizes.push(page.items.length);
    }
    assert.deepEqual(sizes, [10, 10, 5]);
    const listed: [string, unknown][] = [];
    for await (const record of sg.items(request)) {
      listed.push([record.key, (record.value as { n: number }).n]);
    }
    assert.deepEqual(listed, keys.map((key, n) => [key, n]));
  });

  await step("an index: define it, wait for its backfill, look up by the field", async () => {
    const sg = tenant();
    for (const [key, value] of [["order-2", { total: 7, currency: "USD" }], ["order-3", { total: 9, currency: "EUR" }]] as const) {
      await sg.call(sg.api.PUT(RECORD, { params: { path: { tenant: TENANT, collection: "orders", key } }, body: value }));
    }
    const path = { tenant: TENANT, collection: "orders", index: "by-currency" };
    const index = await sg.call(sg.api.PUT("/v1/tenants/{tenant}/collections/{collection}/indexes/{index}", {
      params: { path },
      body: { field: "/currency" },
    }));
    assert.equal(index.name, "by-currency");
    assert.deepEqual(index.fields, ["/currency"]);
    const lookup = (cursor: string | undefined) =>
      sg.api.GET("/v1/tenants/{tenant}/collections/{collection}/indexes/{index}/records", {
        params: { path, query: { value: "EUR", limit: 1, cursor } },
      });
    let found: string[] | undefined;
    for (let attempt = 0; attempt < 100 && !found; attempt++) {
      try {
        const keys: string[] = [];
        for await (const record of sg.items(lookup)) keys.push(record.key);
        found = keys;
      } catch (error) {
        if (!(error instanceof ShardgateProblem && error.code === "index_building")) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    assert.deepEqual(found?.sort(), ["order-1", "order-3"]);
  });

  const photo = randomBytes(700_000);
  await step("a blob up and down, streamed", async () => {
    const sg = tenant();
    const blob = await sg.uploadBlob(TENANT, "photos/cat.bin", pieces(photo));
    assert.equal(blob.size, photo.length);
    assert.equal(blob.sha256, sha256(photo));
    assert.equal(blob.version, 1);
    const download = await sg.downloadBlob(TENANT, "photos/cat.bin");
    assert.equal(download.headers.get("etag"), `"${sha256(photo)}"`);
    const { bytes, chunks } = await streamed(download);
    assert.ok(bytes.equals(photo), "the blob came back different");
    assert.ok(chunks > 1, `700 kB came in ${chunks} chunk(s)`);
    const part = await sg.downloadBlob(TENANT, "photos/cat.bin", { range: "bytes=100-199" });
    assert.equal(part.status, 206);
    assert.ok((await streamed(part)).bytes.equals(photo.subarray(100, 200)), "the range came back different");
    const replaced = await sg.uploadBlob(TENANT, "photos/cat.bin", new Blob([photo.subarray(0, 1000)]), {
      ifMatch: `"${sha256(photo)}"`,
    });
    assert.equal(replaced.size, 1000);
    assert.equal(replaced.version, 2);
    await refused(sg.uploadBlob(TENANT, "photos/cat.bin", new Uint8Array([1]), { ifMatch: `"${sha256(photo)}"` }), "precondition_failed", 412);
  });

  await step("valet keys: URLs used as issued, with no token", async () => {
    const sg = tenant();
    const read = await sg.valetKey(TENANT, { path: "photos/cat.bin", permission: "read", expires_in: 600 });
    assert.equal(read.method, "GET");
    const { bytes } = await streamed(await valetDownload(read.url));
    assert.ok(bytes.equals(photo.subarray(0, 1000)), "the valet download came back different");
    const tampered = read.url.replace(/sg-sig=(.)/, (_, first: string) => `sg-sig=${first === "A" ? "B" : "A"}`);
    assert.notEqual(tampered, read.url);
    await refused(valetDownload(tampered), "valet_bad_signature", 403);
    const write = await sg.valetKey(TENANT, { path: "photos/dog.png", permission: "write", content_type: "image/png", expires_in: 600 });
    assert.equal(write.method, "PUT");
    const dog = randomBytes(300_000);
    assert.equal(await valetUpload(write.url, pieces(dog), { contentType: "image/png" }), 201);
    const stored = await sg.downloadBlob(TENANT, "photos/dog.png");
    assert.equal(stored.headers.get("content-type"), "image/png");
    assert.ok((await streamed(stored)).bytes.equals(dog), "what the valet URL uploaded is not what is stored");
  });

  await step("another tenant's data does not exist for this token", async () => {
    const sg = tenant();
    await admin.call(admin.api.POST("/v1/admin/tenants", { body: { id: OTHER } }));
    const path = { tenant: OTHER, collection: "orders", key: "order-1" };
    await refused(sg.call(sg.api.GET(RECORD, { params: { path } })), "tenant_not_found", 404);
    await refused(sg.downloadBlob(OTHER, "photos/cat.bin"), "tenant_not_found", 404);
  });
});
