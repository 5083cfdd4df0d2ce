import { describe, expect, it } from "vitest";
import { otelTraceSettings, rlsTraceSettings } from "../../../../src/node/tracing/settings.js";
import { thrownMessage } from "../../core/thrown-message.js";

const ON = { OTEL_TRACES_EXPORTER: "otlp" };

describe("spillway serve's tracing settings (the standard OTEL_* variables)", () => {
  it("is off unless OTEL_TRACES_EXPORTER=otlp says so, and OTEL_SDK_DISABLED=true turns it off", () => {
    expect(otelTraceSettings({})).toBeUndefined();
    expect(otelTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBeUndefined();
    expect(otelTraceSettings({ OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
    expect(otelTraceSettings({ ...ON, OTEL_SDK_DISABLED: "true" })).toBeUndefined();
  });

  it("sends to the collector on this host by default, in protobuf, sampling by the parent then always", () => {
    expect(otelTraceSettings(ON)).toEqual({ url: "http://localhost:4318/v1/traces", encoding: "protobuf", serviceName: "spillway", resource: {}, sampler: { ratio: 1, parentBased: true } });
  });

  it("adds the signal's path to OTEL_EXPORTER_OTLP_ENDPOINT, takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, and reads the protocol and service name", () => {
    expect(otelTraceSettings({ ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector:4318/base/" })!.url).toBe("https://collector:4318/base/v1/traces");
    const traces = otelTraceSettings({ ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/custom", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "edge" });
    expect([traces!.url, traces!.encoding, traces!.serviceName]).toEqual(["http://collector:4318/custom", "json", "edge"]);
    expect(otelTraceSettings({ ...ON, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })!.encoding).toBe("protobuf");
  });

  it.each([
    [{ OTEL_TRACES_SAMPLER: "always_off" }, { ratio: 0, parentBased: false }],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }, { ratio: 0.25, parentBased: false }],
    [{ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" }, { ratio: 0, parentBased: true }],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_off" }, { ratio: 0, parentBased: true }],
  ])("reads the sampler %j", (env, sampler) => {
    expect(otelTraceSettings({ ...ON, ...env })!.sampler).toEqual(sampler);
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, 'OTEL_TRACES_EXPORTER: must be otlp or none (Spillway exports traces over OTLP/HTTP only), got "zipkin"'],
    [{ ...ON, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, 'OTEL_EXPORTER_OTLP_PROTOCOL: OTLP over gRPC is not exported: use http/protobuf (the collector\'s port 4318), got "grpc"'],
    [{ ...ON, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "thrift" }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be http/protobuf or http/json, got "thrift"'],
    [{ ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL (OTLP over gRPC is not exported), got "collector:4318"'],
    [{ ...ON, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http:// or https:// URL"],
    [{ ...ON, OTEL_TRACES_SAMPLER: "xray" }, 'OTEL_TRACES_SAMPLER: must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "xray"'],
    [{ ...ON, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" }, 'OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 for traceidratio, got "1.5"'],
  ])("refuses %j naming the variable", (env, message) => {
    expect(thrownMessage(() => otelTraceSettings(env))).toContain(message);
  });
});

describe("spillway rls's tracing settings (the reference's TRACING_* variables)", () => {
  it("is off by default, as the reference's", () => {
    expect(rlsTraceSettings({})).toBeUndefined();
    expect(rlsTraceSettings({ TRACING_ENABLED: "false", TRACING_SERVICE_NAME: "x" })).toBeUndefined();
  });

  it("TRACING_ENABLED=true: the reference's service name, a random instance id, parent-based sampling at TRACING_SAMPLING_RATE, OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT", () => {
    const settings = rlsTraceSettings({ TRACING_ENABLED: "true", TRACING_SAMPLING_RATE: "0.5", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })!;
    expect([settings.url, settings.encoding, settings.serviceName, settings.sampler]).toEqual(["http://collector:4318/v1/traces", "protobuf", "RateLimit", { ratio: 0.5, parentBased: true }]);
    expect(settings.resource["service.instance.id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(rlsTraceSettings({ TRACING_ENABLED: "1" })!.resource["service.instance.id"]).not.toBe(settings.resource["service.instance.id"]);
  });

  it("names, namespace and instance as set; a rate past 1 or below 0 is always or never (the reference's rule)", () => {
    const settings = rlsTraceSettings({ TRACING_ENABLED: "True", TRACING_SERVICE_NAME: "rl", TRACING_SERVICE_NAMESPACE: "gw", TRACING_SERVICE_INSTANCE_ID: "pod-1", TRACING_SAMPLING_RATE: "2", OTEL_SERVICE_NAME: "not-this" })!;
    expect([settings.serviceName, settings.resource, settings.sampler.ratio]).toEqual(["rl", { "service.instance.id": "pod-1", "service.namespace": "gw" }, 1]);
    expect(rlsTraceSettings({ TRACING_ENABLED: "t", TRACING_SAMPLING_RATE: "-1" })!.sampler.ratio).toBe(0);
  });

  it("the standard variables turn it on too (service name RateLimit unless OTEL_SERVICE_NAME)", () => {
    expect(rlsTraceSettings({ ...ON, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).toMatchObject({ encoding: "json", serviceName: "RateLimit" });
    expect(rlsTraceSettings({ ...ON, OTEL_SERVICE_NAME: "rls" })!.serviceName).toBe("rls");
  });

  it.each([
    [{ TRACING_ENABLED: "yes" }, 'TRACING_ENABLED: must be true or false, got "yes"'],
    [{ TRACING_ENABLED: "true", TRACING_EXPORTER_PROTOCOL: "grpc" }, "TRACING_EXPORTER_PROTOCOL: OTLP over gRPC is not exported: set http and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (4318)"],
    [{ TRACING_ENABLED: "true", TRACING_EXPORTER_PROTOCOL: "udp" }, 'TRACING_EXPORTER_PROTOCOL: must be http or grpc, got "udp"'],
    [{ TRACING_ENABLED: "true", TRACING_SAMPLING_RATE: "half" }, 'TRACING_SAMPLING_RATE: must be a number from 0.0 to 1.0, got "half"'],
    [{ TRACING_ENABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://collector:4317" }, "OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL"],
  ])("refuses %j naming the variable", (env, message) => {
    expect(thrownMessage(() => rlsTraceSettings(env))).toContain(message);
  });
});
