import { describe, expect, it } from "vitest";
import type { Limiter } from "../../src/core/limiter.js";
import { ORIGIN_TIMEOUT_TYPE } from "../../src/core/wire.js";
import { type GatewayReply, uniqueIp, uniqueUser } from "./gateway-table.js";

// The gateway table's WebSocket cases, run by the Node gateway (test/unit/node/http/
// gateway-conformance.test.ts) and the Worker gateway (test/worker/gateway-conformance.test.ts) against one real
// origin: test/conformance/ws-origin.ts, a `ws` server on loopback, steered by the path's last
// segment (echo, deaf, hang, plain101, anything else refuses the upgrade). Loads in workerd too.

/** The answer to an upgrade request: a socket after a 101, else the refusal as a reply. */
export interface UpgradeReply extends GatewayReply {
  /** Set when the gateway answered 101: the client's open WebSocket. */
  socket: WsClient | undefined;
}

/** The client's end of a proxied WebSocket, as the test reads it. */
export interface WsClient {
  send(text: string): void;
  /** The next message from the origin, in order. */
  next(): Promise<string>;
  /** A clean close from the client (a close frame). */
  close(code: number, reason: string): void;
  /** Resolves when the socket is closed, with what the client was told. */
  closed: Promise<{ code: number; reason: string }>;
  /** The client drops the connection without a close frame (where the runtime's client can). */
  abort?: () => void;
}

export interface WebSocketDriver {
  /** An upgrade to a WebSocket from `from.ip`, asking for `protocol` when given. */
  upgrade(path: string, from: { ip: string; headers?: Record<string, string>; protocol?: string }): Promise<UpgradeReply>;
  /** A plain (non-upgrade) request to the same gateway. */
  send(path: string, from: { ip: string; headers?: Record<string, string> }): Promise<GatewayReply>;
  /** Upgrade handshakes that reached the origin so far. */
  originHandshakes(): Promise<number> | number;
  limiter: Limiter;
}

/** The WebSocket gateway config (its `origin`, the ws origin's URL, is the runner's). */
export const GATEWAY_WS_CONFIG = {
  policies: [
    { name: "ws-three", algorithm: "fixed-window", limit: 3, period: "1h" },
    { name: "ws-slot", algorithm: "concurrency", limit: 1, lease: "3s" },
  ],
  routes: [
    { match: { path: "/ws/three/*" }, key: "header:x-user", policies: ["ws-three"] },
    { match: { path: "/ws/ip/*" }, key: "ip", policies: ["ws-three"] },
    { match: { path: "/ws/query/*" }, key: "query:k", policies: ["ws-three"] },
    { match: { path: "/ws/slot/*" }, key: "header:x-user", policies: ["ws-slot"] },
    { match: { path: "/ws/slow/*" }, key: "header:x-user", policies: ["ws-slot"], originTimeoutMs: 500 },
  ],
  deny: { ips: ["203.0.113.0/24"], keys: ["banned"] },
  trustProxy: ["10.255.0.0/16"],
};

const WS_SLOT_POLICY = { name: "ws-slot", algorithm: "concurrency", limit: 1, periodMs: 1000, burst: 1, leaseMs: 3000, failMode: "closed" } as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(20);
  }
}

