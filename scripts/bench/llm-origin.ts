// bench:llm only: an OpenAI-style chat completions origin on loopback. /burst/* answers after
// 400 ms (a model's time to answer), /load/* at once; JSON, or SSE events with the usage in the
// last data event (`stream_options.include_usage`), as the request's body asks. It counts the
// requests that reached it per key (the authorization header).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { USAGE } from "./llm-config.js";

export const ANSWER_DELAY_MS = 400;

export interface LlmOrigin {
  url: string;
  /** Requests that reached the origin with this authorization header. */
  reached(key: string): number;
  close(): Promise<void>;
}

const json = JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }], usage: USAGE });
const chunk = (delta: Record<string, unknown>[] | [], usage?: unknown) => `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", choices: delta, ...(usage ? { usage } : {}) })}\n\n`;
const events = [chunk([{ index: 0, delta: { role: "assistant", content: "Hel" } }]), chunk([{ index: 0, delta: { content: "lo!" }, finish_reason: "stop" }]), chunk([], USAGE), "data: [DONE]\n\n"];

export function startLlmOrigin(): Promise<LlmOrigin> {
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const key = String(req.headers.authorization ?? "");
    counts.set(key, (counts.get(key) ?? 0) + 1);
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (piece: string) => (body += piece));
    req.on("end", () => {
      const stream = body.includes('"stream":true');
      const answer = () => {
        if (!stream) return void res.writeHead(200, { "content-type": "application/json" }).end(json);
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        for (const event of events) res.write(event);
        res.end();
      };
      if (req.url?.startsWith("/burst/")) setTimeout(answer, ANSWER_DELAY_MS);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        reached: (key) => counts.get(key) ?? 0,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  );
}
