import type { ErrorSchema, RJSFSchema, UiSchema } from '@rjsf/utils';
import { pointerKeys, type Violation } from './config-paths.js';
import { InterpretingValidator } from '../../../lib/schema-validator.js';
import type { ApiAnswer } from '../../../lib/api-client.js';

export { violationsOf, type Violation } from './config-paths.js';

// Values are checked in the page as the API checks them, without generated code (schema-validator.ts).
// The schemas' keywords of their own (deviceLevelOnly, firmware ranges) are not errors there.
export const validator = new InterpretingValidator();

/** A configuration schema as the API gives it (docs/configuration, Particle's tracker schema). */
export type ConfigSchema = RJSFSchema & { properties?: Record<string, RJSFSchema & { deviceLevelOnly?: boolean }> };

/** The schema with only the modules `keep` keeps (and only those required). */
function only(schema: ConfigSchema, keep: (module: RJSFSchema & { deviceLevelOnly?: boolean }) => boolean): ConfigSchema {
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([, m]) => keep(m)));
  const required = schema.required?.filter((k) => k in properties);
  return { ...schema, properties, ...(required ? { required } : {}) };
}

/** The fleet's form: every module of the schema, in its order, but the device-level-only ones. */
export function fleetSchema(schema: ConfigSchema): ConfigSchema {
  return only(schema, (m) => !m.deviceLevelOnly);
}

/**
 * Notes the form shows under a setting: the firmware it needs (`minimumFirmwareVersion`,
 * `maximumFirmwareVersion`), which the API leaves out for devices outside the range.
 */
export function firmwareNotes(schema: ConfigSchema): UiSchema {
  const ui: UiSchema = {};
  const walk = (node: RJSFSchema, into: UiSchema) => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      if (typeof child !== 'object') continue;
      const c = child as RJSFSchema & { minimumFirmwareVersion?: number; maximumFirmwareVersion?: number };
      const entry: UiSchema = {};
      const notes = [
        c.minimumFirmwareVersion !== undefined ? `firmware version ${c.minimumFirmwareVersion} or later` : null,
        c.maximumFirmwareVersion !== undefined ? `firmware version ${c.maximumFirmwareVersion} or earlier` : null,
      ].filter(Boolean);
      if (notes.length > 0) entry['ui:help'] = `Sent only to devices with ${notes.join(' and ')}.`;
      if (c.properties) walk(c, entry);
      if (Object.keys(entry).length > 0) into[key] = entry;
    }
  };
  walk(schema, ui);
  return ui;
}

/** The API's violations (JSON pointers) as errors at their fields. */
export function errorsAt(violations: readonly Violation[]): ErrorSchema {
  const root: Record<string, unknown> = {};
  for (const v of violations) {
    let node = root;
    const keys = pointerKeys(v.path);
    for (const k of keys) node = (node[k] ??= {}) as Record<string, unknown>;
    ((node.__errors ??= []) as string[]).push(v.message);
  }
  return root as ErrorSchema;
}

/**
 * A device's form: a regular device takes only the device-level-only modules; a development
 * device takes every module (docs/api.md, "Values").
 */
export function deviceSchema(schema: ConfigSchema, development: boolean): ConfigSchema {
  return development ? schema : only(schema, (m) => m.deviceLevelOnly === true);
}

/** Where a setting's value comes from, as explain answers it. */
export type Source = ApiAnswer<'/v1/products/{productIdOrSlug}/config/{deviceId}/explain'>['settings'][number]['source'];
const SOURCE_WORDS: Record<Source, string> = {
  default: "From the schema's default.",
  fleet: 'From the fleet configuration.',
  device: 'Set on this device.',
};

/** Where each setting's value comes from (the explain endpoint), as notes under its field. */
export function sourceNotes(settings: ReadonlyArray<{ path: string; source: Source }>): UiSchema {
  const ui: UiSchema = {};
  for (const s of settings) {
    let node = ui;
    for (const k of pointerKeys(s.path)) node = (node[k] ??= {}) as UiSchema;
    node['ui:help'] = SOURCE_WORDS[s.source];
  }
  return ui;
}

/** Two ui schemas as one; where both give a field help, it says both. */
export function mergeUi(a: UiSchema, b: UiSchema): UiSchema {
  const out: UiSchema = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const mine = out[k] as unknown;
    if (k === 'ui:help' && typeof mine === 'string') out[k] = `${v as string} ${mine}`;
    else if (mine && typeof mine === 'object' && v && typeof v === 'object') out[k] = mergeUi(mine as UiSchema, v as UiSchema);
    else out[k] = v as unknown;
  }
  return out;
}

/** What a device's refusal code means (docs/device-protocol.md, "Configuration"). */
export function refusalReason(code: number | null): string {
  switch (code) {
    case -22: return 'a wrong type or an unknown value';
    case -33: return 'a value out of range';
    case -19: return 'a module it does not know';
    case -28: return 'it does not fit';
    default: return code === null ? 'no reason given' : `code ${code}`;
  }
}
