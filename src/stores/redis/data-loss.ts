import type { Redis } from "ioredis";
import { concurrencyPolicies } from "../../core/concurrency.js";
import type { Decision, Policy } from "../../core/types.js";
import { StoreUnavailableError } from "../../core/limiter.js";
import { Subscriptions } from "./client-events.js";
import { isCluster } from "./connection.js";
import { withTimeout } from "./errors.js";
import type { RedisClient } from "./scripts.js";
import { markerKeyFor, serverNodes } from "./nodes.js";

/** How often the markers are read back when nothing else prompts it (FLUSHALL gives no sign). */
export const DEFAULT_DATA_CHECK_INTERVAL_MS = 1000;

export interface DataLossGuardOptions {
  client: RedisClient;
  keyPrefix: string;
  /** "redis", "redis-cluster" or "redis-sentinel", for the log line. */
  store: string;
  /** How long a concurrency grant waits for the data to be verified after a reconnect. */
  waitMs: number;
  checkIntervalMs?: number;
  /** Where the one line per detected loss goes. */
  log: (line: string) => void;
}

/** What the guard knows of one server: its marker and the server process that holds it. */
interface NodeEpoch {
  markerId: string;
  runId: string;
}

/**
 * Notices that Redis lost its data, and fences concurrency policies until every lease granted
 * before the loss has expired.
 *
 * Redis that restarts without persistence, a FLUSHALL, or a failover to a replica that lacked
 * the last writes all forget leases that callers still hold: without a fence the next acquires
 * would be granted on top of them (10 holders on a limit of 5). Rate policies only restart
 * fresh (a window's count starts again), which is the documented cost of such a loss.
 *
 * How: each server (each Cluster master) holds a marker key with a random id, written once
 * (SET NX) and shared by every Spillway process. The guard reads it back, with the server's
 * run_id, after every reconnect and every `checkIntervalMs`. A missing or changed marker, a
 * changed run_id (a restart or failover, whose last writes may be lost even with persistence)
 * or a Cluster master not seen before is a loss: one JSON line (`store-reset`), the counter
 * `resets`, and from then on, for one lease length of each concurrency policy, no lease is
 * granted (fencedMs). Between a disconnect and the next verification, grants wait for it.
 *
 * A process that starts after the loss cannot tell a wiped Redis from a fresh one; nor does a
 * lease taken with a `leaseMs` longer than its policy's lease stay fenced past the policy's.
 */
export class DataLossGuard {
  private readonly options: DataLossGuardOptions;
  private readonly known = new Map<string, NodeEpoch>();
  /** Bumped on every disconnect: a verification that began before it proves nothing. */
  private generation = 0;
  private verified = false;
  private verifiedOnce = false;
  private verifying: Promise<void> | undefined;
  /** performance.now() of the last detected loss. */
  private fencedAtMs = Number.NEGATIVE_INFINITY;
  private resetCount = 0;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly watched = new WeakSet<Redis>();
  /** Shared with every other store on the client, dropped on close (client-events.ts). */
  private readonly subscriptions = new Subscriptions();
  private periodic: Redis | undefined;
  /** Checks run one at a time: two at once could both see one loss (one by SET NX, one by the id). */
  private checking: Promise<unknown> = Promise.resolve();
  /** What the last failed connection attempt said (NOAUTH, ECONNREFUSED …), until one succeeds. */
  lastConnectionError: string | undefined;

  constructor(options: DataLossGuardOptions) {
    this.options = options;
    const client = options.client;
    if (isCluster(client)) {
      for (const node of client.nodes()) this.watch(node);
      this.subscriptions.on(client, "+node", (node: Redis) => this.watch(node));
      this.subscriptions.on(client, "-node", () => this.unverify());
      // Not from inside the Cluster's own slot refresh: once it has settled.
      this.subscriptions.on(client, "refresh", () => setTimeout(() => this.verifySoon(), 0));
    } else this.watch(client as Redis);
    // A client that quit stops the checks (and lets go of the client).
    this.subscriptions.on(client, "end", () => {
      if (client.status === "end") this.close();
    });
    this.timer = setInterval(() => this.checkPeriodically(), options.checkIntervalMs ?? DEFAULT_DATA_CHECK_INTERVAL_MS);
    this.timer.unref?.();
    if (client.status === "ready") this.verifySoon();
  }

  /** Losses detected since the guard started (spillway_store_resets_total). */
  get resets(): number {
    return this.resetCount;
  }

  /**
   * Before a lease is granted: resolves once the data is verified since the last (re)connect,
   * at once in the steady state. A verification that does not finish within `waitMs` throws
   * StoreUnavailableError (failMode applies).
   */
  async beforeGrant(): Promise<void> {
    if (this.verified) return;
    await withTimeout(this.verify(), this.options.waitMs, "data check");
  }

  /** How much longer the stack's concurrency policies grant no lease (0: not fenced). */
  fencedMs(policies: readonly Policy[]): number {
    const elapsedMs = performance.now() - this.fencedAtMs;
    let leftMs = 0;
    for (const policy of concurrencyPolicies(policies)) leftMs = Math.max(leftMs, policy.leaseMs - elapsedMs);
    return Math.ceil(leftMs);
  }

  close(): void {
    clearInterval(this.timer);
    this.subscriptions.close();
    this.periodic?.disconnect();
    this.periodic = undefined;
    // A store made on this client later (reconnected with connect()) gets a guard that runs.
    if (guards.get(this.options.client) === this) guards.delete(this.options.client);
  }

