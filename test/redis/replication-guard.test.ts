import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { redisCli, untilReplicated, untilStreaming } from "../../scripts/redis-sentinel.js";

// The failover tests' guard, that every count written so far is on the replica before the
// master is killed: what it waits for, on a replica that cannot keep up (stopped by SIGSTOP).

describe("the failover tests' replication guard", () => {
  let master: RedisServer;
  let replica: RedisServer;

  beforeAll(async () => {
    master = await startRedis(["--repl-diskless-sync-delay", "0"]);
    replica = await startRedis(["--replicaof", "127.0.0.1", String(master.port)]);
    for (let attempt = 0; !(await redisCli(replica.port, "info", "replication")).includes("master_link_status:up"); attempt++) {
      if (attempt > 300) throw new Error("the replica did not sync within 15 s");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await untilStreaming(master.port, [replica.port], "probe");
  });
  afterAll(async () => {
    replica?.process.kill("SIGCONT");
    await Promise.all([replica?.stop(), master?.stop()]);
  });

  it("waits until the replica has applied the master's writes, where WAIT from redis-cli answers at once", async () => {
    replica.process.kill("SIGSTOP");
    try {
      await redisCli(master.port, "incr", "counted");
      // The old guard: a fresh connection has written nothing, so WAIT counts the stopped replica.
      expect(await redisCli(master.port, "wait", "1", "100")).toBe("1");
      await expect(untilReplicated(master.port, replica.port, { timeoutMs: 300 })).rejects.toThrow(/^the replica on port \d+ applied \(no answer\) of the master's \d+ bytes of writes in 300 ms$/);
    } finally {
      replica.process.kill("SIGCONT");
    }
    await untilReplicated(master.port, replica.port);
    expect(await redisCli(replica.port, "get", "counted")).toBe("1");
  });
});
