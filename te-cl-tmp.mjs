import { serve } from "@hono/node-server";
import { Hono } from "hono";
import net from "node:net";
const app = new Hono(); app.all("*", async (c) => c.text("got " + (await c.req.text()).length));
const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, async (info) => {
  for (const raw of [
    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
  ]) {
    const s = net.connect(info.port, "127.0.0.1"); s.write(raw);
    let out = ""; s.on("data", (d) => out += d); await new Promise((r) => s.on("close", r)); console.log(JSON.stringify(out.slice(0, 200)));
  }
  server.close();
});
