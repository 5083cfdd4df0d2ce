import { MemoryStore } from "../../../../src/stores/memory.js";
import { QUOTA_NOW_MS, describeQuotaSuite } from "./quota-suite.js";

describeQuotaSuite("the memory store", async () => {
  const limiter = new MemoryStore({ clockMs: () => QUOTA_NOW_MS });
  return { limiter, close: () => limiter.close() };
});
