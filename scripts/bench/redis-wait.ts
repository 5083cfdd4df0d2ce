// bench:redis-wait (issue 33, one-off): what `WAIT 1` after every decision would cost. A
// master with one replica on loopback; closed loops of an INCR script alone, and of the same
// script followed by `WAIT 1 1000` in one pipeline (the write is then on the replica before the
// caller hears of it). Not in Spillway: docs/redis.md, "Failover", says why.
import { Redis } from "ioredis";
import { startRedis } from "../redis-server.js";
import { redisCli } from "../redis-sentinel.js";

const SCRIPT = "redis.call('INCR', KEYS[1]) return 1";
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);

async function loops(client: Redis, streams: number, withWait: boolean): Promise<{ perSecond: number; p50Ms: number; p99Ms: number }> {
  const latencies: number[] = [];
  const endMs = performance.now() + DURATION_MS;
  let n = 0;
  await Promise.all(
    Array.from({ length: streams }, async () => {
      while (performance.now() < endMs) {
        const key = `k${n++ % 1000}`;
        const sentMs = performance.now();
        const pipeline = client.pipeline().eval(SCRIPT, 1, key);
        if (withWait) pipeline.call("WAIT", "1", "1000");
        await pipeline.exec();
        latencies.push(performance.now() - sentMs);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { perSecond: (latencies.length / DURATION_MS) * 1000, p50Ms: latencies[Math.floor(latencies.length / 2)]!, p99Ms: latencies[Math.floor(latencies.length * 0.99)]! };
}

const master = await startRedis(["--repl-diskless-sync-delay", "0"]);
const replica = await startRedis(["--replicaof", "127.0.0.1", String(master.port)]);
try {
  while (!(await redisCli(replica.port, "info", "replication")).includes("master_link_status:up")) await new Promise((resolve) => setTimeout(resolve, 50));
  const client = new Redis(master.url);
  const rows = ["| streams | without WAIT: ops/s, p50 ms, p99 ms | with `WAIT 1 1000`: ops/s, p50 ms, p99 ms | ops/s with / without |", "| ---: | --- | --- | ---: |"];
  for (const streams of [1, 16, 64]) {
    await loops(client, streams, false); // warm-up
    const plain = await loops(client, streams, false);
    const waited = await loops(client, streams, true);
    const cell = (r: typeof plain) => `${Math.round(r.perSecond).toLocaleString("en-US")} · ${r.p50Ms.toFixed(2)} · ${r.p99Ms.toFixed(2)}`;
    rows.push(`| ${streams} | ${cell(plain)} | ${cell(waited)} | ${(waited.perSecond / plain.perSecond).toFixed(2)} |`);
    console.log(rows.at(-1));
  }
  client.disconnect();
  console.log(`\n${rows.join("\n")}`);
} finally {
  await Promise.all([master.stop(), replica.stop()]);
}
