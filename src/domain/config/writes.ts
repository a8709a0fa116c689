import type { Ajv } from 'ajv';
import { DomainError } from '../errors.js';
import { checkSchema, type Violation } from './schema-rules.js';
import { oversizedModules, validateValues, type Values, type WriteScope } from './values.js';

type Json = Record<string, unknown>;

const rules = (n: number) => `${n} rule${n === 1 ? '' : 's'}`;

/** A refused values write: 400 `invalid_configuration` with a JSON pointer to each bad value. */
export function invalidConfiguration(violations: Violation[]): DomainError {
  return new DomainError('invalid_configuration', `The configuration breaks ${rules(violations.length)}; nothing was changed`, { details: { message: 'Invalid configuration', violations } });
}

/** A refused schema: 422 `invalid_schema` (docs/api.md, "Schemas"). */
export function invalidSchema(description: string, violations: Violation[]): DomainError {
  return new DomainError('invalid_schema', description, { details: { message: 'Invalid Schema', description, violations } });
}

/**
 * The values a write carries, checked against the schema in force: whole objects, nothing merges;
 * no body, or `{}`, resets to inheritance (no values of the scope's own). Each module must also
 * fit one device message within `publishLimit` bytes. Throws `invalid_configuration`.
 */
export function valuesOfWrite(schema: Json, body: unknown, scope: WriteScope, publishLimit: number, ajv: Ajv): Values {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalidConfiguration([{ path: '', message: 'Configuration values are a JSON object of modules' }]);
  const values = body as Values;
  const violations = validateValues(schema, values, scope, ajv);
  for (const o of oversizedModules(values, publishLimit)) {
    violations.push({ path: `/${o.module}`, message: `Module ${o.module} is ${o.bytes} bytes in one device message; the limit is ${o.limit}`, params: { bytes: o.bytes, limit: o.limit } });
  }
  if (violations.length > 0) throw invalidConfiguration(violations);
  return values;
}

/** A schema body, parsed and checked against the rules of docs/api.md ("Schemas"). Throws `invalid_schema`. */
export function schemaOfWrite(body: string, ajv: Ajv): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw invalidSchema('The body is not JSON', [{ path: '', message: 'The body is not valid JSON' }]);
  }
  const violations = checkSchema(parsed, ajv);
  if (violations.length > 0) throw invalidSchema(`The schema breaks ${rules(violations.length)}; nothing was changed`, violations);
  return parsed as Json;
}

/** The module names of a schema, in its order. */
export const moduleNames = (schema: Json): string[] => Object.keys((schema.properties ?? {}) as Json);

/** Only the modules the schema in force has: values of modules it no longer has are kept aside. */
export function inSchema(schema: Json, values: Values): Values {
  const props = (schema.properties ?? {}) as Json;
  return Object.fromEntries(Object.entries(values).filter(([m]) => m in props));
}

/**
 * Stored modules that `schema` does not have: their values are kept aside, not destroyed, and
 * come back if a later schema has the module again.
 */
export function outsideSchema(schema: Json, storedModules: string[]): string[] {
  const props = (schema.properties ?? {}) as Json;
  return storedModules.filter((m) => !(m in props));
}
