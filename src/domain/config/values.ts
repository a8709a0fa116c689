import type { Ajv } from 'ajv';
import type { Violation } from './schema-rules.js';

/**
 * Configuration values against a schema (docs/particle-compatibility.md#product-configuration):
 * defaults, validation of fleet and device writes, the effective configuration of a device with
 * the source of each module, and the size of what one device message carries. Pure functions:
 * storage and delivery are elsewhere.
 */

type Json = Record<string, unknown>;
export type Values = Record<string, Json>;
export type Source = 'default' | 'fleet' | 'device';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function modules(schema: Json): Array<[string, Json]> {
  return isObject(schema.properties) ? Object.entries(schema.properties).filter((e): e is [string, Json] => isObject(e[1])) : [];
}

export const isDeviceLevelOnly = (schema: Json, module: string): boolean => {
  const m = isObject(schema.properties) ? schema.properties[module] : undefined;
  return isObject(m) && m.deviceLevelOnly === true;
};

/** The defaults of one object schema: each property's `default`, objects filled recursively. */
function defaultsOf(node: Json): Json {
  const out: Json = {};
  if (!isObject(node.properties)) return out;
  for (const [key, sub] of Object.entries(node.properties)) {
    if (!isObject(sub)) continue;
    if (sub.type === 'object') out[key] = { ...(isObject(sub.default) ? sub.default : {}), ...defaultsOf(sub) };
    else if ('default' in sub) out[key] = sub.default;
  }
  return out;
}

/** Every module's defaults; device-level-only modules only when asked (the fleet never shows them). */
export function schemaDefaults(schema: Json, options: { deviceLevelOnly: boolean }): Values {
  const out: Values = {};
  for (const [name, m] of modules(schema)) if (options.deviceLevelOnly || m.deviceLevelOnly !== true) out[name] = defaultsOf(m);
  return out;
}

export type WriteScope = { kind: 'fleet' } | { kind: 'device'; development: boolean };

/**
 * Checks a whole-object write (nothing merges): JSON Schema validation of each module, with a
 * JSON pointer to each bad value, then the scope rules: the fleet never carries device-level-only
 * modules; a regular device carries only device-level-only modules; a development device any.
 */
