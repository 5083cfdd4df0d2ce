import { MemoryStore } from "../../src/stores/memory.js";
import { describeRlsSuite } from "./rls-suite.js";

describeRlsSuite("the memory store", async () => {
  const limiter = new MemoryStore();
  return { limiter, close: () => limiter.close() };
});
