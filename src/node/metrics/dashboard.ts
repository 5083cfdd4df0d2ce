import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dashboardPage } from "./dashboard-page.js";

let page: string | undefined;

/**
 * The dashboard's HTML, built on first use from the installed uPlot (a dependency, so this
 * works from the published package as from the repository) and then kept.
 */
export function dashboardHtml(): string {
  if (!page) {
    const require = createRequire(import.meta.url);
    const script = readFileSync(require.resolve("uplot/dist/uPlot.iife.min.js"), "utf8");
    const css = readFileSync(require.resolve("uplot/dist/uPlot.min.css"), "utf8");
    page = dashboardPage(script, css);
  }
  return page;
}
