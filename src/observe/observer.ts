import type { Policy, PolicyDecision } from "../core/types.js";

/**
 * What became of one decision, for one policy of its stack. `blocked` is a policy's denial
 * while its block (policy `block`) holds the key; a stack's outcome is `denied` either way.
 */
export type DecisionOutcome = "allowed" | "denied" | "blocked" | "failed_open" | "error";
export const DECISION_OUTCOMES: readonly DecisionOutcome[] = ["allowed", "denied", "blocked", "failed_open", "error"];

/** `unavailable`: the store could not be reached (failMode applies); `fault`: it answered with an error. */
export type StoreErrorKind = "unavailable" | "fault";

/** One check or acquire, as the caller saw it. */
export interface DecisionEvent {
  /** Who asked: `api` (the /v1 API and RPC) or a gateway route (`0`, `1`, … its index). */
  source: string;
  /** The store's kind: `memory`, `durable-object`, `redis`, `redis-cluster`. */
  store: string;
  key: string;
  /** The stack, in order. */
  policies: readonly Policy[];
  /** The stack's outcome. */
  outcome: DecisionOutcome;
  /** Per policy, when the store answered a check; absent for acquires and failures. */
  results?: readonly PolicyDecision[];
  /** The policy that decided (the most restrictive one), or the first of the stack. */
  policy: string;
  /** The store round trip as the caller saw it. */
  durationMs: number;
}

export interface StoreErrorEvent {
  store: string;
  kind: StoreErrorKind;
  /** check, acquire, release, … */
  operation: string;
  source: string;
  key: string;
  error: unknown;
}

/** A block (policy `block`) that a check's denial or a debit's overdraft just started. */
export interface BlockEvent {
  source: string;
  store: string;
  key: string;
  policy: string;
  /** How long the key is refused: the policy's block. */
  blockedMs: number;
}

export interface GatewayRequestEvent {
  /** The route's index (`0`), or `unrouted` for a request no route matched. */
  route: string;
  status: number;
}

export interface OriginEvent {
  route: string;
  /** Until the origin's answer headers arrived (or it failed). */
  durationMs: number;
}

/**
 * Receives what the limiter and the gateway do. Runtime-neutral: Prometheus (Node), the
 * Workers Analytics Engine, the live stats of the dashboard and the heavy-hitters sketch each
 * implement the methods they need. Called on the request path: implementations stay cheap and
 * never throw.
 */
export interface SpillwayObserver {
  decision?(event: DecisionEvent): void;
  storeError?(event: StoreErrorEvent): void;
  block?(event: BlockEvent): void;
  gatewayRequest?(event: GatewayRequestEvent): void;
  originDuration?(event: OriginEvent): void;
}

/** Several observers as one; a method nobody implements stays absent, so callers skip it. */
export function combineObservers(observers: readonly SpillwayObserver[]): SpillwayObserver {
  const decision = observers.flatMap((o) => (o.decision ? [o.decision.bind(o)] : []));
  const storeError = observers.flatMap((o) => (o.storeError ? [o.storeError.bind(o)] : []));
  const gatewayRequest = observers.flatMap((o) => (o.gatewayRequest ? [o.gatewayRequest.bind(o)] : []));
  const originDuration = observers.flatMap((o) => (o.originDuration ? [o.originDuration.bind(o)] : []));
  const block = observers.flatMap((o) => (o.block ? [o.block.bind(o)] : []));
  const combined: SpillwayObserver = {};
  // Plain loops, not forEach with an arrow (these run several times per request), and one
  // function literal each, so that each call site sees one kind of listener.
  if (decision.length) combined.decision = (event) => { for (const listener of decision) listener(event); };
  if (storeError.length) combined.storeError = (event) => { for (const listener of storeError) listener(event); };
  if (gatewayRequest.length) combined.gatewayRequest = (event) => { for (const listener of gatewayRequest) listener(event); };
  if (originDuration.length) combined.originDuration = (event) => { for (const listener of originDuration) listener(event); };
  if (block.length) combined.block = (event) => { for (const listener of block) listener(event); };
  return combined;
}
