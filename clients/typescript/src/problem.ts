/** The one error the client throws for an answer that is not a success. */

/**
 * A failed answer: shardgate's problem+json document (RFC 9457), as an error.
 *
 * Branch on `code`, the stable machine-readable code (`precondition_failed`, `record_not_found`,
 * ...; docs/api.md lists them all); `detail` is a sentence for people. `requestId` is the server's
 * `x-request-id`: quote it when asking an operator. An answer that is not problem+json (a proxy's
 * error page) has `code` null and its text in `detail`.
 */
export class ShardgateProblem extends Error {
  override readonly name = "ShardgateProblem";

  constructor(
    readonly status: number,
    readonly code: string | null,
    readonly title: string,
    readonly detail: string,
    readonly requestId: string | null,
    readonly document: Record<string, unknown> | null,
  ) {
    super(`${status} ${code ?? title}: ${detail}`);
  }

  /** The problem an answer describes, its body already read (parsed as JSON when it was JSON). */
  static fromAnswer(response: Response, body: unknown): ShardgateProblem {
    const requestId = response.headers.get("x-request-id");
    if (isProblem(body)) {
      const status = typeof body.status === "number" ? body.status : response.status;
      return new ShardgateProblem(status, body.code, String(body.title ?? ""), String(body.detail ?? ""), requestId, body);
    }
    const text = typeof body === "string" ? body : body === undefined ? "" : JSON.stringify(body);
    return new ShardgateProblem(response.status, null, response.statusText, text.slice(0, 500), requestId, null);
  }

  /** The problem an answer describes, reading its body. */
  static async read(response: Response): Promise<ShardgateProblem> {
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: the text is the detail.
    }
    return ShardgateProblem.fromAnswer(response, body);
  }
}

function isProblem(body: unknown): body is Record<string, unknown> & { code: string } {
  return typeof body === "object" && body !== null && typeof (body as { code?: unknown }).code === "string";
}
