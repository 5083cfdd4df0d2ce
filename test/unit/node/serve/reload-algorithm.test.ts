import { MemoryStore } from "../../../../src/stores/memory.js";
import { reloadAlgorithmSuite } from "./reload-algorithm-suite.js";

reloadAlgorithmSuite("the memory store", async () => new MemoryStore());
