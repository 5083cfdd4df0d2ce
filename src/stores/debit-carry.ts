import type { CheckOptions, Decision, Policy } from "../core/types.js";

/** One debit of a key (Limiter.debitLater), as it travels to the key's object. */
export interface CarriedDebit {
  policies: Policy[];
  /** One cost for every policy, or one per policy in stack order (a multi-measure settle). */
  cost: number | number[];
  /** A refund's spend time (Limiter.debit), when its caller knows it. */
  spentAtMs?: number;
}

/** The call a key's held debits ride with: the object applies the debits first, then answers it. */
export type NextCall = { peek: Policy[] } | { check: Policy[]; options: CheckOptions } | { debit: Policy[]; cost: number | number[]; spentAtMs?: number };

/** Held debits of one key, and their callers' promises. */
export interface HeldDebits {
  debits: CarriedDebit[];
  settle(answers: Promise<Decision[]>): void;
}

interface Held {
  debits: CarriedDebit[];
  waiters: { resolve: (decision: Decision) => void; reject: (error: unknown) => void }[];
  timer: ReturnType<typeof setTimeout>;
}

/**
 * How long a body's debit waits for its key's next call from this isolate before it is sent
 * alone (docs/counting.md, "The honest bound"): the longest another isolate can go without
 * seeing it. A key whose requests come back to back (an API client, an LLM conversation)
 * sends each debit with the next request's peek: one object request per gateway request.
 */
export const DEBIT_CARRY_MS = 500;

/**
 * Debits held per key so they can ride with the key's next call (the Durable Object store):
 * `hold` answers once the debit has landed, with the state after it; `take` hands the key's
 * held debits to a call that sends them first. A debit nobody takes is sent alone after carryMs.
 */
export class DebitCarry {
  private readonly held = new Map<string, Held>();
  private readonly carryMs: number;
  private readonly sendAlone: (key: string, debits: CarriedDebit[]) => Promise<Decision[]>;

  constructor(carryMs: number, sendAlone: (key: string, debits: CarriedDebit[]) => Promise<Decision[]>) {
    this.carryMs = carryMs;
    this.sendAlone = sendAlone;
  }

  hold(key: string, debit: CarriedDebit): Promise<Decision> {
    return new Promise((resolve, reject) => {
      let held = this.held.get(key);
      if (!held) {
        held = { debits: [], waiters: [], timer: setTimeout(() => this.flush(key), this.carryMs) };
        this.held.set(key, held);
      }
      held.debits.push(debit);
      held.waiters.push({ resolve, reject });
    });
  }

  /** The key's held debits, now no longer held (undefined: none): the caller sends them and settles. */
  take(key: string): HeldDebits | undefined {
    const held = this.held.get(key);
    if (!held) return undefined;
    this.held.delete(key);
    clearTimeout(held.timer);
    return {
      debits: held.debits,
      settle: (answers) =>
        answers.then(
          (decisions) => held.waiters.forEach((waiter, i) => waiter.resolve(decisions[i]!)),
          (error: unknown) => held.waiters.forEach((waiter) => waiter.reject(error)),
        ),
    };
  }

  /** Sends the key's held debits alone, now; answers once they landed (or failed). */
  flush(key: string): Promise<void> {
    const held = this.take(key);
    if (!held) return Promise.resolve();
    const answers = this.sendAlone(key, held.debits);
    held.settle(answers);
    return answers.then(
      () => undefined,
      () => undefined,
    );
  }
}
