import { describe, expect, it } from "vitest";
import { type GatewayDriver, uniqueIp, uniqueUser } from "./gateway-table.js";

// The gateway table's repeated key sources (issue 45, "a repeated key source passes the deny
// list"), run on the Node and the Worker gateway with the rest of the table. A route keys on
// one value: counted under the first of `?k=x123&k=banned`, the request passed the deny list
// while an origin that reads the last value (PHP, Rails) served `banned`. Such a request is a
// 400 naming the source, whatever its values, and never reaches the origin. Loads in workerd too.

export const REPEATS_POLICIES = [{ name: "repeats-three", algorithm: "fixed-window", limit: 3, period: "1h" }];

export const REPEATS_ROUTES = [
  { match: { path: "/repeat-query/*" }, key: "query:k", policies: ["repeats-three"] },
  { match: { path: "/repeat-cookie/*" }, key: "cookie:sid", policies: ["repeats-three"] },
  { match: { path: "/repeat-combo/*" }, key: ["header:x-api-key", "query:k"], policies: ["repeats-three"] },
  { match: { path: "/repeat-fallback/*" }, key: "header:x-user", fallbackKey: "query:k", policies: ["repeats-three"] },
];

/** Registers the block's cases; `driverOf` is called once the runner's beforeAll has run. */
export function gatewayRepeatsConformance(runtime: string, driverOf: () => GatewayDriver): void {
  /** Status, detail and origin hits of one request. */
  async function sent(path: string, headers: Record<string, string> = {}) {
    const gw = driverOf();
    const before = gw.origin.hits();
    const reply = await gw.send(path, { ip: uniqueIp(), headers });
    const body = await reply.text();
    const detail = reply.status === 400 ? (JSON.parse(body) as { detail: string }).detail : undefined;
    return { status: reply.status, detail, reached: gw.origin.hits() - before, type: reply.header("content-type") };
  }

  describe(`${runtime} gateway conformance: a key source the request carries twice`, () => {
    it("refuses a query key given twice with a 400 naming it, in either order; once, it is counted or denied as always", async () => {
      driverOf().origin.ok();
      const first = uniqueUser();
      for (const query of [`k=${first}&k=banned`, `k=banned&k=${first}`, `k=&k=${first}`, `k=${first}&k=${first}`]) {
        const answer = await sent(`/repeat-query/h?${query}`);
        expect(answer, query).toMatchObject({ status: 400, reached: 0, type: "application/problem+json" });
        expect(answer.detail, query).toMatch(/the k query parameter more than once/);
      }
      expect((await sent("/repeat-query/h?k=banned")).status).toBe(403);
      // The refusals counted nothing: the value's whole budget is left.
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await sent(`/repeat-query/h?k=${first}&other=1&other=2`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    });

    it("refuses a cookie named twice, and a composite key whose part comes twice, naming the part", async () => {
      const cookie = await sent("/repeat-cookie/h", { cookie: `sid=${uniqueUser()}; theme=dark; sid=banned` });
      expect(cookie).toMatchObject({ status: 400, reached: 0 });
      expect(cookie.detail).toMatch(/the sid cookie more than once/);
      expect((await sent("/repeat-cookie/h", { cookie: "sid=banned" })).status).toBe(403);
      expect((await sent("/repeat-cookie/h", { cookie: `sid=${uniqueUser()}; theme=dark` })).status).toBe(200);

      const combo = await sent(`/repeat-combo/h?k=a&k=b`, { "x-api-key": uniqueUser() });
      expect(combo).toMatchObject({ status: 400, reached: 0 });
      expect(combo.detail).toMatch(/limited by the x-api-key header and the k query parameter; the request carries the k query parameter more than once/);
      expect((await sent(`/repeat-combo/h?k=a`, { "x-api-key": uniqueUser() })).status).toBe(200);
    });

    it("refuses a fallback key given twice as the route's own key is", async () => {
      const answer = await sent(`/repeat-fallback/h?k=${uniqueUser()}&k=banned`);
      expect(answer).toMatchObject({ status: 400, reached: 0 });
      expect(answer.detail).toMatch(/the k query parameter more than once/);
      // With the route's own key present, the fallback is never read.
      expect((await sent(`/repeat-fallback/h?k=a&k=b`, { "x-user": uniqueUser() })).status).toBe(200);
    });
  });
}
