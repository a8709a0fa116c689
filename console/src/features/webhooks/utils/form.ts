import type { Webhook, WebhookFields } from '../api/webhooks.js';

/**
 * The webhook form's state and the fields it sends (docs/webhooks.md, "Fields"). The form holds
 * texts; this turns them into Particle's fields and back, so that the page stays plain.
 */
export const REQUEST_TYPES = ['POST', 'GET', 'PUT', 'DELETE'] as const;
export type RequestType = (typeof REQUEST_TYPES)[number];
export type BodyKind = 'default' | 'json' | 'form' | 'body';

export interface Pair { name: string; value: string }

export interface FormState {
  name: string;
  event: string;
  url: string;
  requestType: RequestType;
  bodyKind: BodyKind;
  json: string;
  form: Pair[];
  body: string;
  query: Pair[];
  headers: Pair[];
  username: string;
  /** Blank on an edit that keeps the user name: the stored password stays (it is never shown). */
  password: string;
  deviceID: string;
  noDefaults: boolean;
  rejectUnauthorized: boolean;
  responseTemplate: string;
  responseTopic: string;
  errorResponseTopic: string;
}

/** A problem the form finds before asking the API, in words. */
export class FormProblem extends Error {}

const pairs = (m: Record<string, string> | undefined): Pair[] => Object.entries(m ?? {}).map(([name, value]) => ({ name, value }));

/** The form of a new webhook, or of one being edited. */
export function stateOf(w?: Webhook): FormState {
  const json = w?.json;
  return {
    name: w?.name ?? '',
    event: w?.event ?? '',
    url: w?.url ?? '',
    requestType: (REQUEST_TYPES as readonly string[]).includes(w?.requestType ?? '') ? w?.requestType as RequestType : 'POST',
    bodyKind: json !== undefined ? 'json' : w?.form ? 'form' : w?.body !== undefined ? 'body' : 'default',
    json: json === undefined ? '' : typeof json === 'string' ? json : JSON.stringify(json, null, 2),
    form: pairs(w?.form),
    body: w?.body ?? '',
    query: pairs(w?.query),
    headers: pairs(w?.headers),
    username: w?.auth?.username ?? '',
    password: '',
    deviceID: w?.deviceID ?? '',
    noDefaults: w?.noDefaults ?? false,
    rejectUnauthorized: w?.rejectUnauthorized ?? true,
    responseTemplate: w?.responseTemplate ?? '',
    responseTopic: w?.responseTopic ?? '',
    errorResponseTopic: w?.errorResponseTopic ?? '',
  };
}

function mapOf(rows: Pair[], what: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  rows.forEach((r, i) => {
    const name = r.name.trim();
    if (name === '' && r.value === '') return;
    if (name === '') throw new FormProblem(`${what} ${i + 1} has a value but no name.`);
    out[name] = r.value;
  });
  return Object.keys(out).length === 0 ? null : out;
}

/**
 * A JSON template: an object or array whose texts are templates, sent as JSON; anything else is
 * one template that renders to JSON (numbers left unquoted: `{"temp": {{temp}}}`), sent as text.
 */
function jsonTemplate(text: string): unknown {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) return parsed;
  } catch {
    // Not JSON as it stands: a template that renders to JSON.
  }
  return text;
}

/**
 * The fields a create or an edit sends: every field, a blank one as null, so that an edit clears
 * what was emptied (PUT keeps the fields it is not given). `keptUser`: on an edit, the stored
 * auth user name, whose password a blank password field keeps.
 */
export function fieldsOf(s: FormState, options: { forUser: boolean; keptUser: string | null }): WebhookFields {
  const text = (v: string) => (v.trim() === '' ? null : v);
  const username = s.username.trim();
  let auth: WebhookFields['auth'] = null;
  if (username !== '') {
    auth = s.password === '' && options.keptUser === username ? { username } : { username, password: s.password };
  } else if (s.password !== '') {
    throw new FormProblem('Give the user name of the password (HTTP Basic), or leave both empty.');
  }
  if (s.bodyKind === 'json' && s.json.trim() === '') throw new FormProblem('Write the JSON template, or choose another body.');
  return {
    name: text(s.name),
    event: s.event.trim(),
    url: s.url.trim(),
    requestType: s.requestType,
    json: s.bodyKind === 'json' ? jsonTemplate(s.json) : null,
    form: s.bodyKind === 'form' ? mapOf(s.form, 'Form field') ?? {} : null,
    body: s.bodyKind === 'body' ? s.body : null,
    query: mapOf(s.query, 'Query parameter'),
    headers: mapOf(s.headers, 'Header'),
    auth,
    ...(options.forUser ? { deviceID: text(s.deviceID.trim()) } : {}),
    noDefaults: s.noDefaults,
    rejectUnauthorized: s.rejectUnauthorized,
    responseTemplate: text(s.responseTemplate),
    responseTopic: text(s.responseTopic),
    errorResponseTopic: text(s.errorResponseTopic),
  };
}

/** A `datetime-local` input's value for a time, in the browser's zone. */
export function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
