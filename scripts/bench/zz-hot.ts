import { startBenchRedis } from "./redis-server.js";
import { SPILLWAY_GCRA, SPILLWAY_SLIDING_WINDOW, RATE_LIMITER_FLEXIBLE } from "./redis-contenders.js";
import { runThroughput } from "./redis-throughput.js";
const redis = await startBenchRedis();
try {
  for (let i = 0; i < 2; i++)
  await runThroughput({ url: redis.url, runId: "hot" + i, contenders: [SPILLWAY_GCRA, SPILLWAY_SLIDING_WINDOW, RATE_LIMITER_FLEXIBLE], concurrencies: [16, 256], keyCounts: [1, 10000, 256], cellMs: 1500, warmUpMs: 300 }, console.log);
} finally { redis.stop(); }
