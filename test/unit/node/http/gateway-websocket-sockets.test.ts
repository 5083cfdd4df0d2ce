import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type WsOrigin, startWsOrigin } from "../../../conformance/ws-origin.js";
import { type GatewayUnderTest, startGateway, waitFor } from "./gateway-helpers.js";

// How `spillway serve` ends a proxied WebSocket's TCP connections when one side goes away
// without the other (issue 30, row 5): a client process killed while its origin holds its
// side half-open (the `deaf` origin ignores the FIN it is passed) must not keep its
// concurrency lease, nor leave the gateway's sockets in CLOSE-WAIT. Node only: workerd owns
// its sockets (the Worker's relay is covered by the gateway table).

const SLOT = { name: "ws-slot", algorithm: "concurrency", limit: 1, periodMs: 1000, burst: 1, leaseMs: 3000, failMode: "closed" } as const;
const limiter = new MemoryStore();
let origin: WsOrigin;
let gateway: GatewayUnderTest;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  origin = await startWsOrigin();
  gateway = await startGateway(
    {
      origin: origin.url,
      policies: [{ name: "ws-slot", algorithm: "concurrency", limit: 1, lease: "3s" }],
      routes: [{ match: { path: "/ws/*" }, key: "header:x-user", policies: ["ws-slot"] }],
    },
    limiter,
  );
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await gateway?.close();
  await origin?.close();
});

/**
 * A client in a process of its own: it opens a WebSocket through the gateway by hand (a raw
 * handshake on a raw socket, so nothing in it closes politely) and says "open" on stdout once
 * the 101 has arrived. Killing it is a client's death: its kernel closes the socket (a FIN).
 */
async function clientProcess(user: string): Promise<ChildProcess> {
  const script = `
    const socket = require("node:net").connect(${gateway.port}, "127.0.0.1", () => socket.write(
      "GET /ws/deaf HTTP/1.1\\r\\nhost: gateway\\r\\nx-user: ${user}\\r\\nupgrade: websocket\\r\\nconnection: Upgrade\\r\\n" +
      "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nsec-websocket-version: 13\\r\\n\\r\\n"));
    let head = "";
    socket.on("data", (data) => {
      head += data.toString("latin1");
      if (head.includes("\\r\\n\\r\\n")) process.stdout.write(head.startsWith("HTTP/1.1 101") ? "open\\n" : "refused\\n");
    });`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  children.add(child);
  child.once("exit", () => children.delete(child));
  const said = await new Promise<string>((resolve, reject) => {
    child.stdout!.once("data", (data: Buffer) => resolve(data.toString().trim()));
    child.once("exit", () => reject(new Error("the client process exited before its handshake ended")));
  });
  expect(said).toBe("open");
  return child;
}

const slotFree = async (user: string) => (await limiter.peek(`header:x-user:${user}`, [SLOT])).remaining === 1;

/**
 * TCP connections in `state` as `ss` shows them (with their timers), or undefined where there
 * is no `ss`: the gateway's own (its client side, its origin side), or with `originToo` the
 * origin's side as well.
 */
function sockets(state: string, originToo = false): string[] | undefined {
  try {
    const filter = `( sport = :${gateway.port} or dport = :${origin.port}${originToo ? ` or sport = :${origin.port}` : ""} )`;
    const out = execFileSync("ss", ["-tanoH", "state", state, filter], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    return out.split("\n").filter((line) => line.trim() !== "");
  } catch {
    return undefined;
  }
}

describe("Node gateway: a proxied WebSocket's sockets end when one side goes away", () => {
  it("gives a killed client's lease back within seconds while the origin holds its side half-open, and leaves no socket in CLOSE-WAIT", async () => {
    const user = `killed-${process.pid}`;
    const child = await clientProcess(user);
    expect(await slotFree(user)).toBe(false);
    // Both of the gateway's sockets probe an idle peer (TCP keepalive), where `ss` can show it.
    const established = sockets("established");
    if (established) {
      expect(established.length).toBe(2);
      for (const line of established) expect(line).toContain("timer:(keepalive");
    }
    child.kill("SIGKILL");
    // The lease's own length (3 s) is extended while the relay lives: only the relay's end frees it.
    await waitFor(() => slotFree(user), 15_000);
    // Nothing is left half-closed: not the gateway's socket of the dead client, nor the origin's
    // (it ignored the FIN passed on, and was reset once the grace was over).
    expect(sockets("close-wait", true) ?? []).toEqual([]);
    // The slot can be taken again.
    const next = await clientProcess(user);
    expect(await slotFree(user)).toBe(false);
    next.kill("SIGKILL");
    await waitFor(() => slotFree(user), 15_000);
  }, 40_000);
});
