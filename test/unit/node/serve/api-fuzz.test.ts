import { MemoryStore } from "../../../../src/stores/memory.js";
import { nodeFuzzSuite } from "../../../fuzz/node-suite.js";

nodeFuzzSuite("memory store", async () => new MemoryStore());
