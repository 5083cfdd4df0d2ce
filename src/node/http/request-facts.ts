import type { IncomingMessage } from "node:http";
import type { GatewayFacts } from "../../gateway/core.js";
import type { HeaderLookup } from "../../gateway/keys.js";
import type { CanonicalPath } from "../../http/path.js";
import { rawField, rawFieldRepeated } from "./raw-fields.js";

/** Background work whose failure is its own business (a lease release, an origin pause): never an unhandled rejection. */
export function quietly(promise: Promise<unknown>): void {
  promise.catch(() => {});
}

/**
 * The core's facts about a request node:http parsed, shared by a plain request (Exchange,
 * gateway-edge.ts) and an upgrade (upgrade-edge.ts): one object per request, no closures.
 * Fields are read from rawHeaders (Node's `headers` drops repeats). Subclasses say when the
 * client has gone away (`watchGone`), which aborts `signal()`.
 */
export abstract class NodeRequestFacts implements GatewayFacts, HeaderLookup {
  readonly req: IncomingMessage;
  readonly method: string;
  readonly path: CanonicalPath;
  readonly search: string;
  readonly headers: HeaderLookup = this;
  readonly socketIp: string | undefined;
  readonly defer = quietly;
  #controller: AbortController | undefined;

  constructor(req: IncomingMessage, path: CanonicalPath) {
    this.req = req;
    this.method = req.method!;
    this.path = path;
    const url = req.url!;
    // URL.search's exact form (its percent-encoding of a query) only when there is a query.
    this.search = url.indexOf("?") < 0 ? "" : new URL(url, "http://h").search;
    this.socketIp = req.socket.remoteAddress;
  }

  url(): URL {
    return new URL(this.req.url!, `http://${this.header("host") ?? "localhost"}`);
  }

  /** A field as Headers.get reads it: repeated fields joined by ", ". */
  get(name: string): string | null {
    return this.header(name) ?? null;
  }

  header(name: string): string | undefined {
    return rawField(this.req.rawHeaders, name);
  }

  /** Whether a field came on two lines or more (a `header:` key refuses such a request). */
  repeated(name: string): boolean {
    return rawFieldRepeated(this.req.rawHeaders, name);
  }

  /** Aborted when the client goes away before it is answered (a delayed request is dropped). */
  signal(): AbortSignal {
    if (!this.#controller) {
      const controller = (this.#controller = new AbortController());
      this.watchGone(() => controller.abort());
    }
    return this.#controller.signal;
  }

  /** Calls `gone` once the client has gone away unanswered; asked only when a request may be delayed. */
  protected abstract watchGone(gone: () => void): void;
}
