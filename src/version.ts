import { readFileSync } from 'node:fs';

/** The version of package.json: what `skyport --version`, the OpenAPI document and /healthz say. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
