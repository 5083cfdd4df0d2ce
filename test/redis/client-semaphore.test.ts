import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Lease, LeaseLostError, MaxWaitExceededError, createSemaphore } from "../../src/client/index.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { TsChild } from "./child-processes.js";
import type { SemaphoreCommand, SemaphoreEvent } from "./fixtures/semaphore-client.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// spillway/client's semaphore over RedisStore, shared by separate Node processes (each with
// its own store and connections) and this test process, on the test's own redis-server.

type Child = TsChild<SemaphoreCommand, SemaphoreEvent>;
type Granted = Extract<SemaphoreEvent, { event: "granted" }>;

const KEY_PREFIX = "client-semaphore:";
const FIXTURE = new URL("./fixtures/semaphore-client.ts", import.meta.url);
/** How long an answer from a child may take before the test calls it lost (a loaded machine is slow, not wrong). */
const ANSWER_TIMEOUT_MS = 5000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Every event but "ready" answers a command, by its id. */
type Answer = Exclude<SemaphoreEvent, { event: "ready" }>;

const isGranted = (event: SemaphoreEvent): event is Granted => event.event === "granted";
const eventFor = (id: string, kind: Answer["event"]) => (event: SemaphoreEvent) => event.event === kind && event.id === id;
/** Any answer to command `id`: granted or refused, or a failure inside the child. */
const answerTo = (id: string) => (event: SemaphoreEvent): event is Answer => event.event !== "ready" && event.id === id;

let counter = 0;
const uniqueKey = (label: string) => `${label}-${++counter}-${crypto.randomUUID()}`;

