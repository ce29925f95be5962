/**
 * Valet URLs, used exactly as issued and with no token: whoever holds one may do the one
 * operation it was signed for (docs/api.md, "Using a valet URL"). The URL is opaque: its path and
 * every `sg-` parameter are signed, so it is fetched as it is, never taken apart and rebuilt from
 * the document's `/valet/{tenant}/{path}` (which declares only `sg-sig` of them).
 */

import { bodyOf, type Source } from "./body.js";
import { ShardgateProblem } from "./problem.js";

/**
 * Opens the download of a read valet URL: the answer, its `body` a stream of the bytes. Throws
 * `ShardgateProblem` when refused (403 `valet_expired`, ...).
 */
export async function valetDownload(url: string, options: { range?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = options.range === undefined ? {} : { Range: options.range };
  const response = await fetch(url, { headers });
  if (response.status >= 400) {
    throw await ShardgateProblem.read(response);
  }
  return response;
}

/**
 * Uploads through a write valet URL, streamed from `source`; answers the status, 201 (created) or
 * 200 (replaced). `contentType` must be the one the key signed, if it signed one.
 */
export async function valetUpload(url: string, source: Source, options: { contentType?: string } = {}): Promise<number> {
  const headers: Record<string, string> = options.contentType === undefined ? {} : { "Content-Type": options.contentType };
  const response = await fetch(url, { method: "PUT", body: bodyOf(source), headers, duplex: "half" });
  if (response.status >= 400) {
    throw await ShardgateProblem.read(response);
  }
  await response.body?.cancel();
  return response.status;
}
