import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

/**
 * An OTLP/HTTP traces receiver, as a collector's port 4318 is: POST /v1/traces with an
 * ExportTraceServiceRequest in protobuf (decoded with the published opentelemetry-proto files,
 * test/unit/fixtures/otlp/) or in OTLP/JSON. Every span it receives is kept, flattened.
 */
export interface ReceivedSpan {
  name: string;
  /** Hex, as a traceparent spells them. */
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** 1 internal, 2 server, 3 client (SpanKind). */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** What it came in: protobuf or json. */
  encoding: "protobuf" | "json";
}

const PROTO_ROOT = fileURLToPath(new URL("../../fixtures/otlp/", import.meta.url));

function exportRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => `${PROTO_ROOT}${target}`;
  root.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto", { keepCase: false });
  return root.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value?: AnyValue };

const valueOf = (value: AnyValue | undefined): string | number | boolean => {
  if (!value) return "";
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return JSON.stringify(value);
};
const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/** protobufjs's object (ids as base64 strings) or OTLP/JSON's (ids as hex): one flat span each. */
function flatten(request: { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] }, encoding: "protobuf" | "json"): ReceivedSpan[] {
  const hex = (id: unknown) => (typeof id !== "string" || id === "" ? "" : encoding === "json" ? id.toLowerCase() : Buffer.from(id, "base64").toString("hex"));
  return (request.resourceSpans ?? []).flatMap((resourceSpans) =>
    (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        name: span.name as string,
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        kind: Number(span.kind ?? 0),
        attributes: attributesOf(span.attributes as KeyValue[]),
        resource: attributesOf(resourceSpans.resource?.attributes),
        statusCode: Number((span.status as { code?: number } | undefined)?.code ?? 0),
        encoding,
      })),
    ),
  );
}

export interface OtlpReceiver {
  /** The base, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests that were not OTLP (wrong path, type or bytes): a test expects none. */
  refused: string[];
  /** Resolves once `match` holds of the spans received (or rejects after `timeoutMs`). */
  waitFor(match: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const type = exportRequestType();
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const contentType = req.headers["content-type"] ?? "";
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`${req.method} ${req.url}`);
        if (contentType.startsWith("application/x-protobuf")) {
          const decoded = type.toObject(type.decode(body), { longs: String, enums: Number, bytes: String, defaults: false });
          spans.push(...flatten(decoded, "protobuf"));
          res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
        } else if (contentType.startsWith("application/json")) {
          spans.push(...flatten(JSON.parse(body.toString("utf8")), "json"));
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
        } else throw new Error(`content-type ${contentType}`);
      } catch (error) {
        refused.push((error as Error).message);
        res.writeHead(400).end();
      }
      for (const waiter of waiters) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    refused,
    waitFor(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!match(spans)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(spans);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching spans in ${timeoutMs} ms; received: ${JSON.stringify(spans.map((span) => span.name))}; refused: ${JSON.stringify(refused)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
