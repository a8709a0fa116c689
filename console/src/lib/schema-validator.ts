import { dereference, validate, type OutputUnit, type Schema } from '@cfworker/json-schema';
import {
  createErrorHandler, ErrorSchemaBuilder, getByPath, getDefaultFormState, getUiOptions, toErrorSchema, unwrapErrorHandler, validationDataMerge,
  type CustomValidator, type ErrorSchema, type ErrorTransformer, type RJSFSchema, type RJSFValidationError,
  type UiSchema, type ValidationData, type ValidatorType,
} from '@rjsf/utils';

/**
 * react-jsonschema-form's validator for the configuration forms, one that interprets JSON Schema
 * rather than compiling it.
 *
 * Why: the console's Content-Security-Policy has no 'unsafe-eval' (src/http/security-headers.ts,
 * docs/security.md). rjsf's own validator is Ajv, which turns each schema into a function with
 * `new Function`; that needs 'unsafe-eval', and the schemas cannot be compiled when the console is
 * built, since every product may upload its own. @cfworker/json-schema walks the schema for each
 * value instead: slower, which a form of a few dozen settings does not feel.
 *
 * It reads a schema as the API's Ajv does (`configAjv` in src/domain/config/schema-rules.ts, used
 * by src/domain/config/values.ts), so that the page and the API agree on a value:
 * - Configuration schemas are JSON Schema draft-07 with local `$ref`s only (schema-rules.ts).
 *   They are interpreted in the library's 2019-09 mode, which for draft-07's keywords differs
 *   from its draft-07 mode in one thing: keywords beside a `$ref` apply too, as in Ajv 8.
 * - `format` is not checked, as the API's Ajv has `validateFormats: false`; rjsf still draws its
 *   widgets from it.
 * - The messages are Ajv's words ("must be >= 5", "must have required property 'type'"), as in
 *   the violations of a refused write, with the field's title in rjsf's list of errors.
 */

type Lookup = Record<string, Schema | boolean>;
/** A schema ready for the library: a copy of its own (the library marks the objects it reads), dereferenced. */
interface Prepared { schema: Schema; lookup: Lookup }
/** A root schema, prepared, with the subschemas rjsf asked about in it (`isValid`). */
interface Root { json: string; prepared: Prepared | Error; subs: Map<string, Prepared | Error> }

/**
 * Where the root schema lives for the library, so that a subschema's `#/…` references reach it
 * (rjsf's Ajv validator does the same with its `__rjsf_rootSchema` id). An address of the
 * `.invalid` domain (RFC 2606), never fetched: the library resolves references in memory only.
 */
const ROOT = 'https://root.schema.invalid/';
/** Keywords that only carry the errors of their subschemas, which are reported themselves. */
const CARRIERS = new Set(['$ref', '$recursiveRef', 'properties', 'patternProperties', 'unevaluatedProperties', 'items', 'prefixItems', 'additionalItems', 'unevaluatedItems', 'allOf', 'dependentSchemas']);
/** Bound on the subschemas kept prepared per root schema (rjsf asks about the same few again and again). */
const KEPT = 256;

/** Where draft-07 (and the library) find subschemas: one, a list, or a map of them. */
const ONE = ['additionalItems', 'additionalProperties', 'contains', 'else', 'if', 'items', 'not', 'propertyNames', 'then', 'unevaluatedItems', 'unevaluatedProperties'];
const LIST = ['allOf', 'anyOf', 'items', 'oneOf', 'prefixItems'];
const MAP = ['$defs', 'definitions', 'dependencies', 'dependentSchemas', 'patternProperties', 'properties'];

/**
 * A copy of a schema for the library. `$id`s that are JSON pointers (`#/properties/…`: Particle's
 * schemas give one to every node, repeating where it is) are left out: they name nothing a pointer
 * does not, and the library would take one that named another place than its own for a second
 * schema of the same address. So is `format` (see above). A subschema's copy also loses every
 * `$id` and has its `#…` references pointed at the root, where they lead in the document it came
 * from. Only schemas are changed, never values (a `const`, an `enum`, a `default`).
 */
function copyOf(json: string, sub: boolean): Schema {
  const tidy = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
    const schema = node as Record<string, unknown>;
    if (typeof schema.$id === 'string' && (sub || schema.$id.startsWith('#/'))) delete schema.$id;
    if (typeof schema.format === 'string') delete schema.format;
    if (sub && typeof schema.$ref === 'string' && schema.$ref.startsWith('#')) schema.$ref = ROOT + schema.$ref;
    for (const k of ONE) tidy(schema[k]);
    for (const k of LIST) if (Array.isArray(schema[k])) (schema[k] as unknown[]).forEach(tidy);
    for (const k of MAP) if (schema[k] !== null && typeof schema[k] === 'object') Object.values(schema[k] as object).forEach(tidy);
  };
  const copy = JSON.parse(json) as Schema;
  tidy(copy);
  return copy;
}

