import { Ajv } from 'ajv';
import { defaultSchema } from './default-schema.js';

/**
 * What a product's configuration schema must be before it is stored
 * (docs/particle-compatibility.md#schema-keyword-restrictions): a draft-07 JSON Schema without
 * `pattern` or `patternProperties` and without remote `$ref`; `additionalProperties: false` at the
 * top; `deviceLevelOnly` a boolean on modules; `minimumFirmwareVersion`/`maximumFirmwareVersion`
 * integers; and every module and key of the default schema still there, because a custom schema
 * replaces the default whole (it is never merged).
 */

export interface Violation {
  /** JSON pointer into the schema. */
  path: string;
  message: string;
  params?: Record<string, unknown>;
}

/** Keywords of configuration schemas beyond draft-07. */
export const CONFIG_KEYWORDS = ['deviceLevelOnly', 'minimumFirmwareVersion', 'maximumFirmwareVersion'] as const;

const DRAFT_07 = ['http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-07/schema', 'https://particle.io/draft-07/schema#'];

/** An Ajv that knows the configuration keywords (values are checked here, not by Ajv). */
export function configAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  for (const k of CONFIG_KEYWORDS) ajv.addKeyword({ keyword: k, schemaType: ['boolean', 'number'] });
  return ajv;
}

const pointer = (parts: string[]) => (parts.length === 0 ? '' : `/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Walks every value of a JSON document with its path. */
function walk(value: unknown, path: string[], visit: (v: unknown, path: string[], key: string | undefined) => void, key?: string): void {
  visit(value, path, key);
  if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, String(i)], visit));
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) walk(v, [...path, k], visit, k);
}

/** The paths of every module and key of a schema: `[module]`, `[module, key]`, `[module, zone1, lat]`... */
function keyPaths(schema: Record<string, unknown>, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  const props = schema.properties;
  if (!isObject(props)) return out;
  for (const [name, sub] of Object.entries(props)) {
    out.push([...prefix, name]);
    if (isObject(sub)) out.push(...keyPaths(sub, [...prefix, name]));
  }
  return out;
}

function at(schema: Record<string, unknown>, names: string[]): unknown {
  let node: unknown = schema;
  for (const n of names) {
    if (!isObject(node) || !isObject(node.properties)) return undefined;
    node = node.properties[n];
  }
  return node;
}

export function checkSchema(candidate: unknown, ajv: Ajv = configAjv(), base: Record<string, unknown> = defaultSchema()): Violation[] {
  if (!isObject(candidate)) return [{ path: '', message: 'A schema is a JSON object' }];
  const violations: Violation[] = [];

  if (candidate.$schema !== undefined && !DRAFT_07.includes(String(candidate.$schema))) {
    violations.push({ path: '/$schema', message: 'The schema must be JSON Schema draft-07 ($schema http://json-schema.org/draft-07/schema#, or none)', params: { $schema: candidate.$schema } });
  }

  walk(candidate, [], (v, path, key) => {
    if (key === 'pattern' || key === 'patternProperties') violations.push({ path: pointer(path), message: `${key} is not allowed in configuration schemas` });
    if (key === '$ref' && (typeof v !== 'string' || !v.startsWith('#'))) violations.push({ path: pointer(path), message: 'Only local references (#/...) are allowed; remote schemas are not', params: { $ref: v } });
    if ((key === 'minimumFirmwareVersion' || key === 'maximumFirmwareVersion') && !(Number.isInteger(v) && (v as number) >= 0)) {
      violations.push({ path: pointer(path), message: `${key} must be a whole number (a firmware version)` });
    }
    if (key === 'deviceLevelOnly' && path.length !== 3) violations.push({ path: pointer(path), message: 'deviceLevelOnly belongs on a module (a property of the top level)' });
  });

  if (candidate.type !== 'object') violations.push({ path: '/type', message: 'The top level must be of type object' });
  if (candidate.additionalProperties !== false) violations.push({ path: '/additionalProperties', message: 'additionalProperties must be false at the top level' });
  if (!isObject(candidate.properties)) {
    violations.push({ path: '/properties', message: 'The top level must list its modules under properties' });
  } else {
    for (const [name, module] of Object.entries(candidate.properties)) {
      if (!isObject(module) || module.type !== 'object') {
        violations.push({ path: pointer(['properties', name]), message: `Module ${name} must be an object schema (type object)` });
        continue;
      }
      if (module.deviceLevelOnly !== undefined && typeof module.deviceLevelOnly !== 'boolean') {
        violations.push({ path: pointer(['properties', name, 'deviceLevelOnly']), message: 'deviceLevelOnly must be true or false' });
      }
    }
  }

  // A custom schema contains the default plus additions
  // (docs/particle-compatibility.md#custom-schemas).
  const missing = keyPaths(base).filter((p) => at(candidate, p) === undefined);
  for (const p of missing) {
    violations.push({ path: pointer(p.flatMap((n) => ['properties', n])), message: `${p.join('.')} of the default schema is missing`, params: { missing: p.join('.') } });
  }

  // Last, as JSON Schema: the meta-schema, then compiling (which resolves local references).
  const { $schema: _ignored, ...body } = candidate;
  if (!ajv.validateSchema(body)) {
    for (const e of ajv.errors ?? []) violations.push({ path: e.instancePath, message: `Not valid JSON Schema: ${e.message ?? 'invalid'}`, params: e.params as Record<string, unknown> });
  } else if (violations.length === 0) {
    try {
      ajv.compile({ ...body, $id: undefined });
    } catch (err) {
      violations.push({ path: '', message: `The schema does not compile: ${(err as Error).message.slice(0, 200)}` });
    }
  }
  return violations;
}
