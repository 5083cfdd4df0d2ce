// The burst shapes of issue 22, run the same way on every store: one burst mixes the gateway
// and /v1/check, one hot key and many cold ones, so that each run checks every kind of key.
import { expect } from "vitest";
import { FAILED_OPEN_HEADER, OVERLOADED_TYPE } from "../../../../src/core/wire.js";
import { type Answer, checkPost, connectionBurst, gatewayGet, percentile, pipelinedBurst, statusCounts } from "./burst-helpers.js";
import { type BurstServer, LIMIT, SLOTS } from "./burst-servers.js";

/** Request `i` of a burst: gateway or API, the hot key or one of many; keys start with `tag` (one set per burst). */
function mixedRequest(tag: string, i: number): { api: boolean; key: string; text: string } {
  const gateway = (key: string) => ({ api: false, key, text: gatewayGet(key) });
  const api = (key: string) => ({ api: true, key, text: checkPost({ key, policy: "five" }) });
  switch (i % 4) {
    case 0:
      return gateway(`${tag}hot`);
    case 1:
      return gateway(`${tag}k${i % 97}`);
    case 2:
      return api(`${tag}api-hot`);
    default:
      return api(`${tag}api-k${i % 89}`);
  }
}

export interface BurstOutcome {
  tag: string;
  answers: Answer[];
  statuses: Record<number, number>;
  /** Admitted per key: gateway keys as the origin counted them, API keys by `allowed: true`. */
  admitted: Map<string, number>;
  /** Answers that say a failMode "open" admitted them. */
  failedOpen: number;
  /** Problem types of the 503s. */
  unavailableTypes: Set<string>;
  p99Ms: number;
}

function outcomeOf(tag: string, server: BurstServer, answers: Answer[], requestOf: (answer: Answer) => { api: boolean; key: string }): BurstOutcome {
  const admitted = new Map<string, number>([...server.origin.hits].filter(([key]) => key.startsWith(tag)));
  let failedOpen = 0;
  const unavailableTypes = new Set<string>();
  for (const answer of answers) {
    const { api, key } = requestOf(answer);
    if (answer.headers[FAILED_OPEN_HEADER.toLowerCase()]) failedOpen++;
    if (answer.status === 503) unavailableTypes.add(String((JSON.parse(answer.body) as { type?: string }).type));
    if (!api || answer.status !== 200) continue;
    const body = JSON.parse(answer.body) as { allowed?: boolean; failedOpen?: boolean };
    if (body.failedOpen) failedOpen++;
    if (body.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1);
  }
  return { tag, answers, statuses: statusCounts(answers), admitted, failedOpen, unavailableTypes, p99Ms: percentile(answers.map((answer) => answer.latencyMs), 99) };
}

/** `count` requests in one write on one connection, on keys starting with `tag`. */
export async function pipelinedMixed(server: BurstServer, tag: string, count: number): Promise<BurstOutcome> {
  const requests = Array.from({ length: count }, (_, i) => mixedRequest(tag, i));
  const answers = await pipelinedBurst(server.port, requests.map((request) => request.text));
  return outcomeOf(tag, server, answers, (answer) => requests[answer.index]!);
}

/** `connections` keep-alive connections, each sending `perConnection` requests in turn, on keys starting with `tag`. */
export async function connectionsMixed(server: BurstServer, tag: string, connections: number, perConnection: number): Promise<BurstOutcome> {
  const requestAt = (connection: number, index: number) => mixedRequest(tag, connection * perConnection + index);
  const { answers } = await connectionBurst({ port: server.port, connections, requestsPerConnection: perConnection, request: (connection, index) => requestAt(connection, index).text });
  return outcomeOf(tag, server, answers, (answer) => requestAt(answer.connection, answer.index));
}

/**
 * What every burst on a healthy store must show, whatever the failMode: no key admitted above
 * the limit; nothing failed open; no 503 that says the store was unavailable: at most an
 * overload was shed (`shedAllowed`), or nothing at all.
 */
export function expectExact(outcome: BurstOutcome, options: { shedAllowed: boolean }): void {
  for (const [key, count] of outcome.admitted) expect(count, `admitted for ${key}`).toBeLessThanOrEqual(LIMIT);
  expect(outcome.failedOpen).toBe(0);
  if (options.shedAllowed) expect([...outcome.unavailableTypes].filter((type) => type !== OVERLOADED_TYPE)).toEqual([]);
  else expect(outcome.statuses[503] ?? 0).toBe(0);
  // Not too strict either: the hot keys got their whole limit (the first requests are never shed).
  expect(outcome.admitted.get(`${outcome.tag}hot`)).toBe(LIMIT);
  expect(outcome.admitted.get(`${outcome.tag}api-hot`)).toBe(LIMIT);
  for (const status of Object.keys(outcome.statuses).map(Number)) expect([200, 429, 503]).toContain(status);
}

/** `connections` connections at once on the concurrency route, one key (`${tag}leased`). */
export async function leasedBurst(server: BurstServer, tag: string, connections: number): Promise<BurstOutcome> {
  const key = `${tag}leased`;
  const { answers } = await connectionBurst({ port: server.port, connections, requestsPerConnection: 1, request: () => gatewayGet(key, "/leased") });
  return outcomeOf(tag, server, answers, () => ({ api: false, key }));
}

/** Every slot of the concurrency route's key is free again within `withinMs` (nothing is in flight). */
export async function expectSlotsFree(server: BurstServer, tag: string, withinMs = 1000): Promise<void> {
  expect(server.origin.inFlight()).toBe(0);
  const deadlineMs = performance.now() + withinMs;
  let free = -1;
  while (performance.now() < deadlineMs) {
    free = await server.freeSlots(`${tag}leased`);
    if (free === SLOTS) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(free, `free slots ${withinMs} ms after the burst`).toBe(SLOTS);
}
