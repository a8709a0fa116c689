import type { ErrorSchema, RJSFSchema, UiSchema } from '@rjsf/utils';

/** A configuration schema as the API gives it (docs/configuration, Particle's tracker schema). */
export type ConfigSchema = RJSFSchema & { properties?: Record<string, RJSFSchema & { deviceLevelOnly?: boolean }> };
export interface Violation { path: string; message: string }

/** The fleet's form: every module of the schema, in its order, but the device-level-only ones. */
export function fleetSchema(schema: ConfigSchema): ConfigSchema {
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([, m]) => !m.deviceLevelOnly));
  return { ...schema, properties };
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
    const keys = v.path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    let node = root;
    for (const k of keys) node = (node[k] ??= {}) as Record<string, unknown>;
    ((node.__errors ??= []) as string[]).push(v.message);
  }
  return root as ErrorSchema;
}
