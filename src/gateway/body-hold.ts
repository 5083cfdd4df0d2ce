import { type BodyFields, BodyFieldsReader, type BodyRead } from "./body-fields.js";

/**
 * A web stream's prefix held while its fields are read (body-fields.ts), for the Hono edge (the
 * Worker, and Node's slow path): chunks are read until the body ends or passes the route's
 * limit, then `body` gives the origin the held chunks, unchanged, and the rest as it comes,
 * pulled only when the origin asks (nothing more is buffered).
 */
export async function holdBody(stream: ReadableStream<Uint8Array>, read: BodyRead, contentEncoding: string | null): Promise<{ fields: BodyFields; body: ReadableStream<Uint8Array> }> {
  const reader = stream.getReader();
  const fields = new BodyFieldsReader(read, contentEncoding);
  const held: Uint8Array[] = [];
  let ended = false;
  let failure: unknown;
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) {
        ended = true;
        break;
      }
      held.push(chunk.value);
      if (!fields.push(chunk.value)) break;
    }
  } catch (error) {
    // The upload broke off: the fields are unread, and the origin's stream fails as the client's did.
    failure = error;
  }
  let next = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        if (next < held.length) {
          controller.enqueue(held[next]!);
          held[next++] = EMPTY; // given away: not held for the rest of the exchange
          return;
        }
        if (failure !== undefined) return controller.error(failure);
        if (ended) return controller.close();
        try {
          const chunk = await reader.read();
          if (chunk.done) controller.close();
          else controller.enqueue(chunk.value);
        } catch (error) {
          controller.error(error);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return { fields: fields.finish(ended), body };
}

const EMPTY = new Uint8Array(0);
