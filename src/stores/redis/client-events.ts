import type { EventEmitter } from "node:events";

/** ioredis events carry a node, an error or nothing; each handler says which it takes. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Handler = (...args: any[]) => void;

interface Dispatch {
  readonly handlers: Set<Handler>;
  readonly listener: Handler;
}

/** Per emitter and event: the one listener on the emitter and the handlers it calls. */
const dispatches = new WeakMap<EventEmitter, Map<string, Dispatch>>();

/**
 * Subscribes `handler` to `event` through one listener per (client, event), shared by every store
 * built on that client. Several stores on one ioredis client (a store per route or per middleware
 * is a common way to use them) would otherwise add listeners of their own each, tripping Node's
 * MaxListenersExceededWarning from the fifth store on and keeping closed stores reachable.
 * Answers the unsubscribe; the shared listener leaves the client with its last handler.
 */
export function subscribe(emitter: EventEmitter, event: string, handler: Handler): () => void {
  let events = dispatches.get(emitter);
  if (!events) dispatches.set(emitter, (events = new Map()));
  let dispatch = events.get(event);
  if (!dispatch) {
    const handlers = new Set<Handler>();
    dispatch = {
      handlers,
      listener: (...args) => {
        for (const each of handlers) each(...args);
      },
    };
    events.set(event, dispatch);
    emitter.on(event, dispatch.listener);
  }
  const { handlers, listener } = dispatch;
  handlers.add(handler);
  return () => {
    if (!handlers.delete(handler) || handlers.size > 0) return;
    emitter.off(event, listener);
    if (events.get(event)?.listener === listener) events.delete(event);
  };
}

/** The subscriptions of one owner (a store, a guard), dropped together when it closes. */
export class Subscriptions {
  private readonly unsubscribes: (() => void)[] = [];

  on(emitter: EventEmitter, event: string, handler: Handler): void {
    this.unsubscribes.push(subscribe(emitter, event, handler));
  }

  close(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }
}
