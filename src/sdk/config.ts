/**
 * Firmware-side configuration modules (docs/particle-compatibility.md#configuration-on-the-device;
 * docs/sdk.md, "Configuration modules"): a module is a name and a binding per key. Numbers are
 * bound to a property of an object (a direct binding: the value changes silently), booleans,
 * strings and string enumerations to a getter and a setter (the setter is how the application hears
 * of a change). Objects nest, as the geofence zones of the tracker schema do.
 *
 * A module arriving from the cloud is checked whole before any of it is applied, so a refused
 * module leaves every binding as it was. Keys the device does not bind are ignored: the cloud
 * sends whole modules, and a device may bind only what it uses.
 */

/** Status codes of `config/ack` (docs/device-protocol.md, "Configuration"), errno-style. */
export const ConfigStatus = {
  ok: 0,
  /** A value of the wrong type, or a string the enumeration does not list (EINVAL). */
  invalid: -22,
  /** A number outside the binding's minimum and maximum (EDOM). */
  outOfRange: -33,
  /** A module the device did not register (ENODEV). */
  unknownModule: -19,
  /** A module too large to save (ENOSPC). */
  tooLarge: -28,
} as const;

type Target = Record<string, unknown>;
interface Accessors<T> { get: () => T; set: (value: T) => void }
interface Bounds { min?: number; max?: number }

export type Binding =
  | { kind: 'integer' | 'float'; target: Target; key: string; min: number; max: number }
  | { kind: 'boolean'; access: Accessors<boolean> }
  | { kind: 'string'; access: Accessors<string>; maxLength: number }
  | { kind: 'enumeration'; table: Record<string, number>; access: Accessors<number> }
  | { kind: 'object'; children: Bindings };

export type Bindings = Record<string, Binding>;

function bounds(b: Bounds, lo: number, hi: number): { min: number; max: number } {
  return { min: b.min ?? lo, max: b.max ?? hi };
}

/** Ways to bind a key, for `device.configModule(name, {key: binding})`. */
export const bind = {
  /** A whole number kept at `target[key]`, between min and max (default: the int32 range). */
  integer(target: object, key: string, range: Bounds = {}): Binding {
    return { kind: 'integer', target: target as Target, key, ...bounds(range, -2_147_483_648, 2_147_483_647) };
  },
  /** A number kept at `target[key]`, between min and max (default: unbounded). */
  float(target: object, key: string, range: Bounds = {}): Binding {
    return { kind: 'float', target: target as Target, key, ...bounds(range, -Infinity, Infinity) };
  },
  boolean(access: Accessors<boolean>): Binding {
    return { kind: 'boolean', access };
  },
  /** A string, at most `maxLength` bytes in UTF-8 (default: unchecked). */
  string(access: Accessors<string> & { maxLength?: number }): Binding {
    return { kind: 'string', access, maxLength: access.maxLength ?? Infinity };
  },
  /** Strings on the wire and in the cloud; the numbers of `table` in the firmware. */
  enumeration(table: Record<string, number>, access: Accessors<number>): Binding {
    return { kind: 'enumeration', table, access };
  },
  object(children: Bindings): Binding {
    return { kind: 'object', children };
  },
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a module value against its bindings: the status it would be answered with. */
export function check(bindings: Bindings, value: unknown): number {
  if (!isObject(value)) return ConfigStatus.invalid;
  for (const [key, v] of Object.entries(value)) {
    const b = bindings[key];
    if (!b) continue;
    const status = checkOne(b, v);
    if (status !== ConfigStatus.ok) return status;
  }
  return ConfigStatus.ok;
}

function checkOne(b: Binding, v: unknown): number {
  switch (b.kind) {
    case 'integer':
    case 'float':
      if (typeof v !== 'number' || !Number.isFinite(v)) return ConfigStatus.invalid;
      // Whole numbers are taken as the firmware does: a fraction sent to an int is truncated.
      { const n = b.kind === 'integer' ? Math.trunc(v) : v;
        return n < b.min || n > b.max ? ConfigStatus.outOfRange : ConfigStatus.ok; }
    case 'boolean':
      return typeof v === 'boolean' ? ConfigStatus.ok : ConfigStatus.invalid;
    case 'string':
      if (typeof v !== 'string') return ConfigStatus.invalid;
      return Buffer.byteLength(v) > b.maxLength ? ConfigStatus.outOfRange : ConfigStatus.ok;
    case 'enumeration':
      return typeof v === 'string' && Object.hasOwn(b.table, v) ? ConfigStatus.ok : ConfigStatus.invalid;
    case 'object':
      return check(b.children, v);
  }
}

/** Applies a checked value: direct bindings silently, the others through their setters. */
export function apply(bindings: Bindings, value: Record<string, unknown>): void {
  for (const [key, v] of Object.entries(value)) {
    const b = bindings[key];
    if (!b) continue;
    switch (b.kind) {
      case 'integer': b.target[b.key] = Math.trunc(v as number); break;
      case 'float': b.target[b.key] = v as number; break;
      case 'boolean': if (b.access.get() !== v) b.access.set(v as boolean); break;
      case 'string': if (b.access.get() !== v) b.access.set(v as string); break;
      case 'enumeration': { const n = b.table[v as string] as number; if (b.access.get() !== n) b.access.set(n); break; }
      case 'object': apply(b.children, v as Record<string, unknown>); break;
    }
  }
}

/** The module's current value as the cloud stores it (enumerations as their strings). */
export function read(bindings: Bindings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, b] of Object.entries(bindings)) {
    switch (b.kind) {
      case 'integer': case 'float': out[key] = b.target[b.key]; break;
      case 'boolean': case 'string': out[key] = b.access.get(); break;
      case 'enumeration': { const n = b.access.get(); out[key] = Object.keys(b.table).find((s) => b.table[s] === n) ?? null; break; }
      case 'object': out[key] = read(b.children); break;
    }
  }
  return out;
}
