import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { parseRlsConfig } from "../../../src/rls/config.js";
import { parseRlsText } from "../../../src/rls/files.js";
import { matchDescriptor } from "../../../src/rls/match.js";

const DOC = readFileSync(new URL("../../../docs/envoy.md", import.meta.url), "utf8");
/** Fenced yaml blocks with the comment line above them. */
const blocks = [...DOC.matchAll(/<!-- snippet: skip \(([^)]*)\) -->\n```yaml\n([\s\S]*?)```/g)].map(([, reason, text]) => ({ reason: reason!, text: text! }));

describe("docs/envoy.md", () => {
  it("its rate limit service config is one spillway check accepts, and matches what its Envoy routes send", () => {
    const configs = blocks.filter((block) => block.reason.includes("test/unit/rls/docs.test.ts"));
    expect(configs).toHaveLength(1);
    const domain = parseRlsConfig([parseRlsText("envoy.md.yaml", configs[0]!.text)]).domains.get("edge")!;
    expect(matchDescriptor(domain, [["remote_address", "198.51.100.1"]])?.rule.kind).toBe("limit");
    expect(matchDescriptor(domain, [["remote_address", "203.0.113.7"]])?.rule.kind).toBe("block");
    expect(matchDescriptor(domain, [["generic_key", "api"], ["api_key", "k-123"]])?.rule).toMatchObject({ kind: "limit", policies: [{ requestsPerUnit: 600 }, { requestsPerUnit: 100000 }] });
    expect(matchDescriptor(domain, [["generic_key", "api"], ["tenant", "trial-7"]])?.node.shadowMode).toBe(true);
  });

  it("its Envoy, Istio and Contour blocks are well-formed YAML, and the bootstrap names the cluster and domain it describes", () => {
    for (const block of blocks) for (const document of parseAllDocuments(block.text)) expect(document.errors, block.text.slice(0, 60)).toEqual([]);
    const bootstrap = blocks.find((block) => block.text.startsWith("static_resources"))!.text;
    expect(bootstrap).toContain("cluster_name: rate_limit_service");
    expect(bootstrap).toContain("domain: edge");
    expect(bootstrap).toContain("http2_protocol_options");
  });
});
