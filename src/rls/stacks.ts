import type { Policy } from "../core/types.js";
import type { CounterLimit, Planned } from "./plan.js";

/** Stacks kept: bounded, cleared when full. */
const MAX_CACHED_STACKS = 16_384;

type LimitPlan = Extract<Planned, { kind: "limit" }>;

/** The policies arrays of the combinations of counters that requests were decided on (RlsService). */
export class StackCache {
  private stacks = new Map<readonly CounterLimit[], StackNode>();
  private stackCount = 0;

  /**
   * The one policies array of a combination of counters, kept: the store caches a stack's
   * encoding by the array's identity, so a new array per request would be encoded (and
   * weakly mapped) again on every call. Found by the identity of each counter's limits (the
   * planner's, one array per counter and config load, so a reload's new rules build new
   * stacks), a level per descriptor: no key text per request. Bounded like the
   * planner's cache.
   */
  of(planned: readonly Planned[], indices: readonly number[]): readonly Policy[] {
    if (this.stackCount >= MAX_CACHED_STACKS) {
      this.stacks = new Map();
      this.stackCount = 0;
    }
    const first = (planned[indices[0]!] as LimitPlan).limits;
    let node = this.stacks.get(first);
    if (!node) this.stacks.set(first, (node = {}));
    for (let i = 1; i < indices.length; i++) node = childStack(node, (planned[indices[i]!] as LimitPlan).limits);
    if (node.policies) return node.policies;
    this.stackCount++;
    return (node.policies = uniquePolicies(planned, indices));
  }
}

/**
 * A combination of counters in StackCache.of: its policies, and longer combinations that
 * start with it. Most combinations go on one way only (a client address's counter, then the
 * route's): that one is held inline, and a Map is made only for a second way.
 */
interface StackNode {
  policies?: readonly Policy[];
  onlyLimits?: readonly CounterLimit[];
  only?: StackNode;
  next?: Map<readonly CounterLimit[], StackNode>;
}

function childStack(node: StackNode, limits: readonly CounterLimit[]): StackNode {
  if (node.onlyLimits === limits) return node.only!;
  if (node.onlyLimits === undefined) {
    node.onlyLimits = limits;
    return (node.only = {});
  }
  const next = (node.next ??= new Map());
  let child = next.get(limits);
  if (!child) next.set(limits, (child = {}));
  return child;
}

/** The stored policies of several descriptors as one stack: a counter two descriptors share is checked once. */
function uniquePolicies(planned: readonly Planned[], indices: readonly number[]): Policy[] {
  const policies: Policy[] = [];
  for (let i = 0; i < indices.length; i++) {
    const limits = (planned[indices[i]!] as LimitPlan).limits;
    for (let j = 0; j < limits.length; j++) {
      const stored = limits[j]!.stored;
      // A handful per request: a scan beats a Set.
      if (!policies.some((policy) => policy.name === stored.name)) policies.push(stored);
    }
  }
  return policies;
}
