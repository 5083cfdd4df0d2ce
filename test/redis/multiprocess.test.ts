import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

type Reply = { ready?: true; granted?: number; mostHeldAtOnce?: number; error?: string };

function nextReply(child: ChildProcess): Promise<Reply> {
  return new Promise((resolve) => child.once("message", (message) => resolve(message as Reply)));
}

describe("200 concurrent clients in 2 Node processes on one key", () => {
  let server: RedisServer;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startRedis();
    const script = fileURLToPath(new URL("./fixtures/clients.ts", import.meta.url));
    const hooks = fileURLToPath(new URL("../../bin/ts-hooks.mjs", import.meta.url));
    for (let index = 0; index < 2; index++) {
      const child = fork(script, [server.url], { execArgv: ["--experimental-transform-types", "--no-warnings", "--import", hooks], stdio: ["ignore", "inherit", "inherit", "ipc"] });
      children.push(child);
    }
    const ready = await Promise.all(children.map(nextReply));
    expect(ready).toEqual([{ ready: true }, { ready: true }]);
  });

  afterAll(async () => {
    for (const child of children) {
      child.disconnect();
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once("exit", resolve)));
      clearTimeout(timer);
    }
    await server?.stop();
  });

  let mostHeldAtOnce = 0;

  /** Both processes start their 100 clients at once; answers the total granted. */
  async function grantedTotal(kind: string, key: string): Promise<number> {
    const replies = children.map(nextReply);
    for (const child of children) child.send({ kind, clients: 100, key });
    const answers = await Promise.all(replies);
    expect(answers.filter((answer) => answer.error)).toEqual([]);
    mostHeldAtOnce = Math.max(...answers.map((answer) => answer.mostHeldAtOnce ?? 0));
    return answers.reduce((sum, answer) => sum + (answer.granted ?? 0), 0);
  }

  it("a rate limit admits exactly its limit", async () => {
    expect(await grantedTotal("check", "rate")).toBe(50);
  });

  it("a concurrency limit grants exactly its slots", async () => {
    expect(await grantedTotal("acquire", "slots")).toBe(7);
  });

  it("FIFO waiting across processes serves every client, never more than the limit at once", async () => {
    // Every one of the 200 clients gets a slot in turn (7 at a time, 5 ms each).
    expect(await grantedTotal("hold", "turns")).toBe(200);
    expect(mostHeldAtOnce).toBeGreaterThan(1);
    expect(mostHeldAtOnce).toBeLessThanOrEqual(7);
  });
});
