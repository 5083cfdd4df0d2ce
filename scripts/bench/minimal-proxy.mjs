// bench:gateway's yardstick: the smallest honest node:http reverse proxy (keep-alive agent,
// hop-by-hop fields stripped, bodies piped both ways), nothing else: no limiting, no timeouts.
// usage: node scripts/bench/minimal-proxy.mjs PORT ORIGIN_URL
import http from "node:http";

const [port = "8791", originText = "http://127.0.0.1:8790"] = process.argv.slice(2);
const origin = new URL(originText);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const HOP = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"];
const strip = (headers) => {
  const copy = { ...headers };
  for (const name of (headers.connection ?? "").split(",")) delete copy[name.trim().toLowerCase()];
  for (const name of HOP) delete copy[name];
  return copy;
};
http
  .createServer((req, res) => {
    const headers = strip(req.headers);
    delete headers.host;
    const out = http.request({ hostname: origin.hostname, port: origin.port, path: req.url, method: req.method, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode, strip(answer.headers));
      answer.pipe(res);
    });
    out.on("error", () => res.writeHead(502).end());
    req.pipe(out);
  })
  .listen(Number(port), "127.0.0.1", () => console.log(`minimal proxy on ${port}`));
