import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";
import type { Limiter } from "../../../../src/core/limiter.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

export interface Listening {
  url: string;
  close(): Promise<void>;
}

/** A real server on an ephemeral loopback port (an Express app is a request listener too). */
export async function listen(listener: http.RequestListener): Promise<Listening> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Starts a GET with `x-user`, then destroys the connection once the server has the request. */
export function abortedGet(url: string, user: string, whenReceived: Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    const request = http.get(url, { headers: { "x-user": user } });
    request.on("error", () => resolve());
    void whenReceived.then(() => request.destroy());
  });
}

/** A MemoryStore that counts lease releases (the store is a collaborator, not the thing under test). */
export class CountingStore extends MemoryStore {
  releases = 0;
  override async release(...args: Parameters<MemoryStore["release"]>): ReturnType<MemoryStore["release"]> {
    this.releases++;
    return super.release(...args);
  }
}

/**
 * The store and the server of the test that is running: after each test the server is
 * closed, and the store closed and replaced by a fresh one. Call at file or describe level.
 */
export function perTest(): { store: CountingStore; running: Listening | undefined } {
  const current: { store: CountingStore; running: Listening | undefined } = { store: new CountingStore(), running: undefined };
  afterEach(async () => {
    await current.running?.close();
    current.running = undefined;
    await current.store.close();
    current.store = new CountingStore();
  });
  return current;
}

/** A store whose every call rejects with `error`: an unreachable or faulty backend. */
export function failingStore(error: Error): Limiter {
  const reject = () => Promise.reject(error);
  return { kind: "failing", check: reject, peek: reject, debit: reject, reset: reject, acquire: reject, release: reject, extend: reject, credits: reject, health: reject };
}

/** A promise with its resolve function, to hold a handler busy until the test says so. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
