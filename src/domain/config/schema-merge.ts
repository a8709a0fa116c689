import { schemaVersion } from './default-schema.js';
import { checkSchema, configAjv, type Violation } from './schema-rules.js';

/**
 * A three-way merge of a product's custom configuration schema with a newer default schema
 * (`skyport schema merge`). A custom schema replaces the default whole
 * (docs/particle-compatibility.md#custom-schemas), so when Skyport ships a new default (v19 → v20)
 * a product on a custom schema keeps the old keys until someone carries the new default's changes
 * over; this does it the way a version control merge does: `base` is the default the custom schema
 * was derived from, `theirs` the new default and `ours` the custom schema.
 *
 * - Objects are merged key by key. A value changed on one side only is taken from that side; one
 *   changed identically on both is taken; one changed differently is a conflict, and the result
 *   keeps ours'.
 * - A key removed on one side is removed if the other side left it as it was, and is a conflict
 *   (ours kept: present or absent) if the other side changed it. Keys only ours added (custom
 *   modules such as `engine`) stay; keys only theirs added come in.
 * - Key order is display order (a module's position is its tab, a key's its row): ours' order is
 *   kept, and a key new in theirs goes right after the nearest key that precedes it in theirs and
 *   is in the result, or at the end when there is none.
 * - The `required` and `enum` keywords are merged as sets, because each item is independent: items
 *   added on either side are all kept, items removed on either side are removed, ours' order is
 *   kept and theirs' new items are placed like new keys. Every other array (`examples`, `type`,
 *   `items`…) is one value: an `examples` list follows its `default`, and mixing two of them
 *   would describe neither.
 * - The top-level `$id` carries the version (its `/vN` tag): the result always takes theirs'
 *   version, never a conflict. A custom `$id` keeps its own text with theirs' version number.
 */

type Json = Record<string, unknown>;

export type ConflictReason = 'changed-in-both' | 'added-in-both' | 'removed-in-theirs' | 'removed-in-ours';

export interface MergeConflict {
  /** JSON pointer (RFC 6901) into the schema. */
  path: string;
  /** The three values there; `undefined` where the key is absent. */
  base: unknown;
  ours: unknown;
  theirs: unknown;
  reason: ConflictReason;
}

export interface MergeInput {
  base: Json;
  theirs: Json;
  ours: Json;
}

export interface MergeResult {
  merged: Json;
  conflicts: MergeConflict[];
}

/** Keywords whose arrays are sets of independent items. */
const SET_KEYWORDS = new Set(['required', 'enum']);
/** Keywords whose object keys are names chosen by the author, not keywords. */
const NAME_MAPS = new Set(['properties', 'definitions', 'dependencies', 'patternProperties']);

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Json | undefined, k: string) => o !== undefined && Object.hasOwn(o, k);
const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const pointer = (path: string[]) => path.map((k) => `/${escape(k)}`).join('');

/** JSON equality; object key order is ignored here (order is handled where keys are placed). */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

/**
 * `ours` (already merged, in ours' order) plus the items of `theirsOrder` it lacks and `isNew`
 * accepts, each placed after its nearest predecessor in `theirsOrder` that is already there.
 */
function placeNew<T>(ours: T[], theirsOrder: T[], isNew: (item: T) => boolean, same: (a: T, b: T) => boolean): T[] {
  const out = [...ours];
  theirsOrder.forEach((item, i) => {
    if (!isNew(item) || out.some((x) => same(x, item))) return;
    let at = out.length;
    for (let j = i - 1; j >= 0; j--) {
      const k = out.findIndex((x) => same(x, theirsOrder[j] as T));
      if (k >= 0) { at = k + 1; break; }
    }
    out.splice(at, 0, item);
  });
  return out;
}

const isPrimitive = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
const primitiveArray = (v: unknown): v is unknown[] => Array.isArray(v) && v.every(isPrimitive);

class Merger {
  readonly conflicts: MergeConflict[] = [];

  private conflict(path: string[], base: unknown, ours: unknown, theirs: unknown, reason: ConflictReason): void {
    this.conflicts.push({ path: pointer(path), base, ours, theirs, reason });
  }

