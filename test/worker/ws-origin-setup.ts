import type { TestProject } from "vitest/node";
import { startWsOrigin } from "../conformance/ws-origin.js";

// workerd cannot listen on a port: the WebSocket origin of the gateway table runs here, in
// Node, for the worker project's run, and its URL reaches the tests through inject("wsOrigin").
export default async function setup(project: TestProject) {
  const origin = await startWsOrigin();
  project.provide("wsOrigin", origin.url);
  return () => origin.close();
}

declare module "vitest" {
  export interface ProvidedContext {
    wsOrigin: string;
  }
}
