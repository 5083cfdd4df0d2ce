import { semaphoreTable } from "./client-semaphore.js";
console.log(await semaphoreTable("redis://127.0.0.1:6379"));
