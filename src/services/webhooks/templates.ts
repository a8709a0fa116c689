import Mustache from 'mustache';

/**
 * Templates of a webhook's URL, query, headers, body and response (docs/webhooks.md,
 * "Templates"): Mustache, with Particle's variables and, when the event's data is a JSON object,
 * its keys. `{{x}}` escapes HTML as Mustache does; `{{{x}}}` inserts the value as it is.
 */
export interface EventContext {
  /** The delivery's stable id (PARTICLE_EVENT_ID). */
  id: string;
  name: string;
  data: string | null;
  coreid: string;
  published_at: string;
  productId: number | null;
  /** The product firmware version the device reported, when it is a product's. */
  firmwareVersion: number | null;
  /** The device's owner (a customer's e-mail or a user's name), when it has one. */
  ownerName: string | null;
}

/** The variables a template sees. Particle's own names win over keys of the data. */
export function templateVariables(e: EventContext): Record<string, unknown> {
  const fromData = jsonObject(e.data);
  const own: Record<string, unknown> = {
    PARTICLE_DEVICE_ID: e.coreid,
    PARTICLE_EVENT_NAME: e.name,
    PARTICLE_EVENT_VALUE: e.data ?? '',
    PARTICLE_PUBLISHED_AT: e.published_at,
    PARTICLE_EVENT_ID: e.id,
    PRODUCT_ID: e.productId ?? '',
    PRODUCT_VERSION: e.firmwareVersion ?? '',
    PRODUCT_USER_ID: e.ownerName ?? '',
  };
  // The names of Particle's first cloud, still in older templates.
  own.SPARK_CORE_ID = own.PARTICLE_DEVICE_ID;
  own.SPARK_EVENT_NAME = own.PARTICLE_EVENT_NAME;
  own.SPARK_EVENT_VALUE = own.PARTICLE_EVENT_VALUE;
  own.SPARK_PUBLISHED_AT = own.PARTICLE_PUBLISHED_AT;
  return { ...fromData, ...own };
}

function jsonObject(data: string | null): Record<string, unknown> {
  if (data === null || !data.trimStart().startsWith('{')) return {};
  try {
    const parsed = JSON.parse(data) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : {};
  } catch {
    return {};
  }
}

/** Renders one template; a template Mustache cannot parse is an error for the caller to report. */
export function render(template: string, vars: Record<string, unknown>): string {
  return Mustache.render(template, vars);
}

/**
 * Renders the templates of one event, with its variables built once, and only when a text has a
 * tag: most webhooks (Particle's default form, a fixed response topic) then send and answer
 * without the event's data parsed as JSON (docs/benchmarks.md, "Webhooks"). A text with no
 * `{{` is what Mustache would render it as: itself.
 */
export function templateRenderer(e: EventContext): (template: string, extra?: Record<string, unknown>) => string {
  let vars: Record<string, unknown> | undefined;
  return (template, extra) => {
    if (!template.includes('{{')) return template;
    vars ??= templateVariables(e);
    return render(template, extra ? { ...vars, ...extra } : vars);
  };
}

/** Checks a template parses (at create time), with Mustache's reason when it does not. */
export function templateProblem(template: string): string | null {
  try {
    Mustache.parse(template);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Renders every text of a JSON value (an object's values and an array's items, at any depth). */
export function renderDeep(value: unknown, renderText: (template: string) => string): unknown {
  if (typeof value === 'string') return renderText(value);
  if (Array.isArray(value)) return value.map((v) => renderDeep(v, renderText));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderDeep(v, renderText)]));
  }
  return value;
}

/** Every template text of a JSON value, to check them all. */
export function templatesIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(templatesIn);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(templatesIn);
  return [];
}