  /** Merges a value present on both sides (`base` undefined when neither had it before). */
  value(path: string[], base: unknown, ours: unknown, theirs: unknown): unknown {
    if (isObject(ours) && isObject(theirs) && (base === undefined || isObject(base))) return this.object(path, base ?? {}, ours, theirs);
    if (this.isSet(path, base, ours, theirs)) return this.set(base === undefined ? [] : (base as unknown[]), ours as unknown[], theirs as unknown[]);
    if (equal(ours, theirs) || equal(base, theirs)) return ours;
    if (equal(base, ours)) return theirs;
    this.conflict(path, base, ours, theirs, base === undefined ? 'added-in-both' : 'changed-in-both');
    return ours;
  }

  /** `required` or `enum` as a keyword (not a property named so), all arrays of plain items. */
  private isSet(path: string[], base: unknown, ours: unknown, theirs: unknown): boolean {
    const key = path.at(-1) ?? '';
    const parent = path.at(-2);
    if (!SET_KEYWORDS.has(key) || (parent !== undefined && NAME_MAPS.has(parent))) return false;
    // An absent `required` requires nothing, an empty set; an absent `enum` allows anything, which
    // no set of items expresses, so two `enum`s added on both sides are compared whole.
    const baseOk = primitiveArray(base) || (base === undefined && key === 'required');
    return baseOk && primitiveArray(ours) && primitiveArray(theirs);
  }

  private set(base: unknown[], ours: unknown[], theirs: unknown[]): unknown[] {
    const inBase = (x: unknown) => base.includes(x);
    // Removed in ours: already absent from ours. Removed in theirs: in base, not in theirs.
    const kept = ours.filter((x, i) => ours.indexOf(x) === i && !(inBase(x) && !theirs.includes(x)));
    return placeNew(kept, theirs, (x) => !inBase(x), (a, b) => a === b);
  }

  private object(path: string[], base: Json, ours: Json, theirs: Json): Json {
    const result = new Map<string, unknown>();
    for (const key of Object.keys(ours)) {
      const p = [...path, key];
      if (has(theirs, key)) {
        result.set(key, this.value(p, has(base, key) ? base[key] : undefined, ours[key], theirs[key]));
      } else if (!has(base, key)) {
        result.set(key, ours[key]); // added in ours only
      } else if (!equal(base[key], ours[key])) {
        this.conflict(p, base[key], ours[key], undefined, 'removed-in-theirs');
        result.set(key, ours[key]);
      } // else removed in theirs, untouched in ours: gone
    }
    for (const key of Object.keys(theirs)) {
      if (has(ours, key)) continue;
      if (!has(base, key)) result.set(key, theirs[key]); // added in theirs only; placed below
      else if (!equal(base[key], theirs[key])) this.conflict([...path, key], base[key], undefined, theirs[key], 'removed-in-ours');
      // else removed in ours, untouched in theirs: stays gone
    }
    const order = placeNew(Object.keys(ours).filter((k) => result.has(k)), Object.keys(theirs), (k) => result.has(k), (a, b) => a === b);
    return Object.fromEntries(order.map((k) => [k, result.get(k)]));
  }
}

/** Ours' top-level `$id` with theirs' version: the text of ours' when it has a `/vN` tag, else theirs'. */
function versionedId(ours: Json, theirs: Json): unknown {
  const version = schemaVersion(theirs);
  if (typeof ours.$id === 'string' && version !== null && schemaVersion(ours) !== null) return ours.$id.replace(/\/v\d+$/, `/v${version}`);
  return theirs.$id;
}

export function mergeSchemas({ base, theirs, ours }: MergeInput): MergeResult {
  const merger = new Merger();
  const merged = merger.value([], base, ours, theirs) as Json;
  if (!has(theirs, '$id')) return { merged, conflicts: merger.conflicts };
  const $id = versionedId(ours, theirs);
  const conflicts = merger.conflicts.filter((c) => c.path !== '/$id');
  // In place when the result has an `$id` already; otherwise at the front, as schemas put it.
  return { merged: has(merged, '$id') ? { ...merged, $id } : { $id, ...merged }, conflicts };
}

/**
 * The merge, and the rules of a custom schema (`checkSchema`) applied to its result against the
 * NEW default: it must keep every module and key of `theirs`, not of the old `base`.
 */
export function mergeAndCheck(input: MergeInput): MergeResult & { violations: Violation[] } {
  const result = mergeSchemas(input);
  return { ...result, violations: checkSchema(result.merged, configAjv(), input.theirs) };
}
