import type { LogLevel } from "./env.js";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export type RlsLogger = Record<LogLevel, (message: string) => void>;

/**
 * The reference's log lines (logrus): LOG_LEVEL drops what is below it; LOG_FORMAT=text
 * writes `time="…" level=warn msg="…"`, json writes `{"@timestamp":"…","level":"warn","@message":"…"}`.
 * Lines go to stderr, as logrus writes them.
 */
export function createRlsLogger(level: LogLevel, format: "text" | "json", write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): RlsLogger {
  const at = (lineLevel: LogLevel) => (message: string) => {
    if (RANK[lineLevel] < RANK[level]) return;
    const time = new Date().toISOString();
    write(format === "json" ? JSON.stringify({ "@timestamp": time, level: lineLevel === "warn" ? "warning" : lineLevel, "@message": message }) : `time=${JSON.stringify(time)} level=${lineLevel === "warn" ? "warning" : lineLevel} msg=${JSON.stringify(message)}`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
