import http from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

// workerd cannot listen on a port: the webhook that config `notify` POSTs to runs here, in
// Node, for the worker project's run. It keeps every notice; GET /notices?key=K lists a key's;
// /moved answers 307 to /hook; /llm/* is an origin answering an LLM's usage (one token).
export default async function setup(project: TestProject) {
  const notices: Array<{ key?: string }> = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method === "GET" && url.pathname === "/notices") {
      const key = url.searchParams.get("key");
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(notices.filter((notice) => notice.key === key)));
    }
    // A webhook that moved: a notice that followed it would land in /hook's list.
    if (url.pathname === "/moved") return void req.resume().on("end", () => res.writeHead(307, { location: "/hook" }).end());
    // The origin of notify.test.ts's costed route: every answer reports one token.
    if (url.pathname.startsWith("/llm/")) return void res.writeHead(200, { "content-type": "application/json" }).end('{"usage":{"total_tokens":1}}');
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      notices.push(JSON.parse(body) as { key?: string });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("webhook", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module "vitest" {
  export interface ProvidedContext {
    webhook: string;
  }
}
