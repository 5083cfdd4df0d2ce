import * as z from "zod/mini";
import { type Assert, type Same, ValidationError, describeValue } from "../core/validation.js";

/** What a webhook is told of (SPEC §2 "Notify"). */
export const NOTICE_EVENTS = ["warning", "exhausted"] as const;
export type NoticeEvent = (typeof NOTICE_EVENTS)[number];

/** The config's `notify`, parsed. */
export interface NotifyConfig {
  /** Where notices are POSTed as JSON. */
  url: string;
  /** The events sent (default both). */
  events: readonly NoticeEvent[];
  /** `Basic …` from the URL's `user:password@` (taken out of `url`, so no log line holds it). */
  authorization?: string;
}

const eventRule = `must be an array of ${NOTICE_EVENTS.map((event) => `"${event}"`).join(" and ")}, each at most once`;

/** The config's `notify` as written (before parseNotify's checks). */
export interface NotifyInput {
  url: string;
  events?: NoticeEvent[] | undefined;
}

/**
 * The shape of the config's `notify` (spillway.schema.json is generated from it).
 * @internal zod's types stay out of the published declarations (zod is bundled, not installed).
 */
export const notifySchema = z.strictObject(
  {
    url: z.string({ error: 'must be an http(s) URL like "https://billing.example.com/hooks/spillway"' }),
    events: z.optional(z.array(z.enum(NOTICE_EVENTS, { error: eventRule }), { error: eventRule })),
  },
  { error: 'must be an object like { "url": "https://billing.example.com/hooks/spillway" }' },
);
/** NotifyInput is the schema's output, field for field: tsc fails here when one changes alone. */
type NotifyInputMatches = Assert<Same<NotifyInput, z.output<typeof notifySchema>>>;

/**
 * Checks what the schema cannot: the URL is absolute http(s) (a notice never goes to a file or
 * a relative path), and `events` is a non-empty set. A URL's `user:password@` becomes an
 * `Authorization: Basic` header (fetch refuses a URL that holds credentials), and never shows
 * in an error or a log line.
 */
export function parseNotify(raw: NotifyInput, field = "notify"): NotifyConfig {
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    throw new ValidationError(`${field}.url`, `must be an absolute http(s) URL, got ${describeValue(redactUrl(raw.url))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ValidationError(`${field}.url`, `must be an http(s) URL, got ${describeValue(redactUrl(raw.url))}`);
  }
  const events = raw.events ?? NOTICE_EVENTS;
  if (events.length === 0) throw new ValidationError(`${field}.events`, `${eventRule}; leave it out to send both`);
  if (new Set(events).size !== events.length) throw new ValidationError(`${field}.events`, `${eventRule}, got ${describeValue(events)}`);
  if (url.username === "" && url.password === "") return { url: url.href, events };
  const authorization = `Basic ${base64(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`)}`;
  url.username = url.password = "";
  return { url: url.href, events, authorization };
}

/** `text` with any URL's `user:password@` masked: for error and log lines that may quote a URL. */
export function redactUrl(text: string): string {
  return text.replace(/(\/\/)[^/?#@\s]*@/g, "$1***@");
}

/** Base64 of UTF-8 (btoa alone takes Latin-1), on Node and workerd alike. */
function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
