import WebSocket from "ws";

/** Opens a WebSocket through a gateway on `port`; resolves once open (rejects on any other outcome, naming the status). */
export function openWebSocket(port: number, path: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_request, incoming) => reject(new Error(`answered ${incoming.statusCode}`)));
    ws.once("error", reject);
  });
}

/** Sends `text` and resolves with the next message (an echo origin's answer). */
export const echoOf = (ws: WebSocket, text: string) =>
  new Promise<string>((resolve) => {
    ws.once("message", (data) => resolve(data.toString()));
    ws.send(text);
  });
