import { createHash } from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayUnderTest, type Running, deferred, policies, rawExchange, request, startGateway, startGatewayToClosedOrigin, startOrigin } from "./gateway-helpers.js";

// The Node gateway (`spillway serve` in-process) in front of a real origin on loopback.
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
let handler: http.RequestListener = (_req, res) => res.end("unset");

beforeAll(async () => {
  origin = await startOrigin((req, res) => handler(req, res));
  gateway = await startGateway({
    origin: origin.url,
    policies,
    routes: [{ match: { path: "/limited/*" }, key: "ip", policies: ["big"] }],
  });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

describe("Node gateway: proxying", () => {
  it("forwards method, path, query and body, and keeps the origin's status and headers", async () => {
    handler = (req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        res.writeHead(201, "Made", [["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-origin", "yes"], ["content-type", "application/json"]]);
        res.end(JSON.stringify({ method: req.method, url: req.url, body, host: req.headers.host }));
      });
    };
    const response = await request(`${gateway.url}/limited/items?x=1`, { method: "PUT", body: "hello", headers: { "content-type": "text/plain" } });
    expect(response.status).toBe(201);
    expect(JSON.parse(response.body.toString())).toEqual({ method: "PUT", url: "/limited/items?x=1", body: "hello", host: `127.0.0.1:${origin.port}` });
    expect(response.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
    expect(response.headers["x-origin"]).toBe("yes");
    expect(response.headers["ratelimit-policy"]).toBe('"big";q=10000;w=3600');
    expect(response.headers["ratelimit"]).toMatch(/^"big";r=\d+;t=\d+$/);
  });

  it("joins repeated fields as Headers would and invents no Content-Type the origin did not send", async () => {
    handler = (_req, res) => {
      res.writeHead(200, [["Vary", "a"], ["vary", "b"], ["X-Origin", "yes"]]);
      res.end("raw");
    };
    const response = await request(`${gateway.url}/anything`);
    expect(response.headers["vary"]).toBe("a, b");
    expect(response.headers["x-origin"]).toBe("yes");
    expect(response.headers["content-type"]).toBeUndefined();
    expect(response.body.toString()).toBe("raw");
  });

  it("passes compressed answers through untouched", async () => {
    const { gzipSync } = await import("node:zlib");
    const packed = gzipSync(Buffer.from("a".repeat(10_000)));
    handler = (_req, res) => res.writeHead(200, { "content-encoding": "gzip", "content-length": packed.length }).end(packed);
    const response = await request(`${gateway.url}/limited/z`, { headers: { "accept-encoding": "gzip" } });
    expect(response.headers["content-encoding"]).toBe("gzip");
    expect(response.body.equals(packed)).toBe(true);
  });

  it("strips hop-by-hop headers both ways, including those Connection names", async () => {
    let seen: http.IncomingHttpHeaders = {};
    handler = (req, res) => {
      seen = req.headers;
      res.writeHead(200, { connection: "x-origin-hop", "x-origin-hop": "1", "keep-alive": "timeout=99", "proxy-authenticate": "Basic", trailer: "x-t", upgrade: "h2c", "x-end-to-end": "kept" });
      res.end("ok");
    };
    const response = await request(`${gateway.url}/anything`, {
      headers: { connection: "keep-alive, x-client-hop", "x-client-hop": "1", "keep-alive": "timeout=5", te: "trailers", "proxy-authorization": "Basic eA==", "proxy-connection": "keep-alive", upgrade: "websocket", "x-end-to-end": "kept" },
    });
    expect(response.status).toBe(200);
    for (const name of ["x-client-hop", "keep-alive", "te", "proxy-authorization", "proxy-connection", "upgrade"]) expect(seen[name], name).toBeUndefined();
    expect(seen["x-end-to-end"]).toBe("kept");
    for (const name of ["x-origin-hop", "proxy-authenticate", "trailer", "upgrade"]) expect(response.headers[name], name).toBeUndefined();
    // The gateway's own server speaks keep-alive to the client; the origin's value must not leak.
    expect(response.headers["keep-alive"]).not.toBe("timeout=99");
    expect(response.headers["x-end-to-end"]).toBe("kept");
  });

  it("streams a large upload without buffering it (the origin sees chunk n before chunk n+1 is sent)", async () => {
    const chunkBytes = 256 * 1024;
    const received: ReturnType<typeof deferred<number>>[] = Array.from({ length: 8 }, () => deferred<number>());
    let total = 0;
    let chunks = 0;
    handler = (req, res) => {
      req.on("data", (chunk: Buffer) => {
        total += chunk.length;
        while (chunks < received.length && total >= (chunks + 1) * chunkBytes) received[chunks++]!.resolve(total);
      });
      req.on("end", () => res.end(String(total)));
    };
    const answer = deferred<string>();
    const upload = http.request(`${gateway.url}/limited/upload`, { method: "POST", headers: { "transfer-encoding": "chunked" }, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => answer.resolve(text));
    });
    for (const arrival of received) {
      upload.write(Buffer.alloc(chunkBytes, 1));
      // Lock-step: a gateway that buffered the upload would never deliver this before the end.
      await arrival.promise;
    }
    upload.end();
    expect(await answer.promise).toBe(String(8 * chunkBytes));
  });

  it("streams a large download without buffering it (the client sees chunk n before chunk n+1 is written)", async () => {
    const chunkBytes = 256 * 1024;
    const delivered = Array.from({ length: 8 }, () => deferred());
    handler = async (_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      for (const arrival of delivered) {
        res.write(Buffer.alloc(chunkBytes, 2));
        await arrival.promise;
      }
      res.end();
    };
    let total = 0;
    let next = 0;
    await new Promise<void>((resolve, reject) => {
      http.get(`${gateway.url}/limited/download`, { agent: false }, (res) => {
        res.on("data", (chunk: Buffer) => {
          total += chunk.length;
          while (next < delivered.length && total >= (next + 1) * chunkBytes) delivered[next++]!.resolve();
        });
        res.on("end", resolve);
        res.on("error", reject);
      });
    });
    expect(total).toBe(8 * chunkBytes);
  });

  it("moves 64 MiB each way intact", async () => {
    const size = 64 * 1024 * 1024;
    handler = (req, res) => {
      res.writeHead(200);
      req.pipe(res); // echo: the upload streams back while it is still arriving
    };
    const sent = createHash("sha256");
    const got = createHash("sha256");
    let gotBytes = 0;
    const done = deferred();
    const echo = http.request(`${gateway.url}/limited/echo`, { method: "POST", agent: false }, (res) => {
      res.on("data", (chunk: Buffer) => {
        got.update(chunk);
        gotBytes += chunk.length;
      });
      res.on("end", () => done.resolve());
    });
    const block = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < size / block.length; i++) {
      block.fill(i % 251);
      sent.update(block);
      if (!echo.write(block)) await new Promise((resolve) => echo.once("drain", resolve));
    }
    echo.end();
    await done.promise;
    expect(gotBytes).toBe(size);
    expect(got.digest("hex")).toBe(sent.digest("hex"));
  }, 60_000);

  it("answers 502 with a problem body when the origin cannot be reached", async () => {
    const down = await startGatewayToClosedOrigin({ policies, routes: [] });
    try {
      const response = await request(`${down.url}/x`);
      expect(response.status).toBe(502);
      expect(response.headers["content-type"]).toBe("application/problem+json");
      expect(JSON.parse(response.body.toString())).toMatchObject({ status: 502, title: "Bad Gateway", detail: expect.stringContaining(`127.0.0.1:${down.closedPort}`) });
    } finally {
      await down.close();
    }
  });

  it("refuses a request framed by both Transfer-Encoding and Content-Length (Node's parser answers 400)", async () => {
    let reached = false;
    handler = (_req, res) => {
      reached = true;
      res.end();
    };
    const answer = await rawExchange(gateway.port, "POST /limited/x HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(reached).toBe(false);
  });
});
