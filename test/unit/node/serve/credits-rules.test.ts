import { MemoryStore } from "../../../../src/stores/memory.js";
import { creditsRulesSuite } from "./credits-rules-suite.js";

creditsRulesSuite("memory store", async () => new MemoryStore());
