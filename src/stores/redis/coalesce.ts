import type { Cluster, Redis } from "ioredis";

/** Never hold writes with fewer commands than this in flight: Redis would soon run dry. */
export const COALESCE_MIN_IN_FLIGHT = 8;
/** Always hold writes from this many in flight on: more only lengthened the tail (p99). */
export const COALESCE_MAX_IN_FLIGHT = 32;
/** Calls over which the peak number of commands in flight is measured. */
const WINDOW_CALLS = 256;

/**
 * Write coalescing under load, for one standalone ioredis client.
 *
 * ioredis writes every command to its socket at once, and a write(2) to a socket costs more
 * than everything else Node does for a decision. When many commands are already in flight,
 * Redis has a backlog to work through, so holding further commands (cork) to the end of this
 * turn of the event loop and sending them together (one writev) leaves Redis no idler and
 * saves Node most of that CPU.
 *
 * How many in flight is "many" depends on the load: holding writes with too few in flight
 * makes Node and Redis take turns instead of working at the same time. Holding from half the
 * recent peak (at least COALESCE_MIN_IN_FLIGHT, at most COALESCE_MAX_IN_FLIGHT) measured best
 * at every load we tried: the first commands of a round go out at once and keep Redis busy
 * while Node works on the others. What it is worth: BENCHMARKS.md, "Redis (bench:redis)"
 * (Spillway GCRA against the same with `coalesceWrites: false`).
 *
 * Only the socket's write timing changes: commands keep their order (the socket buffers
 * them), so replies still match ioredis's queue, other users of the same client included,
 * and every held write goes out within the same turn of the event loop.
 */
export class WriteCoalescer {
  readonly client: Redis;
  private peakInFlight = 0;
  private windowPeak = 0;
  private windowCalls = 0;
  private held = false;
  /** Told once the held writes are out (afterHeldWrites). */
  private flushed: (() => void)[] = [];

  constructor(client: Redis) {
    this.client = client;
  }

  /**
   * While writes are held, `then` runs right after they go out (and true is answered): store
   * timeouts start from the write, not from the hand-over (errors.ts, Deadlines). False otherwise.
   */
  afterHeldWrites(then: () => void): boolean {
    if (!this.held) return false;
    this.flushed.push(then);
    return true;
  }

  /** Whether writes are held now (until the end of this turn). */
  get holding(): boolean {
    return this.held;
  }

  /** Whether what was handed to the client so far is written: nothing held, nothing waiting in the socket's buffer. */
  sentNow(): boolean {
    return !this.held && this.client.stream?.writableLength === 0;
  }

  /** Call before sending a command on the client. */
  beforeSend(): void {
    const inFlight = this.client.commandQueue.length;
    if (inFlight > this.windowPeak) this.windowPeak = inFlight;
    if (++this.windowCalls === WINDOW_CALLS) {
      this.peakInFlight = this.windowPeak;
      this.windowPeak = 0;
      this.windowCalls = 0;
    }
    if (this.held || inFlight < COALESCE_MIN_IN_FLIGHT || inFlight < Math.min(COALESCE_MAX_IN_FLIGHT, this.peakInFlight >> 1)) return;
    const socket = this.client.stream;
    if (!socket?.writable) return;
    this.held = true;
    socket.cork();
    // setImmediate, not nextTick: the check phase comes after every I/O callback of this turn,
    // so the commands of many HTTP requests parsed in one turn share a write too.
    setImmediate(() => {
      this.held = false;
      socket.uncork();
      if (this.flushed.length === 0) return;
      const flushed = this.flushed;
      this.flushed = [];
      for (const then of flushed) then();
    });
  }
}

/**
 * The same for a Cluster: each node's connection is coalesced on its own (one with few
 * commands in flight is left alone). Which node a command goes to is ioredis's business, so
 * every node is looked at; the list follows the Cluster's +node/-node events, so a decision
 * does not ask the Cluster for its nodes.
 */
export class ClusterWriteCoalescer {
  private coalescers: WriteCoalescer[];

  constructor(cluster: Cluster) {
    this.coalescers = cluster.nodes("all").map((node) => new WriteCoalescer(node));
    cluster.on("+node", this.added);
    cluster.on("-node", this.removed);
  }

  beforeSend(): void {
    const coalescers = this.coalescers;
    for (let i = 0; i < coalescers.length; i++) coalescers[i]!.beforeSend();
  }

  /** WriteCoalescer.sentNow over every node. */
  sentNow(): boolean {
    const coalescers = this.coalescers;
    for (let i = 0; i < coalescers.length; i++) if (!coalescers[i]!.sentNow()) return false;
    return true;
  }

  /** WriteCoalescer.afterHeldWrites over every node: `then` runs once the last node holding writes has sent them. */
  afterHeldWrites(then: () => void): boolean {
    const holding = this.coalescers.filter((coalescer) => coalescer.holding);
    let left = holding.length;
    for (const coalescer of holding) coalescer.afterHeldWrites(() => --left === 0 && then());
    return holding.length > 0;
  }

  private readonly added = (node: Redis): void => {
    this.coalescers = [...this.coalescers, new WriteCoalescer(node)];
  };

  private readonly removed = (node: Redis): void => {
    this.coalescers = this.coalescers.filter((coalescer) => coalescer.client !== node);
  };
}