  /**
   * The check on the timer. Standalone, it goes over a connection of its own, so that it never
   * comes between a caller's commands on the store's connection (pipelines, MULTI, or a test
   * counting them); a Cluster's are its masters' connections. Unverified, it is the full
   * verification, which grants wait for, on the store's own connection.
   */
  private checkPeriodically(): void {
    const client = this.options.client;
    if (!this.verified || isCluster(client)) return this.verifySoon();
    if (!this.periodic) {
      this.periodic = (client as Redis).duplicate();
      this.periodic.on("error", () => {}); // its trouble shows on the store's connection
      if (this.periodic.status === "wait") this.periodic.connect().catch(() => {}); // lazyConnect
    }
    if (this.periodic.status === "ready") this.verifyNode("server", this.periodic).catch(() => {});
  }

  private watch(node: Redis): void {
    if (this.watched.has(node)) return;
    this.watched.add(node);
    // Synchronous with the disconnect: no grant passes beforeGrant once the socket is gone.
    this.subscriptions.on(node, "close", () => this.unverify());
    this.subscriptions.on(node, "ready", () => {
      this.lastConnectionError = undefined;
      this.verifySoon();
    });
    // Kept for health: a refused AUTH leaves the client "connecting" with no other trace.
    this.subscriptions.on(node, "error", (error: Error) => (this.lastConnectionError = error.message));
  }

  private unverify(): void {
    this.generation++;
    this.verified = false;
  }

  private verifySoon(): void {
    this.verify().catch(() => {}); // unverified until a later one succeeds; grants wait for it
  }

  private verify(): Promise<void> {
    this.verifying ??= this.verifyAll().finally(() => (this.verifying = undefined));
    return this.verifying;
  }

  private async verifyAll(): Promise<void> {
    // A disconnect during a verification voids it: check again (a flapping link: give up).
    for (let attempt = 0; attempt < 3; attempt++) {
      const generation = this.generation;
      const nodes = serverNodes(this.options.client);
      if (nodes.length === 0) throw new StoreUnavailableError("redis data check: no node to check");
      await Promise.all(nodes.map(([nodeKey, node]) => this.verifyNode(nodeKey, node)));
      if (generation !== this.generation) continue;
      this.verified = true;
      this.verifiedOnce = true;
      return;
    }
    throw new StoreUnavailableError("redis data check: the connection dropped during every check");
  }

  private verifyNode(nodeKey: string, node: Redis): Promise<void> {
    const run = this.checking.then(() => this.checkNode(nodeKey, node));
    this.checking = run.catch(() => {});
    return run;
  }

  private async checkNode(nodeKey: string, node: Redis): Promise<void> {
    const client = this.options.client;
    const markerKey = markerKeyFor(client, this.options.keyPrefix, nodeKey);
    // Sent together, nothing waiting on another's answer: a check adds no round trip after a
    // store's first call. SET NX writes the marker when there is none (first start, or lost);
    // GET then reads whichever is there. INFO may be refused (ACLs): the marker alone decides.
    const [info, created, marker] = await Promise.all([node.info("server").catch(() => ""), node.set(markerKey, crypto.randomUUID(), "NX"), node.get(markerKey)]);
    const runId = /run_id:(\w+)/.exec(info)?.[1] ?? "";
    const known = this.known.get(nodeKey);
    let reason: string | undefined;
    if (known) {
      if (created === "OK") reason = "the data is gone (a restart without persistence, FLUSHALL or FLUSHDB)";
      else if (marker !== known.markerId) reason = "the data was replaced (another Spillway process found it lost first)";
      else if (runId && known.runId && runId !== known.runId) reason = `another server process answers (run_id ${known.runId} -> ${runId}): a restart or failover, which may have lost the last writes`;
    } else if (this.verifiedOnce) reason = "a Cluster master not seen before serves keys (a failover to a replica or a new node), which may lack the last writes";
    const markerId = marker;
    this.known.set(nodeKey, { markerId: markerId ?? "", runId });
    if (reason) this.detected(nodeKey, reason);
  }

  private detected(nodeKey: string, reason: string): void {
    this.fencedAtMs = performance.now();
    this.resetCount++;
    const line = {
      spillway: true,
      event: "store-reset",
      time: new Date().toISOString(),
      store: this.options.store,
      node: nodeKey,
      reason,
      effect: "concurrency policies grant no lease until one lease length has passed; rate policies start fresh",
    };
    this.options.log(JSON.stringify(line));
  }
}

const guards = new WeakMap<RedisClient, DataLossGuard>();

/**
 * The guard of a client, shared by every store on it: one set of listeners and one timer per
 * client, however many stores are made on it (per request, even, or one per key prefix). The
 * data of one server is lost all at once, so one marker per server tells for every prefix; it
 * is written under the first store's prefix.
 */
export function dataLossGuardFor(options: DataLossGuardOptions): DataLossGuard {
  let guard = guards.get(options.client);
  if (!guard) guards.set(options.client, (guard = new DataLossGuard(options)));
  return guard;
}

/**
 * The answer to a check on a fenced stack: denied by its concurrency policies for as long as
 * the fence lasts, the other policies as a peek found them (nothing was consumed).
 */
export function fencedDecision(peeked: Decision, policies: readonly Policy[], fencedMs: number): Decision {
  const results = peeked.policies.map((result) => {
    const policy = policies.find((one) => one.name === result.policy);
    if (policy?.algorithm !== "concurrency") return result;
    return { ...result, allowed: false, remaining: 0, resetMs: Math.max(result.resetMs, fencedMs), retryAfterMs: fencedMs };
  });
  const top = results.find((result) => !result.allowed) ?? results[0]!;
  return { ...top, waitMs: 0, policies: results };
}