/** Registers the WebSocket cases; `driverOf` is called once the runner's beforeAll has run. */
export function gatewayWebSocketConformance(runtime: string, driverOf: () => WebSocketDriver): void {
  const as = (user: string) => ({ headers: { "x-user": user }, ip: uniqueIp() });
  const slotFree = async (user: string) => (await driverOf().limiter.peek(`header:x-user:${user}`, [WS_SLOT_POLICY])).remaining === 1;
  const opened = async (path: string, from: { ip: string; headers?: Record<string, string>; protocol?: string }) => {
    const reply = await driverOf().upgrade(path, from);
    expect(reply.status).toBe(101);
    return reply.socket!;
  };

  describe(`${runtime} gateway conformance: WebSockets`, () => {
    it("proxies a WebSocket both ways; the 101 carries the RateLimit fields and the origin's subprotocol", async () => {
      const user = uniqueUser();
      const reply = await driverOf().upgrade("/ws/three/echo", { ...as(user), protocol: "chat" });
      expect(reply.status).toBe(101);
      expect(reply.header("ratelimit-policy")).toBe('"ws-three";q=3;w=3600');
      expect(reply.header("ratelimit")).toMatch(/^"ws-three";r=2;t=\d+$/);
      expect(reply.header("sec-websocket-protocol")).toBe("chat");
      const socket = reply.socket!;
      // Messages are not requests: twenty of them on a route of three upgrades.
      for (let i = 0; i < 20; i++) socket.send(`hello ${i}`);
      for (let i = 0; i < 20; i++) expect(await socket.next()).toBe(`hello ${i}`);
      socket.close(1000, "bye");
      expect(await socket.closed).toMatchObject({ code: 1000 });
      const second = await driverOf().upgrade("/ws/three/echo", as(user));
      expect(second.header("ratelimit")).toMatch(/^"ws-three";r=1;t=\d+$/);
      second.socket!.close(1000, "bye");
    });

    it("counts each upgrade once by the route's rate policies; past them, the usual 429 without asking the origin", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      for (let i = 0; i < 3; i++) (await opened("/ws/three/echo", as(user))).close(1000, "bye");
      const before = await gw.originHandshakes();
      const denied = await gw.upgrade("/ws/three/echo", as(user));
      expect(denied.status).toBe(429);
      expect(denied.socket).toBeUndefined();
      expect(denied.header("retry-after")).toMatch(/^\d+$/);
      expect(denied.header("ratelimit-policy")).toBe('"ws-three";q=3;w=3600');
      expect(denied.header("ratelimit")).toMatch(/^"ws-three";r=0;t=\d+$/);
      expect(JSON.parse(await denied.text())).toMatchObject({ type: "https://iana.org/assignments/http-problem-types#quota-exceeded", status: 429, "violated-policies": ["ws-three"] });
      expect(await gw.originHandshakes()).toBe(before);
    });

    it("applies deny lists, trusted proxies and the path policy to upgrades unchanged", async () => {
      const gw = driverOf();
      expect((await gw.upgrade("/ws/three/echo", as("banned"))).status).toBe(403);
      expect((await gw.upgrade("/ws/three/echo", { headers: { "x-user": uniqueUser() }, ip: "203.0.113.5" })).status).toBe(403);
      expect((await gw.upgrade("/ws/three/a%2Fb/echo", as(uniqueUser()))).status).toBe(400);
      // One client through a different trusted proxy each time: counted as that client.
      const client = uniqueIp();
      const statuses = [];
      for (let i = 0; i < 4; i++) {
        const [a, b] = crypto.getRandomValues(new Uint8Array(2));
        const reply = await gw.upgrade("/ws/ip/echo", { ip: `10.255.${a}.${b}`, headers: { "x-forwarded-for": client } });
        reply.socket?.close(1000, "bye");
        statuses.push(reply.status);
      }
      expect(statuses).toEqual([101, 101, 101, 429]);
    });

    it("refuses an upgrade that carries its key source twice (400 naming it) without asking the origin", async () => {
      const gw = driverOf();
      const before = await gw.originHandshakes();
      const reply = await gw.upgrade(`/ws/query/echo?k=${uniqueUser()}&k=banned`, { ip: uniqueIp() });
      expect(reply.status).toBe(400);
      expect((JSON.parse(await reply.text()) as { detail: string }).detail).toMatch(/the k query parameter more than once/);
      expect((await gw.upgrade("/ws/query/echo?k=banned", { ip: uniqueIp() })).status).toBe(403);
      expect(await gw.originHandshakes()).toBe(before);
    });

    it("holds a concurrency lease while the socket is open, past the lease's length, and frees it on the client's close", async () => {
      const user = uniqueUser();
      const socket = await opened("/ws/slot/echo", as(user));
      expect((await driverOf().upgrade("/ws/slot/echo", as(user))).status).toBe(429);
      // The lease is 3 s: only its extension keeps the slot taken.
      await sleep(4500);
      expect(await slotFree(user)).toBe(false);
      expect((await driverOf().upgrade("/ws/slot/echo", as(user))).status).toBe(429);
      socket.send("still here");
      expect(await socket.next()).toBe("still here");
      socket.close(1000, "bye");
      await socket.closed;
      await waitFor(() => slotFree(user));
      (await opened("/ws/slot/echo", as(user))).close(1000, "bye");
    });

    it("frees the lease when the origin closes the socket, and tells the client the origin's code", async () => {
      const user = uniqueUser();
      const socket = await opened("/ws/slot/echo", as(user));
      expect(await slotFree(user)).toBe(false);
      socket.send("close");
      expect(await socket.closed).toEqual({ code: 4000, reason: "origin closed" });
      await waitFor(() => slotFree(user));
    });

    it("frees the lease when the origin drops the connection without a close", async () => {
      const user = uniqueUser();
      const socket = await opened("/ws/slot/echo", as(user));
      expect(await slotFree(user)).toBe(false);
      socket.send("drop");
      expect((await socket.closed).code).not.toBe(1000);
      await waitFor(() => slotFree(user));
    });

    it("frees the lease when the client drops the connection without a close", async (context) => {
      const user = uniqueUser();
      const socket = await opened("/ws/slot/echo", as(user));
      if (!socket.abort) {
        socket.close(1000, "bye");
        return context.skip("this runtime's WebSocket client cannot drop a connection");
      }
      expect(await slotFree(user)).toBe(false);
      socket.abort();
      await waitFor(() => slotFree(user));
    });

    it("frees the lease within seconds when the client goes and the origin ignores it (no close frame back, a FIN left half-open)", async () => {
      const user = uniqueUser();
      const socket = await opened("/ws/slot/deaf", as(user));
      expect(await slotFree(user)).toBe(false);
      // Node's client drops the connection (a FIN the gateway passes on, which this origin
      // ignores: the gateway resets both after a short grace); workerd's closes with a frame the
      // origin never answers (the relay ends at the client's close).
      if (socket.abort) socket.abort();
      else socket.close(1000, "bye");
      await waitFor(() => slotFree(user), 10_000);
      (await opened("/ws/slot/echo", as(user))).close(1000, "bye");
    });

    it("passes on an origin's refusal of the upgrade and frees the lease", async () => {
      const user = uniqueUser();
      const refused = await driverOf().upgrade("/ws/slot/no-websocket-here", as(user));
      expect(refused.status).toBe(426);
      expect(refused.socket).toBeUndefined();
      expect(await refused.text()).toBe("nope");
      await waitFor(() => slotFree(user));
    });

    it("bounds the handshake by originTimeoutMs (a 504 problem, the lease freed), not the open socket", async () => {
      const user = uniqueUser();
      const reply = await driverOf().upgrade("/ws/slow/hang", as(user));
      expect(reply.status).toBe(504);
      expect(JSON.parse(await reply.text())).toMatchObject({ type: ORIGIN_TIMEOUT_TYPE, status: 504 });
      await waitFor(() => slotFree(user));
      // The same route's 500 ms do not cut a socket that is quiet for longer once open.
      const socket = await opened("/ws/slow/echo", as(user));
      await sleep(1200);
      socket.send("after a pause");
      expect(await socket.next()).toBe("after a pause");
      socket.close(1000, "bye");
      await socket.closed;
    });

    it("answers an origin's 101 to a plain request with a 502 problem and frees the lease", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const first = await gw.send("/ws/slot/plain101", as(user));
      expect(first.status).toBe(502);
      expect(first.header("content-type")).toBe("application/problem+json");
      expect(JSON.parse(await first.text())).toMatchObject({ status: 502, detail: expect.stringContaining("101") });
      await waitFor(() => slotFree(user));
      expect((await gw.send("/ws/slot/plain101", as(user))).status).toBe(502); // not 429
    });
  });
}
