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
 * a relative path), and `events` is a non-empty set.
 */
export function parseNotify(raw: NotifyInput, field = "notify"): NotifyConfig {
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    throw new ValidationError(`${field}.url`, `must be an absolute http(s) URL, got ${describeValue(raw.url)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ValidationError(`${field}.url`, `must be an http(s) URL, got ${describeValue(raw.url)}`);
  }
  const events = raw.events ?? NOTICE_EVENTS;
  if (events.length === 0) throw new ValidationError(`${field}.events`, `${eventRule}; leave it out to send both`);
  if (new Set(events).size !== events.length) throw new ValidationError(`${field}.events`, `${eventRule}, got ${describeValue(events)}`);
  return { url: url.href, events };
}
