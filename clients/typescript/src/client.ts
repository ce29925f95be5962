/**
 * A shardgate client from a base URL and a token.
 *
 * Every JSON operation is openapi-fetch's, typed by the paths generated from the OpenAPI document
 * (`src/schema.ts`), and passed to `call`, which turns a problem into a `ShardgateProblem`. This
 * module adds what the generated types cannot say: listings as async iterators that follow
 * `next_cursor`, blobs streamed both ways, and valet keys. Valet URLs themselves are used in
 * `valet.ts`, with no token.
 */

import createClient, { type Client } from "openapi-fetch";

import { bodyOf, type Source } from "./body.js";
import { ShardgateProblem } from "./problem.js";
import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

/** What an openapi-fetch call resolves to. */
export interface Answer<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** A page of a listing: records, blobs, index look-ups, tenants, jobs, the audit log. */
export interface Page<I> {
  items: I[];
  next_cursor?: string | null;
}

/** Asks for the page at `cursor` (undefined: the first). */
export type PageRequest<P> = (cursor: string | undefined) => Promise<Answer<P>>;

export interface UploadOptions {
  /** The blob's media type, kept with it. Default `application/octet-stream`. */
  contentType?: string;
  /** A quoted SHA-256 (the blob's `ETag`) or `*`: write only if the blob has it. */
  ifMatch?: string;
  /** `*`: create only. */
  ifNoneMatch?: string;
}

/** One server and one token (a tenant's or an admin's). */
export class Shardgate {
  /** The openapi-fetch client: every operation of the document, typed, with the token. */
  readonly api: Client<paths>;

  constructor(baseUrl: string, token: string) {
    this.api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  }

  /**
   * The data of an operation's answer (undefined for an answer without a body, such as 204 or
   * 304); throws `ShardgateProblem` for any status of 400 or more.
   *
   *     const record = await sg.call(sg.api.GET("/v1/tenants/{tenant}/collections/{collection}/records/{key}",
   *       { params: { path: { tenant, collection, key } } }));
   */
  async call<D>(request: Promise<Answer<D>>): Promise<D> {
    return dataOf(await request);
  }

  /**
   * Each page of a listing, passing each page's `next_cursor` as the next request's `cursor`
   * until it is null.
   *
   *     for await (const page of sg.pages((cursor) => sg.api.GET("/v1/tenants/{tenant}/blobs",
   *       { params: { path: { tenant }, query: { limit: 100, cursor } } }))) { ... }
   */
  async *pages<P extends Page<unknown>>(request: PageRequest<P>): AsyncGenerator<P> {
    let cursor: string | undefined;
    do {
      const page = await this.call(request(cursor));
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Each item of every page of a listing, in the listing's order. */
  async *items<I>(request: PageRequest<Page<I>>): AsyncGenerator<I> {
    for await (const page of this.pages(request)) {
      yield* page.items;
    }
  }

  /**
   * Opens a blob's download: the answer, its `body` a stream of the bytes not yet read, its
   * headers the `ETag` (the quoted SHA-256) and `Content-Type`. `range` is one `bytes=` range
   * (the answer is then 206). Throws `ShardgateProblem` when refused.
   */
  async downloadBlob(tenant: string, path: string, options: { range?: string } = {}): Promise<Response> {
    const header = options.range === undefined ? {} : { Range: options.range };
    const answer = await this.api.GET("/v1/tenants/{tenant}/blobs/{path}", {
      params: { path: { tenant, path }, header },
      parseAs: "stream",
    });
    dataOf(answer);
    return answer.response;
  }

  /**
   * Uploads a blob, streamed from `source`, replacing any blob at `path` at once; answers its
   * description (size, SHA-256, version).
   */
  async uploadBlob(tenant: string, path: string, source: Source, options: UploadOptions = {}): Promise<Schemas["BlobInfo"]> {
    const header: { "If-Match"?: string; "If-None-Match"?: string } = {};
    if (options.ifMatch !== undefined) header["If-Match"] = options.ifMatch;
    if (options.ifNoneMatch !== undefined) header["If-None-Match"] = options.ifNoneMatch;
    return this.call(
      this.api.PUT("/v1/tenants/{tenant}/blobs/{path}", {
        params: { path: { tenant, path }, header },
        // The document's `Binary` (format: binary) is a string to openapi-typescript; the body
        // goes out as the bytes or stream it is, unserialized.
        body: bodyOf(source) as unknown as string,
        bodySerializer: (body: unknown) => body,
        headers: { "Content-Type": options.contentType ?? "application/octet-stream" },
        duplex: "half",
      }),
    );
  }

  /**
   * Asks for a valet key: a URL (`.url`) that lets anyone, with no token, read (`permission:
   * "read"`: GET and HEAD) or write (`"write"`: PUT) the blob at `path` until it expires.
   */
  async valetKey(tenant: string, key: Schemas["IssueValetKey"]): Promise<Schemas["ValetKey"]> {
    return this.call(this.api.POST("/v1/tenants/{tenant}/valet-keys", { params: { path: { tenant } }, body: key }));
  }
}

/** The data of an answer; throws its problem if it is one. */
function dataOf<D>({ data, error, response }: Answer<D>): D {
  if (response.status >= 400) {
    throw ShardgateProblem.fromAnswer(response, error);
  }
  return data as D;
}