describe("client semaphore over Redis, across processes", () => {
  let server: RedisServer;
  let store: RedisStore;
  const children: Child[] = [];

  const forkChild = async (): Promise<Child> => {
    const child: Child = new TsChild(FIXTURE, [server.url, KEY_PREFIX]);
    children.push(child);
    // A child compiles its TypeScript on start: many seconds on a loaded machine.
    await child.waitFor((event) => event.event === "ready", 30_000, "ready");
    return child;
  };

  beforeAll(async () => {
    server = await startRedis();
    store = new RedisStore({ url: server.url, keyPrefix: KEY_PREFIX, timeoutMs: 2000 });
    await store.ready();
    await Promise.all([forkChild(), forkChild(), forkChild()]);
  });

  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop()));
    await store?.close();
    await server?.stop();
  });

  it("grants leases in global arrival order among waiters in 3 processes, never more than the limit at once", async () => {
    const limit = 2;
    const key = uniqueKey("fifo");
    const policy = { name: "slots", algorithm: "concurrency" as const, limit, lease: "30s" };
    const semaphore = createSemaphore({ limiter: store, key, policy, maxWaitMs: 0 });

    // This process fills every slot, so every child's acquire has to queue.
    const ours: Lease[] = [];
    for (let index = 0; index < limit; index++) ours.push(await semaphore.acquire());
    await store.client.incrby(`${key}:holders`, limit);

    // Arrivals interleave across processes in no per-process pattern; each is sent once the
    // one before it has joined the queue in Redis, so the global arrival order is known (a
    // fixed stagger is not enough on a loaded machine, where a child may take longer to send).
    const arrivalProcess = [2, 0, 1, 1, 2, 0, 0, 1, 2];
    const queueKey = keyLayout(KEY_PREFIX, key).queueKey;
    const ownerOf = new Map<string, Child>();
    for (const [index, processIndex] of arrivalProcess.entries()) {
      const child = children[processIndex]!;
      const id = `arrival-${index}`;
      ownerOf.set(id, child);
      child.send({ op: "acquire", id, key, limit, leaseMs: 30_000, maxWaitMs: 20_000 });
      await vi.waitFor(async () => expect(await store.client.zcard(queueKey)).toBe(index + 1), { timeout: ANSWER_TIMEOUT_MS, interval: 5 });
    }
    const early = children.flatMap((child) => child.events.filter((event) => isGranted(event) && ownerOf.has(event.id)));
    expect(early).toEqual([]);

    // Free one slot at a time, oldest holder first: each release must let exactly the head of the queue in.
    const holders: Array<{ release: () => Promise<void> }> = ours.map((lease) => ({
      release: async () => {
        await store.client.decr(`${key}:holders`);
        expect(await lease.release()).toBe(true);
      },
    }));
    const grantOrder: string[] = [];
    const seen = new Set<string>();
    const nextGrant = () =>
      Promise.race(children.map((child) => child.waitFor((event): event is Granted => isGranted(event) && ownerOf.has(event.id) && !seen.has(event.id), ANSWER_TIMEOUT_MS, "a grant")));
    for (let step = 0; step < arrivalProcess.length; step++) {
      await holders.shift()!.release();
      const grant = await nextGrant();
      seen.add(grant.id);
      grantOrder.push(grant.id);
      // The shared count includes this process's leases: more than `limit` means a slot was given twice.
      expect(grant.holders).toBeLessThanOrEqual(limit);
      const owner = ownerOf.get(grant.id)!;
      holders.push({
        release: async () => {
          owner.send({ op: "release", id: grant.id });
          const released = await owner.waitFor(eventFor(grant.id, "released"), ANSWER_TIMEOUT_MS, `release of ${grant.id}`);
          expect(released).toMatchObject({ released: true });
        },
      });
    }
    expect(grantOrder).toEqual(arrivalProcess.map((_, index) => `arrival-${index}`));
    // Exactly one grant per release: nobody got a lease that was not freed for them.
    const allGrants = children.flatMap((child) => child.events.filter((event) => isGranted(event) && ownerOf.has(event.id)));
    expect(allGrants).toHaveLength(arrivalProcess.length);
    for (const holder of holders) await holder.release();
    expect(Number(await store.client.get(`${key}:holders`))).toBe(0);
    expect(await semaphore.acquire().then((lease) => lease.release())).toBe(true);
  });

  it("gives a SIGKILLed holder's slot to a waiter in another process when its lease expires", async () => {
    const leaseMs = 1000;
    const key = uniqueKey("expiry");
    const victim = await forkChild();
    // The lease cannot start before its acquire is sent; the victim's report of it may come late.
    const sentAtMs = Date.now();
    victim.send({ op: "acquire", id: "victim", key, limit: 1, leaseMs, maxWaitMs: 0 });
    const held = await victim.waitFor((event): event is Granted => isGranted(event) && event.id === "victim", ANSWER_TIMEOUT_MS, "the victim's lease");

    const waiter = children[0]!;
    waiter.send({ op: "acquire", id: "heir", key, limit: 1, leaseMs, maxWaitMs: 5000 });
    const queueKey = keyLayout(KEY_PREFIX, key).queueKey;
    await vi.waitFor(async () => expect(await store.client.zcard(queueKey)).toBe(1), { timeout: ANSWER_TIMEOUT_MS, interval: 5 });
    await victim.crash();
    expect(victim.process.signalCode).toBe("SIGKILL");

    // The dead process never released: until the lease runs out, the slot is still taken.
    const semaphore = createSemaphore({ limiter: store, key, policy: { name: "slots", algorithm: "concurrency", limit: 1, lease: leaseMs }, maxWaitMs: 0 });
    const refused = await semaphore.acquire().then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(MaxWaitExceededError);
    expect(Date.now() - held.atMs).toBeLessThan(leaseMs);

    const answer = await waiter.waitFor(answerTo("heir"), ANSWER_TIMEOUT_MS, "the heir's answer");
    expect(answer.event).toBe("granted");
    // Not before the lease ran out (counted from before it was taken; 5 ms for clock rounding).
    expect(answer.atMs - sentAtMs).toBeGreaterThanOrEqual(leaseMs - 5);
    const afterGrantMs = answer.atMs - held.atMs;
    // Woken by the lease's expiry, not by a much later poll (loose: a busy machine adds delay).
    expect(afterGrantMs).toBeLessThan(leaseMs * 1.5);
    waiter.send({ op: "release", id: "heir" });
    await waiter.waitFor(eventFor("heir", "released"), ANSWER_TIMEOUT_MS, "release of heir");
  });

  it("extend keeps a lease alive well past its original expiry", async () => {
    const leaseMs = 600;
    const key = uniqueKey("extend");
    const [holder, waiter] = [children[1]!, children[2]!];
    holder.send({ op: "acquire", id: "holder", key, limit: 1, leaseMs, maxWaitMs: 0 });
    const held = await holder.waitFor((event): event is Granted => isGranted(event) && event.id === "holder", ANSWER_TIMEOUT_MS, "the holder's lease");
    waiter.send({ op: "acquire", id: "waiter", key, limit: 1, leaseMs, maxWaitMs: 5000 });

    // Extend every 250 ms for 1.5 s: two and a half of the original leases.
    for (let round = 0; round < 6; round++) {
      await sleep(250);
      const sentMs = Date.now();
      holder.send({ op: "extend", id: "holder", leaseMs });
      // This round's answer: one clock (the same machine), and the child stamps it after the call.
      const isThisRound = (event: SemaphoreEvent) => (event.event === "extended" || event.event === "lost") && event.id === "holder" && event.atMs >= sentMs;
      const answer = await holder.waitFor(isThisRound, ANSWER_TIMEOUT_MS, `extend #${round}`);
      expect(answer.event).toBe("extended");
    }
    expect(waiter.events.filter(answerTo("waiter"))).toEqual([]);

    const releaseSentMs = Date.now();
    expect(releaseSentMs - held.atMs).toBeGreaterThan(2 * leaseMs);
    holder.send({ op: "release", id: "holder" });
    expect(await holder.waitFor(eventFor("holder", "released"), ANSWER_TIMEOUT_MS, "release of holder")).toMatchObject({ released: true });
    const answer = await waiter.waitFor(answerTo("waiter"), ANSWER_TIMEOUT_MS, "the waiter's answer");
    expect(answer.event).toBe("granted");
    expect(answer.atMs).toBeGreaterThanOrEqual(releaseSentMs);
    waiter.send({ op: "release", id: "waiter" });
    await waiter.waitFor(eventFor("waiter", "released"), ANSWER_TIMEOUT_MS, "release of waiter");
  });

  it("a lease that is not extended in time is lost, and extend says so", async () => {
    const semaphore = createSemaphore({ limiter: store, key: uniqueKey("lost"), policy: { name: "slots", algorithm: "concurrency", limit: 1, lease: 300 } });
    const lease = await semaphore.acquire();
    await sleep(450);
    const error = await lease.extend().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(LeaseLostError);
  });
});
