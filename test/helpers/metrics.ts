import { raw } from './http.js';

/**
 * The value of one sample of a Prometheus text exposition: the first line of `name` whose labels
 * include every `key="value"` of `labels` (comma-separated); NaN when there is none.
 */
export const sample = (text: string, name: string, labels = ''): number =>
  Number(text.split('\n').find((l) => (labels ? l.startsWith(`${name}{`) && labels.split(',').every((p) => l.includes(p)) : l.startsWith(`${name} `)))?.split(' ').pop());

/** A node's GET /metrics (METRICS=open). */
export const scrape = async (url: string): Promise<string> => (await raw(`${url}/metrics`)).text;
