import { type ChildProcess, spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { connect } from "node:http2";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { ownerOfConnection } from "./socket-owner.js";

// `spillway serve --workers 2`: health (/healthz, gRPC Health/Check) says ready only once every
// worker listens. A proxy opens its long-lived connections (Envoy's HTTP/2 to the rate limit
// service, a load balancer's keep-alive pool) when health first passes; had it passed while
// one worker listened, they would all be that worker's for good. Here, two connections opened
// right after the first ready answer are held by two different workers (node:cluster hands
// connections to the workers listening, in turn), read from /proc, not from the product.

const bin = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let dir: string;
let redis: RedisServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-readiness-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ policies: [{ name: "demo", limit: 1000, period: "10s" }] }));
  writeFileSync(join(dir, "limits.yaml"), "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n");
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** GET /healthz on `agent`'s connection (a fresh one each time without an agent): its status, body and the client's port. */
function healthz(port: number, agent: Agent | false): Promise<{ status: number; body: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", agent, headers: agent ? {} : { connection: "close" } }, (res) => {
      const localPort = res.socket.localPort!;
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body, localPort }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** grpc.health.v1.Health/Check on an HTTP/2 session, framed by hand: "SERVING", "NOT_SERVING" or a gRPC error. */
function grpcHealth(session: ReturnType<typeof connect>): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc", te: "trailers" });
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    stream.on("response", (headers) => (grpcStatus ??= headers["grpc-status"] as string | undefined));
    stream.on("trailers", (trailers) => (grpcStatus = trailers["grpc-status"] as string | undefined));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      if (grpcStatus !== "0") return resolve(`grpc-status ${grpcStatus}`);
      // A 5-byte frame header, then HealthCheckResponse { status = 1 (field 1, varint) }.
      const status = body.length >= 7 && body[5] === 0x08 ? body[6] : 0;
      resolve(status === 1 ? "SERVING" : status === 2 ? "NOT_SERVING" : `status ${status}`);
    });
    stream.end(Buffer.from([0, 0, 0, 0, 0])); // an empty HealthCheckRequest: the whole server
  });
}

function openSession(port: number): Promise<ReturnType<typeof connect>> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

/** Polls until an answer says ready, each time on a new connection; the answers before it. */
async function untilReady(ask: () => Promise<string>, child: ChildProcess): Promise<string[]> {
  const before: string[] = [];
  for (let i = 0; i < 4000 && child.exitCode === null; i++) {
    const answer = await ask().catch((error: NodeJS.ErrnoException) => error.code ?? error.message);
    if (answer === "ready") return before;
    before.push(answer);
    await sleep(5);
  }
  throw new Error(`never ready: ${before.slice(-3).join(", ")}`);
}

describe("spillway serve --workers 2: ready only when every worker listens", { timeout: 90_000 }, () => {
  it("spreads the connections opened right after the first ready /healthz and gRPC SERVING over both workers", async () => {
    const [port, rlsPort] = [await freePort(), await freePort()];
    const args = ["serve", "--config", "config.json", "--redis", redis.url, "--port", String(port), "--rls-port", String(rlsPort), "--rls-config", join(dir, "limits.yaml"), "--workers", "2", "--no-metrics"];
    const child = spawn(process.execPath, [bin, ...args], { cwd: dir, env: { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const agents = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })];
    const sessions: ReturnType<typeof connect>[] = [];
    try {
      // HTTP and gRPC, side by side: each opens its two connections as soon as it is first told ready.
      const http = (async () => {
        const before = await untilReady(async () => {
          const answer = await healthz(port, false);
          return answer.status === 200 ? "ready" : `${answer.status} ${answer.body}`;
        }, child);
        const held = await Promise.all(agents.map((agent) => healthz(port, agent)));
        return { before, statuses: held.map((answer) => answer.status), clientPorts: held.map((answer) => answer.localPort) };
      })();
      const grpc = (async () => {
        const before = await untilReady(async () => {
          const session = await openSession(rlsPort);
          try {
            const status = await grpcHealth(session);
            return status === "SERVING" ? "ready" : status;
          } finally {
            session.destroy();
          }
        }, child);
        sessions.push(await openSession(rlsPort), await openSession(rlsPort));
        const statuses = await Promise.all(sessions.map((session) => grpcHealth(session)));
        return { before, statuses, clientPorts: sessions.map((session) => session.socket.localPort!) };
      })();
      const [viaHttp, viaGrpc] = await Promise.all([http, grpc]);

      for (let i = 0; i < 600 && !/workers \(pids/.test(output) && child.exitCode === null; i++) await sleep(50);
      const pids = (/workers \(pids ([\d, ]+)\)/.exec(output)?.[1] ?? "").split(", ").map(Number);
      expect(pids, output).toHaveLength(2);

      expect(viaHttp.statuses).toEqual([200, 200]);
      expect(viaGrpc.statuses).toEqual(["SERVING", "SERVING"]);
      // Before ready: nothing listening yet, or the one worker listening saying why it is not ready.
      for (const answer of viaHttp.before) expect(answer).toMatch(/^ECONNREFUSED$|^503 \{"ok":false,"store":"redis","error":"starting: not every worker of --workers listens yet"\}$/);
      for (const answer of viaGrpc.before) expect(answer).toMatch(/^ECONNREFUSED$|^NOT_SERVING$/);

      const owners = (serverPort: number, clientPorts: number[]) => clientPorts.map((clientPort) => ownerOfConnection(serverPort, clientPort, pids));
      const httpOwners = owners(port, viaHttp.clientPorts);
      const grpcOwners = owners(rlsPort, viaGrpc.clientPorts);
      expect(httpOwners.every((pid) => pid !== undefined), JSON.stringify({ httpOwners, pids })).toBe(true);
      expect(new Set(httpOwners).size, JSON.stringify({ httpOwners, pids })).toBe(2);
      expect(grpcOwners.every((pid) => pid !== undefined), JSON.stringify({ grpcOwners, pids })).toBe(true);
      expect(new Set(grpcOwners).size, JSON.stringify({ grpcOwners, pids })).toBe(2);

      for (const session of sessions) session.close();
      for (const agent of agents) agent.destroy();
      child.kill("SIGTERM");
      expect(await exited, output).toBe(0);
      expect(output).not.toMatch(/^\s+at /m);
    } finally {
      for (const session of sessions) session.destroy();
      for (const agent of agents) agent.destroy();
      child.kill("SIGKILL");
    }
  });
});
