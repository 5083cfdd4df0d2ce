// A free loopback port for a server a test or benchmark starts (redis-server, workerd,
// wrangler dev, spillway serve), for callers that must name the port before it listens.
import { createServer } from "node:net";

/** True when a TCP port on 127.0.0.1 can be bound right now. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A free loopback port. Redis Cluster nodes also need port + 10000 (the cluster bus), so
 * the search stays below 55535 and, `withBusPort`, checks both.
 */
export async function freePort(withBusPort = false): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 35000);
    if ((await portIsFree(port)) && (!withBusPort || (await portIsFree(port + 10000)))) return port;
  }
  throw new Error("no free loopback port found");
}
