import { mkdir, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { d, unique } from "../unit/node/grpc/rls-helpers.js";
import { LIMITS, type Started, refusal, runtimeRoot, startRls, waitFor } from "./rls-env-helpers.js";

const TEN = "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n";

/** Where `spillway rls` finds its files, and when it reads them again. */
describe("spillway rls: the runtime directory", () => {
  let redis: RedisServer;
  const started: Started[] = [];
  const start = async (env: Record<string, string>) => {
    const one = await startRls({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, ...env });
    started.push(one);
    return one;
  };
  const limitOf = async (one: Started) => (await one.client.ask("app", [d(["user", unique("u")])])).statuses[0]!.current_limit?.requests_per_unit;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const one of started) await one.stop();
    await redis?.stop();
  });

  it("RUNTIME_ROOT and RUNTIME_SUBDIRECTORY: the files under ROOT/SUBDIRECTORY/config, in subdirectories too, whatever their names end in", async () => {
    const { root } = await runtimeRoot({ "limits.yaml": LIMITS, "nested/other.conf": "domain: other\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 7 }\n" }, { subdirectory: "rl" });
    const one = await start({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "rl" });
    expect(await limitOf(one)).toBe(3);
    expect((await one.client.ask("other", [d(["k", "v"])])).statuses[0]!.current_limit?.requests_per_unit).toBe(7);
    expect(await refusal({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "elsewhere" })).toContain(`RUNTIME_ROOT: cannot read the config directory ${join(root, "elsewhere", "config")}`);
  });

  it("RUNTIME_APPDIRECTORY: the config directory's name", async () => {
    const { root } = await runtimeRoot({ "limits.yaml": TEN }, { subdirectory: "rl", appDirectory: "limits" });
    expect(await limitOf(await start({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "rl", RUNTIME_APPDIRECTORY: "limits" }))).toBe(10);
  });

  it("RUNTIME_IGNOREDOTFILES: dot files are read unless it is true", async () => {
    const { root } = await runtimeRoot({ ".hidden.yaml": LIMITS });
    const env = { RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit" };
    expect(await limitOf(await start(env))).toBe(3);
    expect(await limitOf(await start({ ...env, RUNTIME_IGNOREDOTFILES: "true" }))).toBeUndefined();
  });

  it("RUNTIME_WATCH_ROOT (default true): a swap of the RUNTIME_ROOT symlink reloads; an edit in place does not", async () => {
    const first = await runtimeRoot({ "limits.yaml": LIMITS });
    const second = await runtimeRoot({ "limits.yaml": TEN });
    const link = join(first.root, "..", `${unique("current")}`);
    await symlink(first.root, link);
    const one = await start({ RUNTIME_ROOT: link, RUNTIME_SUBDIRECTORY: "ratelimit" });
    expect(await limitOf(one)).toBe(3);
    await writeFile(join(first.dir, "limits.yaml"), TEN.replace("10", "5"));
    await new Promise((resolve) => setTimeout(resolve, 300)); // six polls: nothing happens
    expect(await limitOf(one)).toBe(3);
    // The way a deployment publishes: a new symlink renamed over the old one.
    await symlink(second.root, `${link}.next`);
    await rename(`${link}.next`, link);
    expect(await waitFor(() => limitOf(one), (limit) => limit === 10)).toBe(10);
  });

  it("RUNTIME_WATCH_ROOT=false: a change to a file of the config directory reloads; a bad file keeps the config in force", async () => {
    const { root, dir } = await runtimeRoot({ "limits.yaml": LIMITS });
    const one = await start({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit", RUNTIME_WATCH_ROOT: "false" });
    await writeFile(join(dir, "limits.yaml"), TEN);
    expect(await waitFor(() => limitOf(one), (limit) => limit === 10)).toBe(10);
    await mkdir(join(dir, "more"));
    await writeFile(join(dir, "more", "broken.yaml"), "domain: broken\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n");
    await waitFor(async () => one.lines.join("\n"), (text) => text.includes("reload refused"));
    expect(one.lines.find((line) => line.includes("reload refused"))).toContain("more/broken.yaml: descriptors.0.rate_limit.unit");
    expect(await limitOf(one)).toBe(10);
  });

  it("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: with no domain, health is NOT_SERVING (HTTP 500) only when it is set", async () => {
    const { root } = await runtimeRoot({});
    const env = { RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit" };
    const lenient = await start(env);
    expect((await fetch(`${lenient.running.httpUrl}/healthcheck`)).status).toBe(200);
    expect(await lenient.client.health()).toEqual({ status: "SERVING" });
    const strict = await start({ ...env, HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: "true" });
    expect((await fetch(`${strict.running.httpUrl}/healthcheck`)).status).toBe(500);
    expect(await strict.client.health()).toEqual({ status: "NOT_SERVING" });
  });
});
