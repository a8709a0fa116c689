import { bind, type Bindings } from '../sdk/index.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Configuration modules for a simulated device, drawn from a configuration schema (the default
 * tracker schema for `skyport sim`): each module of the schema, each key bound by its type and
 * range, so the device takes every value the schema allows and acknowledges it, as a tracker's
 * firmware does (docs/device-protocol.md, "Configuration"). Each call makes fresh state: one per
 * device. Keys of other types (arrays) are left unbound, which a device may do.
 */
export function schemaModules(schema: Json): Array<[string, Bindings]> {
  const modules = isObject(schema.properties) ? schema.properties : {};
  return Object.entries(modules).filter(([, m]) => isObject(m)).map(([name, m]) => [name, bindingsOf(m as Json)]);
}

function bindingsOf(node: Json): Bindings {
  const held: Json = {};
  const out: Bindings = {};
  const properties = isObject(node.properties) ? node.properties : {};
  for (const [key, spec] of Object.entries(properties)) {
    if (!isObject(spec)) continue;
    const range = { ...(typeof spec.minimum === 'number' ? { min: spec.minimum } : {}), ...(typeof spec.maximum === 'number' ? { max: spec.maximum } : {}) };
    const access = <T>(initial: T) => {
      held[key] = initial;
      return { get: () => held[key] as T, set: (v: T) => { held[key] = v; } };
    };
    if (spec.type === 'integer' || spec.type === 'number') {
      held[key] = typeof spec.default === 'number' ? spec.default : 0;
      out[key] = (spec.type === 'integer' ? bind.integer : bind.float)(held, key, range);
    } else if (spec.type === 'boolean') {
      out[key] = bind.boolean(access(spec.default === true));
    } else if (spec.type === 'string' && Array.isArray(spec.enum)) {
      // The firmware holds an enumeration as a number: the name's position in the schema's list.
      const table = Object.fromEntries(spec.enum.filter((n): n is string => typeof n === 'string').map((n, i) => [n, i]));
      out[key] = bind.enumeration(table, access(table[String(spec.default)] ?? 0));
    } else if (spec.type === 'string') {
      out[key] = bind.string(access(typeof spec.default === 'string' ? spec.default : ''));
    } else if (spec.type === 'object' || isObject(spec.properties)) {
      out[key] = bind.object(bindingsOf(spec));
    }
  }
  return out;
}