export function validateValues(schema: Json, values: unknown, scope: WriteScope, ajv: Ajv): Violation[] {
  if (!isObject(values)) return [{ path: '', message: 'Configuration values are a JSON object of modules' }];
  const violations: Violation[] = [];
  const known = new Map(modules(schema));
  for (const [name, value] of Object.entries(values)) {
    const path = `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    const module = known.get(name);
    if (!module) {
      violations.push({ path, message: `Unknown module "${name}"; the schema has ${[...known.keys()].join(', ')}` });
      continue;
    }
    if (scope.kind === 'fleet' && module.deviceLevelOnly === true) {
      violations.push({ path, message: `Module "${name}" is device-level only: set it per device, not for the fleet` });
      continue;
    }
    if (scope.kind === 'device' && !scope.development && module.deviceLevelOnly !== true) {
      violations.push({ path, message: `Module "${name}" is set for the fleet; a regular device takes only device-level-only modules (make it a development device to set any module)` });
      continue;
    }
    const strict = strictModule(module);
    if (!ajv.validate(strict, value)) {
      for (const e of ajv.errors ?? []) {
        const extra = e.keyword === 'additionalProperties' ? `/${String((e.params as { additionalProperty: string }).additionalProperty)}` : '';
        violations.push({ path: `${path}${e.instancePath}${extra}`, message: e.keyword === 'additionalProperties' ? 'Unknown setting' : (e.message ?? 'is invalid'), params: e.params as Record<string, unknown> });
      }
    }
  }
  return violations;
}

/**
 * The module's schema as values are checked against it: without its `$id`, and closed (unknown
 * keys inside a module are refused too: a typo must not pass as a setting). Remembered per module
 * object, because Ajv caches what it compiled by schema object: a new object per write would be
 * compiled again, and kept, every time.
 */
const strictModules = new WeakMap<Json, Json>();
function strictModule(module: Json): Json {
  let strict = strictModules.get(module);
  if (!strict) {
    const { $id: _id, ...moduleSchema } = module;
    strictModules.set(module, (strict = closeObjects(moduleSchema)));
  }
  return strict;
}

/** The schema with `additionalProperties: false` on every object that lists its properties. */
function closeObjects(node: Json): Json {
  const out: Json = { ...node };
  if (isObject(node.properties)) {
    out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, isObject(v) ? closeObjects(v) : v]));
    if (out.additionalProperties === undefined) out.additionalProperties = false;
  }
  return out;
}

export interface EffectiveInput {
  schema: Json;
  fleet: Values;
  device: Values;
  /**
   * Whether the device's own values of fleet modules win: while it is a development device, and
   * after it returns to regular mode until the next fleet change
   * (docs/particle-compatibility.md#effective-configuration).
   */
  deviceValuesWin: boolean;
  /**
   * The device's product firmware version, when it reported one
   * (docs/particle-compatibility.md#firmware-ranges).
   */
  firmwareVersion?: number | null;
}

/** A module or setting the device's firmware is outside of, with the range it needs. */
export interface OutOfRange { path: string; minimumFirmwareVersion?: number; maximumFirmwareVersion?: number }

/**
 * Whether firmware `version` is inside the node's `minimumFirmwareVersion`..`maximumFirmwareVersion`.
 * A device that never reported a version is not placed outside any range.
 */
function firmwareRange(node: Json, version: number | null | undefined): OutOfRange | null {
  if (version === null || version === undefined) return null;
  const min = typeof node.minimumFirmwareVersion === 'number' ? node.minimumFirmwareVersion : undefined;
  const max = typeof node.maximumFirmwareVersion === 'number' ? node.maximumFirmwareVersion : undefined;
  if ((min === undefined || version >= min) && (max === undefined || version <= max)) return null;
  return { path: '', ...(min !== undefined ? { minimumFirmwareVersion: min } : {}), ...(max !== undefined ? { maximumFirmwareVersion: max } : {}) };
}

/** `value` without the settings whose schema puts them outside the firmware's range, noted in `out`. */
function withinFirmware(node: Json, value: Json, version: number | null | undefined, path: string, out: OutOfRange[]): Json {
  if (!isObject(node.properties)) return value;
  const kept: Json = {};
  for (const [key, v] of Object.entries(value)) {
    const sub = node.properties[key];
    const keyPath = `${path}/${key}`;
    const outside = isObject(sub) ? firmwareRange(sub, version) : null;
    if (outside) { out.push({ ...outside, path: keyPath }); continue; }
    kept[key] = isObject(sub) && isObject(v) ? withinFirmware(sub, v, version, keyPath, out) : v;
  }
  return kept;
}

/**
 * The effective configuration of a device, module by module: the device's own module where it
 * applies (device-level-only modules always; others while `deviceValuesWin`), else the fleet's
 * (never device-level-only), else the schema's defaults. A chosen module object is whole; keys
 * it leaves out take their defaults. Modules and settings outside the device's firmware range
 * are left out, and listed in `outsideFirmware`.
 */
export function effectiveConfig(input: EffectiveInput): { values: Values; sources: Record<string, Source>; outsideFirmware: OutOfRange[] } {
  const values: Values = {};
  const sources: Record<string, Source> = {};
  const outsideFirmware: OutOfRange[] = [];
  for (const [name, m] of modules(input.schema)) {
    const outside = firmwareRange(m, input.firmwareVersion);
    if (outside) { outsideFirmware.push({ ...outside, path: `/${name}` }); continue; }
    const dlo = m.deviceLevelOnly === true;
    const defaults = defaultsOf(m);
    const own = input.device[name];
    const fleet = input.fleet[name];
    if (own && (dlo || input.deviceValuesWin)) {
      values[name] = fill(defaults, own);
      sources[name] = 'device';
    } else if (fleet && !dlo) {
      values[name] = fill(defaults, fleet);
      sources[name] = 'fleet';
    } else {
      values[name] = defaults;
      sources[name] = 'default';
    }
    values[name] = withinFirmware(m, values[name] as Json, input.firmwareVersion, `/${name}`, outsideFirmware);
  }
  return { values, sources, outsideFirmware };
}

/** `value` with what it leaves out taken from `defaults`, at every depth (a zone's keys too). */
function fill(defaults: Json, value: Json): Json {
  const out: Json = { ...defaults, ...value };
  for (const [k, d] of Object.entries(defaults)) if (isObject(d) && isObject(value[k])) out[k] = fill(d, value[k]);
  return out;
}

/** Bytes of the message that carries one module to a device: `{"<module>":{...}}` in UTF-8. */
export function moduleMessageBytes(module: string, value: Json): number {
  return Buffer.byteLength(JSON.stringify({ [module]: value }));
}

/** Modules of a write that could not reach a device with this publish limit, with their sizes. */
export function oversizedModules(values: Values, limit: number): Array<{ module: string; bytes: number; limit: number }> {
  return Object.entries(values).map(([module, v]) => ({ module, bytes: moduleMessageBytes(module, v), limit })).filter((m) => m.bytes > limit);
}