function attempt<T>(work: () => T): T | Error {
  try {
    return work();
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

function prepareRoot(json: string): Prepared {
  const schema = { ...copyOf(json, false), $id: ROOT };
  return { schema, lookup: dereference(schema) };
}

function prepareSub(json: string, root: Prepared): Prepared {
  const schema = copyOf(json, true);
  // The root's schemas by inheritance; the subschema's own (at the page's address) beside them.
  const lookup = Object.create(root.lookup) as Lookup;
  dereference(schema, lookup);
  return { schema, lookup };
}

/**
 * The form's data as JSON: rjsf leaves `undefined` in a cleared field (Ajv skips such a property,
 * the library cannot read one). A value not given at all is checked as null: refused by any
 * `type` but null, as Ajv refuses `undefined`.
 */
function plain(data: unknown): unknown {
  return data === undefined ? null : JSON.parse(JSON.stringify(data)) as unknown;
}

/** The segments of a JSON pointer written as a URI fragment (`#/a/b%20c`), unescaped. */
function segments(fragment: string): string[] {
  return fragment === '#' ? [] : fragment.slice(2).split('/').map((s) => decodeURIComponent(s).replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The schema a keyword stands in, from the keyword's location as the library gives it (through `$ref`s). */
function holder(keywordLocation: string, prepared: Prepared): Schema | undefined {
  let node: unknown = prepared.schema;
  for (const key of segments(keywordLocation).slice(0, -1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = key === '$ref' ? prepared.lookup[(node as Schema).__absolute_ref__ ?? ''] : (node as Record<string, unknown>)[key];
  }
  return node !== null && typeof node === 'object' && !Array.isArray(node) ? node as Schema : undefined;
}

/** One failed check, before rjsf's shape: where in the data, which keyword, Ajv's message and params. */
interface Failure { at: string[]; keyword: string; message: string; params: Record<string, unknown>; schemaPath: string; parent: Schema | undefined }

/** Ajv's message (ajv/lib/vocabularies, English) for a keyword that failed in `parent`. */
function inAjvWords(unit: OutputUnit, parent: Schema | undefined): Pick<Failure, 'message' | 'params'> {
  const limit = parent?.[unit.keyword] as unknown;
  const more = (what: string) => ({ message: `must NOT have more than ${String(limit)} ${what}`, params: { limit } });
  const fewer = (what: string) => ({ message: `must NOT have fewer than ${String(limit)} ${what}`, params: { limit } });
  const compare = (comparison: string) => ({ message: `must be ${comparison} ${String(limit)}`, params: { comparison, limit } });
  switch (unit.keyword) {
    case 'type': {
      const type = Array.isArray(limit) ? limit.join(',') : String(limit);
      return { message: `must be ${type}`, params: { type } };
    }
    case 'minimum': return compare('>=');
    case 'maximum': return compare('<=');
    case 'exclusiveMinimum': return compare('>');
    case 'exclusiveMaximum': return compare('<');
    case 'multipleOf': return { message: `must be multiple of ${String(limit)}`, params: { multipleOf: limit } };
    case 'minLength': return fewer('characters');
    case 'maxLength': return more('characters');
    case 'minItems': return fewer('items');
    case 'maxItems': return more('items');
    case 'minProperties': return fewer('properties');
    case 'maxProperties': return more('properties');
    case 'required': {
      const missingProperty = /required property "(.*)"\.$/s.exec(unit.error)?.[1] ?? '';
      return { message: `must have required property '${missingProperty}'`, params: { missingProperty } };
    }
    case 'dependencies': {
      const [, property = '', missingProperty = ''] = /^Instance has "(.*)" but does not have "(.*)"\.$/s.exec(unit.error) ?? [];
      const deps = (parent?.dependencies as Record<string, unknown> | undefined)?.[property];
      const all = Array.isArray(deps) ? deps as string[] : [missingProperty];
      return {
        message: `must have ${all.length === 1 ? 'property' : 'properties'} ${all.join(', ')} when property ${property} is present`,
        params: { property, missingProperty, depsCount: all.length, deps: all.join(', ') },
      };
    }
    case 'enum': return { message: 'must be equal to one of the allowed values', params: { allowedValues: limit } };
    case 'const': return { message: 'must be equal to constant', params: { allowedValue: limit } };
    case 'pattern': return { message: `must match pattern "${String(limit)}"`, params: { pattern: limit } };
    case 'uniqueItems': {
      const [, i = '', j = ''] = /indexes (\d+) and (\d+)/.exec(unit.error) ?? [];
      return { message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i: Number(i), j: Number(j) } };
    }
    case 'contains': return { message: 'must contain at least 1 valid item(s)', params: { minContains: 1 } };
    case 'minContains': return { message: `must contain at least ${String(limit)} valid item(s)`, params: { minContains: limit } };
    case 'maxContains': return { message: `must contain at most ${String(limit)} valid item(s)`, params: { maxContains: limit } };
    case 'anyOf': return { message: 'must match a schema in anyOf', params: {} };
    case 'oneOf': {
      // Ajv lists which options matched when several did; the library counts them.
      const none = /\(0 matches\)/.test(unit.error);
      return { message: 'must match exactly one schema in oneOf', params: none ? { passingSchemas: null } : {} };
    }
    case 'not': return { message: 'must NOT be valid', params: {} };
    case 'if': {
      const failingKeyword = /"else"/.test(unit.error) ? 'else' : 'then';
      return { message: `must match "${failingKeyword}" schema`, params: { failingKeyword } };
    }
    case 'false': return { message: 'boolean schema is false', params: {} };
    default: return { message: unit.error, params: {} };
  }
}

/** The library's output (every keyword on the way to a failure) as the failures themselves, in Ajv's terms. */
function failuresOf(units: OutputUnit[], prepared: Prepared): Failure[] {
  const out: Failure[] = [];
  let names: string | undefined; // a failed propertyNames: its subschema's failures concern the name, reported once
  for (let i = 0; i < units.length; i++) {
    const unit = units[i]!;
    if (names !== undefined && unit.keywordLocation.startsWith(`${names}/`)) continue;
    names = undefined;
    const at = segments(unit.instanceLocation);
    // (A false schema's failure gives the data's location for the schema's: no holder to find.)
    const parent = unit.keyword === 'false' ? undefined : holder(unit.keywordLocation, prepared);
    const failure = (keyword: string, words: Pick<Failure, 'message' | 'params'>): void => {
      out.push({ at, keyword, ...words, schemaPath: unit.keywordLocation, parent });
    };
    if (unit.keyword === 'additionalProperties') {
      // `additionalProperties: false`, reported as Ajv does: at the object, naming the property.
      const next = units[i + 1];
      if (parent?.additionalProperties === false && next?.keyword === 'false') {
        failure('additionalProperties', { message: 'must NOT have additional properties', params: { additionalProperty: segments(next.instanceLocation).at(-1) } });
        i++;
      }
    } else if (unit.keyword === 'propertyNames') {
      names = unit.keywordLocation;
      failure('propertyNames', { message: 'property name must be valid', params: { propertyName: /"(.*)"/s.exec(unit.error)?.[1] } });
    } else if (unit.keyword === 'dependencies' && /dependant schema\.$/.test(unit.error)) {
      // A schema dependency that failed: its own failures follow.
    } else if (!CARRIERS.has(unit.keyword)) {
      failure(unit.keyword === 'false' ? 'false schema' : unit.keyword, inAjvWords(unit, parent));
    }
  }
  return out;
}

/** The title of the field at `path`: its uiSchema's, else its schema's. */
function titleAt(uiSchema: UiSchema | undefined, path: string[], schema: unknown): string | undefined {
  const fromUi = path.length > 0 ? getUiOptions(getByPath<UiSchema>(uiSchema, path)).title : undefined;
  if (fromUi) return fromUi;
  const title = (schema as { title?: unknown } | undefined)?.title;
  return typeof title === 'string' && title !== '' ? title : undefined;
}

/**
 * rjsf's shape, as its Ajv validator gives it (@rjsf/validator-ajv8, processRawValidationErrors):
 * `property` the data's path in dots, `message` shown at the field, `stack` in the error list with
 * the field's title; a missing property is reported at the property itself.
 */
function rjsfErrors(failures: Failure[], uiSchema: UiSchema | undefined): RJSFValidationError[] {
  const errors = failures.map((f): RJSFValidationError => {
    let property = f.at.map((k) => `.${k}`).join('');
    let { message } = f;
    let stack: string;
    let title: string | undefined;
    const named = (f.params.missingProperty ?? undefined) as string | undefined;
    if (named !== undefined) {
      title = titleAt(uiSchema, [...f.at, named], (f.parent?.properties as Record<string, unknown> | undefined)?.[named]);
      if (title) message = message.replace(`'${named}'`, `'${title}'`);
      stack = message;
      property = property ? `${property}.${named}` : named;
    } else {
      title = titleAt(uiSchema, f.at, f.parent);
      stack = title ? `'${title}' ${message}` : `${property} ${message}`.trim();
    }
    return { name: f.keyword, property, message, params: f.params, stack, schemaPath: f.schemaPath, title: title ?? '' };
  });
  // As rjsf does: one of the same message under the same anyOf/oneOf (each option may say it).
  return errors.filter((e, i) => {
    const cut = e.schemaPath?.search(/\/(anyOf|oneOf)\//) ?? -1;
    if (cut < 0) return true;
    const prefix = e.schemaPath!.slice(0, cut);
    return !errors.slice(0, i).some((d) => d.message === e.message && d.property === e.property && d.schemaPath?.startsWith(prefix));
  });
}

/** rjsf's `ValidatorType` (@rjsf/utils) on @cfworker/json-schema; one per page is enough, it keeps what it prepared. */
export class InterpretingValidator implements ValidatorType {
  private byObject = new WeakMap<object, Root>();
  private last: Root | undefined;

  /** The prepared root schema: the same object as before, or the same content (rjsf's schemas are often rebuilt). */
  private root(schema: RJSFSchema): Root {
    const known = this.byObject.get(schema);
    if (known) return known;
    const json = JSON.stringify(schema);
    let root = this.last?.json === json ? this.last : undefined;
    if (!root) {
      root = { json, prepared: attempt(() => prepareRoot(json)), subs: new Map() };
      this.last = root;
    }
    this.byObject.set(schema, root);
    return root;
  }

  private subschema(schema: RJSFSchema, rootSchema: RJSFSchema): Prepared | Error {
    const root = this.root(rootSchema);
    if (schema === rootSchema || root.prepared instanceof Error) return root.prepared;
    const json = JSON.stringify(schema);
    if (json === root.json) return root.prepared;
    let prepared = root.subs.get(json);
    if (!prepared) {
      if (root.subs.size >= KEPT) root.subs.clear();
      const inRoot = root.prepared;
      prepared = attempt(() => prepareSub(json, inRoot));
      root.subs.set(json, prepared);
    }
    return prepared;
  }

  /** Whether the data fits the schema; false for a schema that cannot be used. */
  isValid(schema: RJSFSchema, formData: unknown, rootSchema: RJSFSchema): boolean {
    const prepared = this.subschema(schema, rootSchema);
    if (prepared instanceof Error) return false;
    try {
      return validate(plain(formData), prepared.schema, '2019-09', prepared.lookup, true).valid;
    } catch {
      return false; // a reference to nothing, say
    }
  }

  /** The library's own output, every failure with the keywords on its way; or why the schema cannot be used. */
  rawValidation<Result = OutputUnit>(schema: RJSFSchema, formData?: unknown): { errors?: Result[]; validationError?: Error } {
    const checked = this.check(schema, formData);
    return checked instanceof Error ? { validationError: checked } : { errors: checked.units as Result[] };
  }

  private check(schema: RJSFSchema, formData: unknown): { units: OutputUnit[]; prepared: Prepared } | Error {
    const prepared = this.root(schema).prepared;
    if (prepared instanceof Error) return prepared;
    return attempt(() => ({ units: validate(plain(formData), prepared.schema, '2019-09', prepared.lookup, false).errors, prepared }));
  }

  /** The form's errors, as rjsf's Ajv validator gives them (customValidate and transformErrors included). */
  validateFormData(formData: unknown, schema: RJSFSchema, customValidate?: CustomValidator, transformErrors?: ErrorTransformer, uiSchema?: UiSchema): ValidationData<unknown> {
    const checked = this.check(schema, formData);
    let errors: RJSFValidationError[];
    let unusable: string | undefined;
    if (checked instanceof Error) {
      // The library's message for a reference to nothing lists every schema it knows: its first line is enough.
      unusable = `The configuration schema cannot be used: ${checked.message.split('\n')[0] ?? ''}`;
      errors = [{ stack: unusable }];
    } else {
      errors = rjsfErrors(failuresOf(checked.units, checked.prepared), uiSchema);
    }
    if (typeof transformErrors === 'function') errors = transformErrors(errors, uiSchema);
    let errorSchema: ErrorSchema = toErrorSchema(errors);
    if (unusable) errorSchema = new ErrorSchemaBuilder(errorSchema).addErrors(unusable, '$schema').ErrorSchema;
    if (typeof customValidate !== 'function') return { errors, errorSchema };
    // As rjsf does: the custom check sees the data with its defaults and every field, undefined ones too.
    const full = getDefaultFormState(this, schema, formData, schema, true);
    const own = unwrapErrorHandler(customValidate(full, createErrorHandler(full), uiSchema, errorSchema));
    return validationDataMerge({ errors, errorSchema }, own);
  }

  /** Forgets every prepared schema. */
  reset(): void {
    this.byObject = new WeakMap();
    this.last = undefined;
  }
}
