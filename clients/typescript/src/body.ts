/** What an upload reads from, and how it becomes a fetch body. */

/**
 * The bytes of an upload: all at once (`Uint8Array`, `Blob`), or streamed (a `ReadableStream`,
 * or any iterable of byte chunks, such as a Node.js `fs.createReadStream`).
 */
export type Source = Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** `source` as a fetch body; an iterable is pulled one chunk at a time as the request sends. */
export function bodyOf(source: Source): Uint8Array | Blob | ReadableStream<Uint8Array> {
  if (source instanceof Uint8Array || source instanceof Blob || source instanceof ReadableStream) {
    return source;
  }
  const iterator =
    Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : (source as Iterable<Uint8Array>)[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) {
        controller.close();
      } else {
        controller.enqueue(next.value);
      }
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}
