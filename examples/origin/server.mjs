#!/usr/bin/env node
// A tiny origin for the gateway quick start and benchmarks: `node examples/origin/server.mjs [port]`.
//   GET  /api/hello        → 200 {"hello":"world"}
//   POST /api/echo         → the request body streamed back
//   GET  /api/bytes?n=N    → N bytes, streamed in 64 KiB chunks
//   GET  /api/slow?ms=N    → answers after N ms
//   GET  /api/busy         → 429 with Retry-After: 5 (to try originFeedback)
//   anything else          → 200 with the method, path and headers it received
import http from "node:http";

const port = Number(process.argv[2] ?? process.env.PORT ?? 8788);
const chunk = Buffer.alloc(64 * 1024, 120);

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://origin");
  if (url.pathname === "/api/hello") {
    response.writeHead(200, { "content-type": "application/json" }).end('{"hello":"world"}\n');
  } else if (url.pathname === "/api/echo") {
    response.writeHead(200, { "content-type": request.headers["content-type"] ?? "application/octet-stream" });
    request.pipe(response);
  } else if (url.pathname === "/api/bytes") {
    let left = Number(url.searchParams.get("n") ?? 1024);
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(left) });
    const write = () => {
      while (left > 0) {
        const piece = chunk.subarray(0, Math.min(left, chunk.length));
        left -= piece.length;
        if (!response.write(piece)) return response.once("drain", write);
      }
      response.end();
    };
    write();
  } else if (url.pathname === "/api/slow") {
    setTimeout(() => response.writeHead(200, { "content-type": "text/plain" }).end("slow\n"), Number(url.searchParams.get("ms") ?? 1000));
  } else if (url.pathname === "/api/busy") {
    response.writeHead(429, { "retry-after": "5", "content-type": "text/plain" }).end("origin is busy\n");
  } else {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(`${JSON.stringify({ method: request.method, path: request.url, headers: request.headers })}\n`);
  }
});

server.keepAliveTimeout = 65_000;
server.listen(port, "127.0.0.1", () => console.log(`origin listening on http://127.0.0.1:${port}`));
