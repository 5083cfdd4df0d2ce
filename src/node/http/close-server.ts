import type { Server } from "node:http";

/** How often a closing server closes the keep-alive sockets that went idle since. */
const IDLE_SWEEP_MS = 50;

/**
 * Closes an HTTP server gracefully: idle keep-alive sockets at once, a busy one as soon as its
 * request is answered, every socket after `drainMs`. Node closes idle sockets once, at close():
 * a socket whose request finishes later goes idle and stays open, so without the sweep every
 * shutdown with a request in flight waited out the whole drain time.
 */
export async function closeHttpServer(server: Server, drainMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweeper = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  const cut = setTimeout(() => server.closeAllConnections(), drainMs);
  try {
    await closed;
  } finally {
    clearInterval(sweeper);
    clearTimeout(cut);
  }
}
