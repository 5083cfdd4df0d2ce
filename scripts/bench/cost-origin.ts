// bench:cost only: the origin of the gateway scenarios, in Node (workerd cannot listen on a
// port). /login/* answers 401 when the request says `x-fail: 1`, else 200; /llm/* answers a
// JSON body with OpenAI's usage (10 prompt, 20 completion, 30 in all) and an x-usage-tokens header; anything else is a 200.
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

export default async function setup(project: TestProject) {
  const server: Server = createServer((request, response) => {
    const url = request.url ?? "/";
    request.resume();
    if (url.startsWith("/login/")) {
      response.writeHead(request.headers["x-fail"] === "1" ? 401 : 200, { "content-type": "text/plain" });
      response.end("login");
    } else if (url.startsWith("/llm/")) {
      response.writeHead(200, { "content-type": "application/json", "x-usage-tokens": "30" });
      response.end(JSON.stringify({ id: "cmpl", usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } }));
    } else {
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("ok");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("costOrigin", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module "vitest" {
  export interface ProvidedContext {
    costOrigin: string;
  }
}
