import type { CheckOptions, DebitCost, Policy, PolicyCosts } from "./types.js";
import { ValidationError, describeValue } from "./validation.js";

/** The largest cost of one request (SPEC §2). */
export const MAX_COST = 1e9;

/**
 * Per-policy costs (CheckOptions.costs, a debit's cost list) as one cost per member of the
 * stack, in stack order: the form every store decides from (the Lua and the Durable Object's
 * wire read a list). `costs` is either aligned with `policies` (costs[i] is what policies[i]
 * is charged) or keyed by policy name, naming every policy of the stack and nothing else (two
 * members of one name, a redefinition, are charged alike). Each cost is an integer from
 * `minCost` (0 for a check; −1e9 for a debit, a negative one a refund) to 1e9.
 *
 * Anything else is a ValidationError naming the field: `costs` itself (not a list or object,
 * the wrong length, a policy left out) or the member (`costs.1`, `costs.itpm`). `field` is
 * "costs" for a check and "cost" for a debit (whose scalar is also named `cost`).
 *
 * @example policyCosts({ rpm: 1, itpm: 0 }, [rpm, itpm], "costs", 0) // [1, 0]
 */
export function policyCosts(costs: PolicyCosts, policies: readonly Policy[], field: string, minCost: number): number[] {
  const aligned = Array.isArray(costs) ? alignedCosts(costs, policies, field) : namedCosts(costs as unknown, policies, field);
  for (let i = 0; i < aligned.length; i++) {
    const cost = aligned[i];
    if (!Number.isInteger(cost) || cost! < minCost || cost! > MAX_COST) {
      const which = Array.isArray(costs) ? String(i) : policies[i]!.name;
      const range = minCost < 0 ? `from ${minCost} to ${MAX_COST} (negative: a refund)` : `from ${minCost} to ${MAX_COST} (0: peek this policy)`;
      throw new ValidationError(`${field}.${which}`, `must be an integer ${range}, got ${describeValue(cost)}`);
    }
  }
  return aligned;
}

function alignedCosts(costs: readonly unknown[], policies: readonly Policy[], field: string): number[] {
  if (costs.length !== policies.length) throw new ValidationError(field, `must hold one cost per policy of the stack (${policies.length}), got ${costs.length}`);
  return costs as number[];
}

function namedCosts(costs: unknown, policies: readonly Policy[], field: string): number[] {
  if (typeof costs !== "object" || costs === null) throw new ValidationError(field, `must be a list of costs (one per policy) or an object of costs by policy name, got ${describeValue(costs)}`);
  const byName = costs as Record<string, unknown>;
  for (const name of Object.keys(byName)) {
    if (!policies.some((policy) => policy.name === name)) throw new ValidationError(`${field}.${name}`, `names no policy of the stack (${policies.map((policy) => policy.name).join(", ")})`);
  }
  return policies.map((policy) => {
    if (!Object.hasOwn(byName, policy.name)) throw new ValidationError(field, `names no cost for policy "${policy.name}" (every policy of the stack needs one; 0 peeks it)`);
    return byName[policy.name] as number;
  });
}

/**
 * A check's costs as decided: undefined when the check charges every policy `cost` (no
 * `costs`), else one cost per policy. A stack of one policy takes its one cost as `cost`, so
 * every store's one-policy path (Redis single.lua, the local cache) decides it as usual.
 */
export function checkCosts<O extends CheckOptions>(options: O, policies: readonly Policy[]): O {
  if (options.costs === undefined) return options;
  const costs = policyCosts(options.costs, policies, "costs", 0);
  if (policies.length === 1) {
    const { costs: _one, ...rest } = options;
    return { ...rest, cost: costs[0]! } as O;
  }
  return { ...options, costs };
}

/** Whether some cost of a cost (one number, a list, or costs by name) passes `test`; not validated. */
export function someCost(cost: DebitCost, test: (one: number) => boolean): boolean {
  if (typeof cost === "number") return test(cost);
  const costs = cost as unknown;
  return Array.isArray(costs) ? costs.some((one: number) => test(one)) : Object.values(costs as Record<string, number>).some(test);
}

const aboveZero = (one: number) => one > 0;

/** Whether a check consumes anything when admitted: some cost above 0 (else it peeks). */
export function consumes(options: Pick<CheckOptions, "cost" | "costs">): boolean {
  return someCost(options.costs ?? options.cost, aboveZero);
}

/**
 * A debit's cost as decided: a number (every policy alike) or one signed cost per policy.
 * A list whose members are all one number is that number (the usual path, and the one a
 * store's one-policy script takes).
 */
export function debitCosts(cost: DebitCost, policies: readonly Policy[]): number | number[] {
  if (typeof cost === "number") return cost;
  const costs = policyCosts(cost, policies, "cost", -MAX_COST);
  return costs.every((one) => one === costs[0]) ? costs[0]! : costs;
}

/** Whether a debit charges anything (some cost above 0), as opposed to a refund or nothing. */
export function chargesAny(cost: DebitCost): boolean {
  return someCost(cost, aboveZero);
}
