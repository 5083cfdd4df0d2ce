// A TCP proxy in front of Redis that a test can stall and cut: what a network does to a
// connection, without touching the Redis that other clients (the test's reader) use.
import net from "node:net";
import type { AddressInfo } from "node:net";

export interface RedisProxy {
  url: string;
  /** Holds every byte sent to Redis from now on (the replies of earlier commands still come). */
  hold(): void;
  /** Sends what was held, in order, and passes bytes again. */
  resume(): void;
  /** Drops every connection and what it held (the client reconnects), then passes bytes again. */
  cut(): void;
  close(): Promise<void>;
}

export async function startRedisProxy(redisPort: number): Promise<RedisProxy> {
  let holding = false;
  const links = new Set<{ client: net.Socket; upstream: net.Socket; held: Buffer[] }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(redisPort, "127.0.0.1");
    const link = { client, upstream, held: [] as Buffer[] };
    links.add(link);
    client.on("data", (chunk: Buffer) => {
      if (holding) link.held.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    const drop = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", drop);
    upstream.on("close", drop);
    client.on("error", drop);
    upstream.on("error", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    hold: () => {
      holding = true;
    },
    resume: () => {
      holding = false;
      for (const link of links) for (const chunk of link.held.splice(0)) link.upstream.write(chunk);
    },
    cut: () => {
      holding = false;
      for (const link of [...links]) {
        link.held.length = 0;
        link.client.destroy();
        link.upstream.destroy();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const link of links) {
          link.client.destroy();
          link.upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
