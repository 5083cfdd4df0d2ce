import type { Worker } from "node:cluster";

/**
 * node:cluster's round robin (the default on Linux): the primary accepts each connection and
 * sends its handle to a worker with an internal `newconn` message, keeping its own copy of the
 * socket until the worker acknowledges it. A worker that dies (SIGKILL, a crash) with a handle
 * in flight never acknowledges, and node keeps that copy open for good: the client's connection
 * stays open and unanswered, with nobody reading it. Seen as a few connections per kill, opened
 * in the few milliseconds before the primary learns of the death.
 *
 * This watches those messages, and when a worker's channel is closed hands each handle it never
 * acknowledged to a live worker (with the same message, so the worker's server takes it as any
 * other), or closes it when none can take it: the client gets an answer, or at worst a reset.
 * Nothing here changes a handle the worker acknowledged; node closes or re-sends those itself.
 */

interface NativeHandle {
  close(): void;
}

interface NewConn {
  cmd: "NODE_CLUSTER";
  act: "newconn";
  key: unknown;
  seq: unknown;
}

interface Ack {
  cmd: "NODE_CLUSTER";
  ack: unknown;
  accepted?: boolean;
}

type Send = (message: unknown, handle?: unknown, ...rest: unknown[]) => boolean;

const isNewConn = (message: unknown): message is NewConn =>
  typeof message === "object" && message !== null && (message as NewConn).cmd === "NODE_CLUSTER" && (message as NewConn).act === "newconn";

const isAck = (message: unknown): message is Ack =>
  typeof message === "object" && message !== null && (message as Ack).cmd === "NODE_CLUSTER" && (message as Ack).ack !== undefined;

/** How long after a worker's exit its channel may still hold acknowledgements to read; past it, what is left is swept anyway. */
const CHANNEL_DRAIN_MS = 1000;

export interface HandoffGuard {
  /** Watches `worker`'s handoffs; call right after cluster.fork. */
  watch(worker: Worker): void;
  /** Handles re-sent and handles closed so far (for a test, or a log line). */
  counts(): { resent: number; closed: number };
}

/** `pick(dead)`: a live worker to take a dead one's handles (undefined: none, they are closed). */
export function guardHandoffs(pick: (dead: Worker) => Worker | undefined): HandoffGuard {
  // Our re-sends carry a seq of their own, a string, which can never be one of node's numbers.
  let nextSeq = 1;
  let resent = 0;
  let closed = 0;

  const sweep = (dead: Worker, inFlight: Map<unknown, NewConn & { handle: NativeHandle }>) => {
    for (const { key, handle } of inFlight.values()) {
      const to = pick(dead);
      if (to?.isConnected()) {
        resent++;
        to.process.send({ cmd: "NODE_CLUSTER", act: "newconn", key, seq: `spillway-${nextSeq++}` } as never, handle as never);
      } else {
        closed++;
        handle.close();
      }
    }
    inFlight.clear();
  };

  return {
    watch(worker) {
      const child = worker.process as unknown as { send: Send; connected: boolean; on(event: string, listener: (...args: unknown[]) => void): void };
      const inFlight = new Map<unknown, NewConn & { handle: NativeHandle }>();
      const send = child.send.bind(child);
      child.send = (message, handle, ...rest) => {
        if (handle && isNewConn(message)) inFlight.set(message.seq, { ...message, handle: handle as NativeHandle });
        return send(message, handle, ...rest);
      };
      child.on("internalMessage", (message: unknown) => {
        if (!isAck(message)) return;
        const handoff = inFlight.get(message.ack);
        if (!handoff) return;
        inFlight.delete(message.ack);
        // node's own handoffs: node closes the copy or sends it elsewhere. Ours: the worker has its own copy now, or refused it.
        if (typeof message.ack === "string") handoff.handle.close();
      });
      child.on("exit", () => {
        // Acknowledgements the worker wrote before it died are still in the channel: read them first
        // (the channel reads its end, then marks itself disconnected), and then sweep what is left.
        const startedMs = performance.now();
        const wait = () => {
          if (!child.connected || performance.now() - startedMs > CHANNEL_DRAIN_MS) setImmediate(() => sweep(worker, inFlight));
          else setTimeout(wait, 10).unref();
        };
        wait();
      });
    },
    counts: () => ({ resent, closed }),
  };
}
