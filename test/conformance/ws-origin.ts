import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { WebSocketServer } from "ws";

// The WebSocket origin of the gateway table's WebSocket cases: a real `ws` server on loopback,
// started by the Node runner itself and, for workerd (which cannot listen), by the worker
// project's globalSetup. Its behaviour is chosen by the last path segment, so that both
// runtimes steer it the same way without a control channel:
// - `…/echo`: accepts the upgrade, echoes every message; the message "close" makes it close
//   with 4000 "origin closed", and "drop" makes it drop the connection without a close.
// - `…/hang`: takes the upgrade request and never answers it (the handshake timeout).
// - `…/plain101`: answers a plain (non-upgrade) request with `101 Switching Protocols`.
// - `…/deaf`: accepts the upgrade with a bare 101 and then ignores everything: no messages, no
//   close frame, and a FIN leaves its side open (a half-open peer, in CLOSE-WAIT until the
//   gateway resets the connection).
// - `/__handshakes`: how many upgrade handshakes reached it (for workerd, which cannot ask directly).
// - `/__deaf`: how many `deaf` sockets the gateway still holds (it has neither ended nor reset them).
// - anything else: 200 "ok" (and an upgrade request to it is refused with 426).

export interface WsOrigin {
  url: string;
  port: number;
  /** Upgrade handshakes that reached the origin so far. */
  handshakes(): number;
  /** WebSockets the origin holds open now. */
  open(): number;
  /** `deaf` sockets the gateway still holds: it has neither sent a FIN nor reset them. */
  deafConnected(): number;
  close(): Promise<void>;
}

const lastSegment = (url: string | undefined) => (url ?? "/").split("?")[0]!.split("/").pop();

export async function startWsOrigin(): Promise<WsOrigin> {
  const sockets = new Set<Socket>();
  const wss = new WebSocketServer({ noServer: true });
  let handshakes = 0;
  let open = 0;
  let deafConnected = 0;
  const server = http.createServer((req, res) => {
    if (req.url === "/__handshakes") return void res.end(String(handshakes));
    if (req.url === "/__deaf") return void res.end(String(deafConnected));
    if (lastSegment(req.url) !== "plain101") return void res.end("ok");
    // What a broken origin does: switch protocols though nobody asked to, and keep the
    // connection open (for the other protocol it switched to).
    res.socket!.write("HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n");
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("upgrade", (req, socket, head) => {
    handshakes++;
    socket.on("error", () => {});
    const behaviour = lastSegment(req.url);
    if (behaviour === "hang") return; // never answered; the gateway must give up
    if (behaviour === "deaf") {
      const key = String(req.headers["sec-websocket-key"]);
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`);
      deafConnected++;
      // The http server's sockets allow half-open connections: 'end' (the gateway's FIN) leaves this side open.
      let held = true;
      const letGo = () => {
        if (held) deafConnected--;
        held = false;
      };
      socket.once("end", letGo);
      socket.once("close", letGo);
      socket.resume(); // reads and drops the frames it is sent
      return;
    }
    if (behaviour !== "echo") return void socket.end("HTTP/1.1 426 Upgrade Required\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope");
    wss.handleUpgrade(req, socket, head, (ws) => {
      open++;
      ws.once("close", () => open--);
      ws.on("error", () => {});
      ws.on("message", (data, isBinary) => {
        if (!isBinary && data.toString() === "close") ws.close(4000, "origin closed");
        else if (!isBinary && data.toString() === "drop") ws.terminate();
        else ws.send(data, { binary: isBinary });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    handshakes: () => handshakes,
    open: () => open,
    deafConnected: () => deafConnected,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        wss.close();
        server.close(() => resolve());
      }),
  };
}
