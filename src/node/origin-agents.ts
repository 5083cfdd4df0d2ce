import http from "node:http";
import https from "node:https";

/**
 * The keep-alive connection pools to origins, one per scheme (an Agent pools per host and
 * port inside). Made once per server and shared by every runtime a reload builds: a reload
 * neither drops the warm connections to the origin nor leaves an old pool's sockets open.
 */
export interface OriginAgents {
  readonly "http:": http.Agent;
  readonly "https:": https.Agent;
}

/** `maxSockets`: connections per origin host at most (default 256). */
export function originAgents(maxSockets = 256): OriginAgents {
  return { "http:": new http.Agent({ keepAlive: true, maxSockets }), "https:": new https.Agent({ keepAlive: true, maxSockets }) };
}
