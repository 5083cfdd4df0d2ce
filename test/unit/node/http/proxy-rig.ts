// Real nginx and Caddy in front of a real origin, with `spillway serve` (memory store) as their
// forward-auth service, each configured from the block docs/proxies.md shows (ports substituted).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { extractSnippets } from "../../../package/snippets.js";
import { freePort } from "../../../../scripts/free-port.js";
import { type Running, startOrigin } from "./gateway-helpers.js";

const DOC = join(import.meta.dirname, "../../../../docs/proxies.md");

/** The first block of docs/proxies.md in `lang`: what a user copies. */
export function docBlock(lang: string): string {
  const block = extractSnippets("docs/proxies.md", readFileSync(DOC, "utf8")).find((snippet) => snippet.lang === lang);
  if (!block) throw new Error(`docs/proxies.md has no ${lang} block`);
  return block.code;
}

/** The docs' ports (proxy 8080, upstream 3000, Spillway 8787) replaced by the rig's. */
export function withPorts(text: string, ports: { proxy: number; origin: number; spillway: number }): string {
  return text.replaceAll("127.0.0.1:8080", `127.0.0.1:${ports.proxy}`).replaceAll("127.0.0.1:3000", `127.0.0.1:${ports.origin}`).replaceAll("127.0.0.1:8787", `127.0.0.1:${ports.spillway}`);
}

export interface Rig {
  proxyUrl: string;
  spillway: RunningServer;
  /** The x-api-key of every request the origin saw ("" without one), by path. */
  seen: { key: string; path: string }[];
  close(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 8000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode}): ${output()}`);
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`the proxy never listened on ${port}: ${output()}`);
}

/** Starts the origin, Spillway from the docs' config, and the proxy `kind` from the docs' block. */
export async function startRig(kind: "nginx" | "caddy"): Promise<Rig> {
  const seen: Rig["seen"] = [];
  const origin: Running = await startOrigin((req, res) => {
    seen.push({ key: String(req.headers["x-api-key"] ?? ""), path: req.url ?? "" });
    res.writeHead(200, { "content-type": "text/plain" }).end("from the origin");
  });
  // The docs' window made an hour long: a burst through a loaded proxy takes seconds, and one
  // that straddled a minute's end was admitted twice (once per window), 200 of 1,000.
  const raw = JSON.parse(docBlock("json").replace("http://127.0.0.1:3000", origin.url).replace('"period": "1m"', '"period": "1h"')) as Record<string, unknown>;
  const config = parseConfig(raw);
  const limiter = new MemoryStore();
  const fallback = createNodeGateway({ config, limiter, log: () => {} });
  const spillway = await startServer({ config, limiter, port: 0, fallback, token: "t", drainTimeoutMs: 100 });
  const proxy = await freePort();
  const ports = { proxy, origin: origin.port, spillway: spillway.port };
  const dir = mkdtempSync(join(tmpdir(), `spillway-${kind}-`));
  let output = "";
  let child: ChildProcess;
  if (kind === "nginx") {
    const conf = join(dir, "nginx.conf");
    writeFileSync(conf, withPorts(docBlock("nginx"), ports));
    mkdirSync(join(dir, "logs"));
    child = spawn("/usr/sbin/nginx", ["-p", dir, "-c", conf, "-e", join(dir, "error.log"), "-g", `daemon off; pid ${join(dir, "nginx.pid")};`], { stdio: ["ignore", "pipe", "pipe"] });
  } else {
    const file = join(dir, "Caddyfile");
    writeFileSync(file, withPorts(docBlock("caddyfile"), ports));
    child = spawn("caddy", ["run", "--config", file, "--adapter", "caddyfile"], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir } });
  }
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const close = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await spillway.close();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(proxy, child, () => output);
  } catch (error) {
    await close();
    throw error;
  }
  seen.length = 0;
  return { proxyUrl: `http://127.0.0.1:${proxy}`, spillway, seen, close };
}
