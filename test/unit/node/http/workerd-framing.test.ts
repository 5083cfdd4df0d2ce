import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../../scripts/free-port.js";
import { rawExchange } from "./gateway-helpers.js";

// What a Worker sees of a request framed both by Content-Length and Transfer-Encoding, on the
// real workerd HTTP server (`wrangler dev` runs the same one). docs/gateway.md states the
// outcome; this test is what keeps that sentence true. The gateway itself refuses a request
// that carries both fields (gateway/proxy.test.ts); on workerd it never gets to see one.
const WORKERD = fileURLToPath(new URL("../../../../node_modules/.bin/workerd", import.meta.url));
const ECHO = `export default {
  async fetch(request) {
    return Response.json({ headers: Object.fromEntries(request.headers), body: await request.text() });
  },
};`;

let dir: string;
let port: number;
let workerd: ChildProcess;

async function untilListening(deadlineMs: number): Promise<void> {
  while (Date.now() < deadlineMs) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("workerd did not start listening");
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "spillway-workerd-"));
  port = await freePort();
  await writeFile(join(dir, "echo.js"), ECHO);
  await writeFile(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "echo", worker = (modules = [ (name = "echo.js", esModule = embed "echo.js") ], compatibilityDate = "2024-09-23")) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "echo") ]
);
`,
  );
  workerd = spawn(WORKERD, ["serve", join(dir, "config.capnp")], { stdio: "ignore" });
  await untilListening(Date.now() + 10_000);
}, 15_000);

afterAll(async () => {
  workerd?.kill();
  await rm(dir, { recursive: true, force: true });
});

describe("workerd and a request framed two ways", () => {
  it.each([
    ["Transfer-Encoding first", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n"],
    ["Content-Length first", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"],
  ])("frames it by Transfer-Encoding and drops Content-Length before the Worker runs (%s)", async (_order, fields) => {
    const answer = await rawExchange(port, `POST /x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n${fields}\r\n5\r\nhello\r\n0\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const seen = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { headers: Record<string, string>; body: string };
    expect(seen.headers["content-length"]).toBeUndefined();
    expect(seen.headers["transfer-encoding"]).toBe("chunked");
    expect(seen.body).toBe("hello");
  });
});
