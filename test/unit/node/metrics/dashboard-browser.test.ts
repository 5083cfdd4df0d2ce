import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Debian's chromium (`apt-get install chromium`; .ci/run installs it), driven by playwright-core.
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;
const TOKEN = "dashboard-token";

let serve: ChildProcess;
let url: string;
let browser: Browser;
let traffic: ReturnType<typeof setInterval>;

const check = (key: string) =>
  fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ key, policy: "per-user" }) });

async function startServe(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-dashboard-"));
  const configPath = join(dir, "spillway.config.json");
  await writeFile(configPath, JSON.stringify({ policies: [{ name: "per-user", algorithm: "gcra", limit: 5, period: "1s" }] }));
  serve = spawn(process.execPath, [BIN, "serve", "--config", configPath, "--store", "memory", "--port", "0"], { env: { ...process.env, SPILLWAY_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  serve.stdout!.on("data", (chunk) => (output += chunk));
  serve.stderr!.on("data", (chunk) => (output += chunk));
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearInterval(timer);
        resolve(match[1]!);
      } else if (serve.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`spillway serve exited: ${output}`));
      }
    }, 50);
  });
}

describe.skipIf(!HAS_CHROMIUM)(`the dashboard in a real browser (${HAS_CHROMIUM ? CHROMIUM : `skipped: no chromium at ${CHROMIUM}; apt-get install chromium`})`, { timeout: 60_000 }, () => {
  beforeAll(async () => {
    url = await startServe();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    // Traffic: distinct users pass; "mallory" sends above her 5 per second and is refused.
    let n = 0;
    traffic = setInterval(() => {
      n++;
      void check(`user-${n}`);
      for (let i = 0; i < 4; i++) void check("mallory");
    }, 50);
  }, 60_000);

  afterAll(async () => {
    clearInterval(traffic);
    await browser?.close();
    serve?.kill("SIGTERM");
  });

  it("loads with the token, charts allowed and denied per second, and lists the denied key, with no console errors", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${url}/dashboard`);
    await page.fill("#token", TOKEN);
    await page.click("#login button");

    await page.locator("#top-body td", { hasText: "mallory" }).first().waitFor({ timeout: 20_000 });
    // Wait for a few polls: rates need two snapshots, and the chart is drawn from the second.
    await page.waitForFunction(
      () => {
        const chart = (globalThis as unknown as { spillwayDashboard: { chart: { data: number[][] } | null } }).spillwayDashboard.chart;
        if (!chart) return false;
        const [, allowed, denied] = chart.data;
        return allowed!.some((value) => value > 0) && denied!.some((value) => value > 0);
      },
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.locator("#chart canvas").count()).toBeGreaterThan(0);
    expect(await page.locator(".u-legend").textContent()).toContain("per-user denied/s");
    expect(await page.locator("#store").textContent()).toBe("memory · up");
    expect(await page.locator("#p99").textContent()).not.toBe("–");
    // docs/dashboard.png: SPILLWAY_SCREENSHOT=docs/dashboard.png npx vitest run test/unit/node/metrics/dashboard-browser.test.ts
    if (process.env.SPILLWAY_SCREENSHOT) {
      await page.waitForTimeout(20_000);
      await page.screenshot({ path: process.env.SPILLWAY_SCREENSHOT, fullPage: true });
    }
    expect(errors).toEqual([]);
  });

  it("says so when the token is wrong", async () => {
    const page = await browser.newPage();
    await page.goto(`${url}/dashboard`);
    await page.fill("#token", "not-the-token");
    await page.click("#login button");
    await page.locator("#status", { hasText: "Wrong token" }).waitFor({ timeout: 10_000 });
  });
});
