// A request's facts as the route's key sources read them (keys.ts RequestFacts), for the gateway core.
import type { CanonicalPath } from "../http/path.js";
import type { BodyFields } from "./body-fields.js";
import type { IpAddress } from "./ip.js";
import type { CfProperties, HeaderLookup, RequestFacts } from "./keys.js";
import { normalHost } from "./match.js";
import { type PathPattern, keyPathOf } from "./routes.js";

/** What KeyFacts reads of core.ts's GatewayFacts (a type of its own: core.ts imports this file). */
export interface GatewayFacts {
  method: string;
  path: CanonicalPath;
  headers: HeaderLookup;
  url(): URL;
  cf?(): CfProperties | undefined;
}

/** The request's Host as match.host and `host` keys read it: the field, else the URL's. */
export const hostOf = (facts: GatewayFacts) => normalHost(facts.headers.get("host") ?? facts.url().host);

/**
 * A key's view of the request, with the URL built only when a `query:` key reads it. A class,
 * not an object literal with a getter: V8 gives each such literal a fresh hidden class, which
 * lives in old space, and that kept every limited request's objects past the young-generation
 * collections (scavenges of 6 ms instead of under 1 ms: the gateway's p99).
 */
export class KeyFacts implements RequestFacts {
  readonly clientIp: IpAddress | undefined;
  readonly headers: HeaderLookup;
  readonly #facts: GatewayFacts;
  readonly #pattern: PathPattern;
  readonly method: string;
  readonly body: BodyFields | undefined;
  constructor(clientIp: IpAddress | undefined, facts: GatewayFacts, pattern: PathPattern, body: BodyFields | undefined) {
    this.clientIp = clientIp;
    this.headers = facts.headers;
    this.method = facts.method;
    this.#facts = facts;
    this.#pattern = pattern;
    this.body = body;
  }
  get host(): string | undefined {
    return hostOf(this.#facts);
  }
  get cf(): CfProperties | undefined {
    return this.#facts.cf?.();
  }
  get url(): URL {
    return this.#facts.url();
  }
  /** Joined only for a `path` key. */
  get path(): string {
    return keyPathOf(this.#pattern, this.#facts.path);
  }
}
