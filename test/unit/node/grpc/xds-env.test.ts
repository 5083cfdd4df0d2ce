import { describe, expect, it } from "vitest";
import { parseRlsEnv } from "../../../../src/node/grpc/env.js";

const BASE = { REDIS_SOCKET_TYPE: "tcp", REDIS_URL: "127.0.0.1:6379" };
const XDS = { ...BASE, CONFIG_TYPE: "GRPC_XDS_SOTW" };
const failure = (env: Record<string, string>) => {
  try {
    parseRlsEnv({ ...XDS, ...env });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("parsed without an error");
};

describe("spillway rls: CONFIG_TYPE=GRPC_XDS_SOTW and its variables", () => {
  it("takes the reference's defaults, and reads no xDS variable with CONFIG_TYPE=FILE (the default)", () => {
    expect(parseRlsEnv(XDS).settings.xds).toEqual({ serverUrl: "localhost:18000", nodeId: "default", nodeMetadata: {}, retryIntervalMs: 3000, headers: {}, forceStart: false });
    expect(parseRlsEnv({ ...BASE, CONFIG_TYPE: "FILE", CONFIG_GRPC_XDS_SERVER_URL: "http://nowhere" }).settings.xds).toBeUndefined();
    expect(parseRlsEnv(BASE).settings.xds).toBeUndefined();
  });

  it("reads what Envoy Gateway sets, and the rest", () => {
    const { settings, ignored } = parseRlsEnv({
      ...XDS,
      CONFIG_GRPC_XDS_SERVER_URL: "envoy-gateway.envoy-gateway-system.svc.cluster.local:18001",
      CONFIG_GRPC_XDS_NODE_ID: "envoy-ratelimit",
      FORCE_START_WITHOUT_INITIAL_CONFIG: "true",
      CONFIG_GRPC_XDS_NODE_METADATA: "cluster=eg,zone=a=b",
      CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "X-Token:abc:def,tenant:blue",
      CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: "500ms",
      XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: "8388608",
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: "1s",
      CONFIG_GRPC_XDS_SERVER_USE_TLS: "true",
      CONFIG_GRPC_XDS_SERVER_TLS_CACERT: "/certs/ca.pem",
      CONFIG_GRPC_XDS_CLIENT_TLS_CERT: "/certs/tls.crt",
      CONFIG_GRPC_XDS_CLIENT_TLS_KEY: "/certs/tls.key",
      CONFIG_GRPC_XDS_SERVER_TLS_SAN: "envoy-gateway",
    });
    expect(settings.xds).toEqual({
      serverUrl: "envoy-gateway.envoy-gateway-system.svc.cluster.local:18001",
      nodeId: "envoy-ratelimit",
      forceStart: true,
      nodeMetadata: { cluster: "eg", zone: "a=b" },
      headers: { "x-token": "abc:def", tenant: "blue" },
      retryIntervalMs: 500,
      maxMessageBytes: 8_388_608,
      tls: { caPath: "/certs/ca.pem", certPath: "/certs/tls.crt", keyPath: "/certs/tls.key", serverName: "envoy-gateway" },
    });
    expect(ignored).toEqual(["XDS_CLIENT_BACKOFF_INITIAL_INTERVAL"]);
  });

  it.each([
    [{ CONFIG_TYPE: "GRPC_XDS_DELTA" }, 'CONFIG_TYPE: must be FILE (the runtime directory) or GRPC_XDS_SOTW (an xDS server), got "GRPC_XDS_DELTA"'],
    [{ CONFIG_GRPC_XDS_SERVER_URL: "http://eg:18001" }, "CONFIG_GRPC_XDS_SERVER_URL: must be host:port (a gRPC target, TLS by CONFIG_GRPC_XDS_SERVER_USE_TLS), not a URL"],
    [{ CONFIG_GRPC_XDS_SERVER_URL: "eg" }, 'CONFIG_GRPC_XDS_SERVER_URL: must be host:port of the xDS server (Envoy Gateway sets envoy-gateway:18001), got "eg"'],
    [{ CONFIG_GRPC_XDS_NODE_METADATA: "cluster:eg" }, 'CONFIG_GRPC_XDS_NODE_METADATA: must be key=value,key=value: "cluster:eg" has no "=" after a name'],
    [{ CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "token=abc" }, 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: must be name:value,name:value: "token=abc" has no ":" after a name'],
    [{ CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "grpc-timeout:1S" }, 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "grpc-timeout" is not a header gRPC can send'],
    [{ CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: "3" }, "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: must be a Go duration"],
    [{ CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: "0s" }, "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: must be at least 1ms"],
    [{ XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: "4MB" }, "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: must be a whole number of bytes"],
    [{ FORCE_START_WITHOUT_INITIAL_CONFIG: "yes" }, 'FORCE_START_WITHOUT_INITIAL_CONFIG: must be true or false, got "yes"'],
    [{ CONFIG_GRPC_XDS_SERVER_USE_TLS: "true", CONFIG_GRPC_XDS_CLIENT_TLS_CERT: "/c.pem" }, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY: is required: a client certificate needs both"],
  ])("names the variable of a bad value: %j", (env, message) => {
    expect(failure(env as Record<string, string>)).toContain(message);
  });
});
