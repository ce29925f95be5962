/**
 * A client for shardgate, the multi-tenant sharded storage gateway.
 *
 * `new Shardgate(baseUrl, token)` calls every operation of shardgate's OpenAPI document through
 * openapi-fetch (`sg.api`, typed by `paths`, generated into `schema.ts`), iterates listings across
 * their pages, streams blobs and issues valet keys; `valetDownload` and `valetUpload` use a valet
 * URL with no token. Every refusal is a `ShardgateProblem` carrying the stable `code`.
 */

export { Shardgate, type Answer, type Page, type PageRequest, type UploadOptions } from "./client.js";
export { ShardgateProblem } from "./problem.js";
export { valetDownload, valetUpload } from "./valet.js";
export type { Source } from "./body.js";
export type { components, operations, paths } from "./schema.js";
