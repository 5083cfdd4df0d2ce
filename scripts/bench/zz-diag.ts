import { contend } from "./client-semaphore.js";
for (let round = 0; round < 3; round++) {
  const { acquisitions } = await contend("redis", "redis://127.0.0.1:6379", `diag-${Date.now()}:`, 8);
  const t0 = Math.min(...acquisitions.map((a) => a.sentAtMs));
  const sorted = [...acquisitions].sort((a, b) => a.sentAtMs - b.sentAtMs);
  const worst: string[] = [];
  sorted.forEach((late, index) => {
    for (const early of sorted.slice(0, index)) {
      const ahead = late.sentAtMs - early.sentAtMs, overtook = early.grantedAtMs - late.grantedAtMs;
      if (ahead > 20 && overtook > 20) worst.push(`early sent ${(early.sentAtMs - t0).toFixed(1)} granted ${(early.grantedAtMs - t0).toFixed(1)} | late sent ${(late.sentAtMs - t0).toFixed(1)} granted ${(late.grantedAtMs - t0).toFixed(1)}`);
    }
  });
  const waits = acquisitions.map((a) => a.grantedAtMs - a.sentAtMs).sort((a, b) => b - a);
  console.log("round", round, "pairs>20ms:", worst.length, "max waits:", waits.slice(0, 5).map((w) => w.toFixed(0)).join(","));
  console.log(worst.slice(0, 4).join("\n"));
}
