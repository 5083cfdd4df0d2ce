import type { Limiter } from "../limiter.js";
import { MemoryStore } from "../stores/memory.js";
import type { StoreChoice } from "./cli-args.js";

/** Builds the store `spillway serve` was asked for. */
export async function createStore(choice: StoreChoice): Promise<Limiter> {
  switch (choice.kind) {
    case "memory":
      return new MemoryStore();
    default:
      throw new Error(`store ${choice.kind} is not wired yet`);
  }
}
