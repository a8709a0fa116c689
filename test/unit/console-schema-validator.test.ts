import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSchemaUtils, type RJSFSchema, type RJSFValidationError } from '@rjsf/utils';
import { InterpretingValidator } from '../../console/src/lib/schema-validator.js';
import { deviceSchema, fleetSchema, type ConfigSchema } from '../../console/src/features/configuration/utils/config-form.js';
import { defaultSchema } from '../../src/domain/config/default-schema.js';
import { configAjv } from '../../src/domain/config/schema-rules.js';

/**
 * The configuration forms' validator (console/src/lib/schema-validator.ts): it interprets schemas
 * (the console's policy allows no eval), and refuses what the API's Ajv refuses, in Ajv's words.
 */

type Json = Record<string, unknown>;
const ajv = configAjv();

/** What Ajv (the API's) says, in rjsf's terms: where, which keyword, its message and params. */
function ajvSays(schema: Json, data: unknown): Json[] {
  const { $schema: _s, $id: _i, ...body } = schema;
  const check = ajv.compile(body);
  if (check(data)) return [];
  return (check.errors ?? []).map((e) => {
    const at = e.instancePath.split('/').slice(1).map((k) => `.${k.replace(/~1/g, '/').replace(/~0/g, '~')}`).join('');
    const missing = (e.params as { missingProperty?: string }).missingProperty;
    return { property: missing === undefined ? at : at ? `${at}.${missing}` : missing, name: e.keyword, message: e.message, params: e.params };
  });
}

/** What the validator says, in the same terms (without the titles rjsf puts in a message). */
function weSay(errors: RJSFValidationError[]): Json[] {
  return errors.map((e) => {
    const missing = (e.params as { missingProperty?: string }).missingProperty;
    const message = e.name === 'required' ? `must have required property '${missing}'` : e.message;
    return { property: e.property, name: e.name, message, params: e.params as unknown };
  });
}

/** As a set: Ajv repeats a failure each option of an anyOf or oneOf meets, and rjsf shows it once. */
const sorted = (list: Json[]) => [...new Set(list.map((e) => JSON.stringify(e)))].sort();

/** The defaults of a schema, as a form starts with them. */
function defaults(schema: ConfigSchema): Json {
  return createSchemaUtils(new InterpretingValidator(), schema).getDefaultFormState(schema, undefined) as Json;
}

const edit = (doc: Json, change: (d: Json & Record<string, Json>) => void): Json => {
  const copy = structuredClone(doc) as Json & Record<string, Json>;
  change(copy);
  return copy;
};

test("the tracker schema: the forms refuse what the API's Ajv refuses, in the same words", () => {
  const tracker = defaultSchema() as ConfigSchema;
  const forms: Array<[string, ConfigSchema]> = [
    ['the fleet form', fleetSchema(tracker)],
    ["a regular device's form", deviceSchema(tracker, false)],
    ["a development device's form", deviceSchema(tracker, true)],
  ];
  for (const [name, schema] of forms) {
    const validator = new InterpretingValidator();
    const start = defaults(schema);
    const modules = Object.keys(schema.properties ?? {});
    assert.ok(modules.length > 0, name);
    const cases: Array<[string, Json]> = [['the defaults', start], ['nothing', {}], ['an unknown module', { ...start, nope: {} }]];
    if (modules.includes('sleep')) {
      cases.push(
        ['a value below its minimum', edit(start, (d) => { d.sleep!.exe_min = -5; })],
        ['a string for a number', edit(start, (d) => { d.sleep!.exe_min = 'ten'; })],
        ['a fraction for an integer', edit(start, (d) => { d.sleep!.exe_min = 1.5; })],
      );
    }
    if (modules.includes('rgb')) cases.push(['a value out of its enum', edit(start, (d) => { d.rgb!.type = 'purple'; })]);
    if (modules.includes('location')) {
      cases.push(
        ['a module that is not an object', edit(start, (d) => { d.location = 7 as unknown as Json; })],
        ['two values wrong at once', edit(start, (d) => { d.location!.radius = -1; d.location!.interval_min = 'x'; })],
      );
    }
    if (modules.includes('geofence')) {
      cases.push(['a value above its maximum, two levels down', edit(start, (d) => { (d.geofence!.zone1 as Json).lat = 91; })]);
    }
    for (const [what, data] of cases) {
      const { errors } = validator.validateFormData(data, schema);
      assert.deepEqual(sorted(weSay(errors)), sorted(ajvSays(schema, data)), `${name}, ${what}`);
    }
    assert.equal(validator.validateFormData(start, schema).errors.length, 0, `${name}: its defaults are valid`);
  }
});

test("the messages as the form shows them: at the field, and in the list with the field's title", () => {
  const schema = fleetSchema(defaultSchema() as ConfigSchema);
  const validator = new InterpretingValidator();
  const data = edit(defaults(schema), (d) => { d.sleep!.exe_min = -5; delete d.location; });
  const { errors, errorSchema } = validator.validateFormData(data, schema);
  const exeMin = errors.find((e) => e.property === '.sleep.exe_min');
  assert.ok(exeMin, JSON.stringify(errors));
  assert.equal(exeMin.message, 'must be >= 5');
  assert.equal(exeMin.stack, "'Minimum awake time' must be >= 5", 'the list names the field by its title');
  assert.equal(exeMin.schemaPath, '#/properties/sleep/properties/exe_min/minimum');
  const location = errors.find((e) => e.name === 'required');
  assert.deepEqual(location && { property: location.property, message: location.message }, { property: 'location', message: "must have required property 'Location'" });
  assert.deepEqual((errorSchema as Json & { sleep: { exe_min: unknown } }).sleep.exe_min, { __errors: ['must be >= 5'] });
  assert.deepEqual((errorSchema as Json & { location: unknown }).location, { __errors: ["must have required property 'Location'"] });
});

/** A schema of the keywords a product's own schema may use beyond the tracker's. */
const custom: RJSFSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://example.com/schemas/custom/v1',
  type: 'object',
  additionalProperties: false,
  definitions: {
    percent: { type: 'integer', minimum: 0, maximum: 100 },
    mode: { type: 'string', enum: ['eco', 'boost'] },
  },
  properties: {
    power: {
      $id: '#/properties/power',
      type: 'object',
      additionalProperties: false,
      properties: {
        level: { $ref: '#/definitions/percent', multipleOf: 5 },
        mode: { $ref: '#/definitions/mode' },
        label: { type: 'string', minLength: 2, maxLength: 8 },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, uniqueItems: true },
        limit: { type: 'number', exclusiveMaximum: 10, exclusiveMinimum: 0 },
        fixed: { const: 'yes' },
        never: false,
      },
      dependencies: { limit: ['mode'] },
      if: { properties: { mode: { const: 'boost' } }, required: ['mode'] },
      then: { required: ['level'] },
      else: { not: { required: ['level'] } },
    },
    link: {
      type: 'object',
      properties: {
        kind: { type: 'string' },
      },
      oneOf: [
        { properties: { kind: { const: 'wifi' }, ssid: { type: 'string' } }, required: ['kind', 'ssid'] },
        { properties: { kind: { const: 'cell' }, apn: { type: 'string' } }, required: ['kind'] },
      ],
      anyOf: [{ required: ['kind'] }, { required: ['ssid'] }],
    },
    contact: { type: 'string', format: 'email' },
    preset: { const: { format: 'csv', $ref: '#/nowhere', $id: '#/nothing' } },
  },
};

test("a product's own schema: references, keywords beside them, conditions, combinations: as the API's Ajv", () => {
  const validator = new InterpretingValidator();
  const cases: Array<[string, unknown]> = [
    ['valid, boost with a level', { power: { mode: 'boost', level: 50 }, link: { kind: 'cell' } }],
    ['valid, eco without a level', { power: { mode: 'eco', label: 'ab', tags: ['a'], limit: 5, fixed: 'yes' }, link: { kind: 'wifi', ssid: 'x' } }],
    ['through a $ref, and a keyword beside it', { power: { mode: 'boost', level: 101 } }],
    ['multipleOf beside a $ref', { power: { mode: 'boost', level: 52 } }],
    ['an enum through a $ref', { power: { mode: 'turbo' } }],
    ['if/then', { power: { mode: 'boost' } }],
    ['if/else with not', { power: { mode: 'eco', level: 10 } }],
    ['strings and arrays', { power: { label: 'a', tags: [] } }],
    ['too long, too many, duplicates', { power: { label: 'abcdefghij', tags: ['a', 'a', 'b', 'c'] } }],
    ['exclusive bounds and a dependency', { power: { limit: 10 } }],
    ['const', { power: { fixed: 'no' } }],
    ['a property whose schema is false', { power: { never: 1 } }],
    ['an unknown setting', { power: { other: 1 } }],
    ['oneOf matching none', { link: { kind: 'wifi' } }],
    ['oneOf and anyOf', { link: {} }],
    ['a format, not checked (nor by the API)', { contact: 'not an address' }],
    ['a value that looks like a schema', { preset: { format: 'csv', $ref: '#/nowhere', $id: '#/nothing' } }],
    ['a value that looks like a schema, not the same', { preset: { format: 'tsv', $ref: '#/nowhere', $id: '#/nothing' } }],
    ['the wrong type at the top', 'text'],
  ];
  for (const [what, data] of cases) {
    const { errors } = validator.validateFormData(data, custom);
    assert.deepEqual(sorted(weSay(errors)), sorted(ajvSays(custom as Json, data)), what);
  }
  assert.equal(validator.validateFormData({ preset: { format: 'csv', $ref: '#/nowhere', $id: '#/nothing' }, contact: 'x' }, custom).errors.length, 0);
  assert.equal(validator.validateFormData({ preset: { format: 'tsv', $ref: '#/nowhere', $id: '#/nothing' } }, custom).errors.length, 1);
});

test('isValid: a subschema with references into the root schema, and data with fields left empty', () => {
  const validator = new InterpretingValidator();
  const level = ((custom.properties!.power as RJSFSchema).properties!.level) as RJSFSchema;
  assert.equal(validator.isValid(level, 50, custom), true);
  assert.equal(validator.isValid(level, 101, custom), false, 'the reference reaches the root');
  assert.equal(validator.isValid(level, 52, custom), false, 'the keyword beside it applies');
  assert.equal(validator.isValid({ $ref: '#/definitions/mode' }, 'eco', custom), true);
  assert.equal(validator.isValid({ $ref: '#/definitions/mode' }, 'turbo', custom), false);
  // Asked again (rjsf asks about the same subschemas on every render), and with an equal root of another object.
  assert.equal(validator.isValid(level, 101, structuredClone(custom)), false);
  // rjsf leaves undefined in a cleared field; and asks about data not given at all.
  assert.equal(validator.isValid(custom.properties!.power as RJSFSchema, { mode: 'eco', label: undefined }, custom), true);
  assert.equal(validator.isValid({ type: 'string' }, undefined, custom), false);
  assert.equal(validator.isValid({}, undefined, custom), true);
  assert.deepEqual(validator.validateFormData({ power: { mode: 'eco', label: undefined } }, custom).errors, []);
  // The schemas rjsf holds are not marked by the library (it marks the objects it reads).
  assert.equal(Object.getOwnPropertyNames(level).includes('__absolute_ref__'), false);
  assert.equal(Object.getOwnPropertyNames(custom).includes('__absolute_uri__'), false);
});

test("rjsf's features that ask the validator: defaults under if/then/else, the matching oneOf option, schema dependencies", () => {
  const schema: RJSFSchema = {
    type: 'object',
    properties: {
      kind: { type: 'string', enum: ['wifi', 'cell'], default: 'wifi' },
      link: {
        oneOf: [
          { title: 'Wi-Fi', type: 'object', properties: { ssid: { type: 'string', default: 'home' } }, required: ['ssid'] },
          { title: 'Cellular', type: 'object', properties: { apn: { type: 'string', default: 'internet' } }, required: ['apn'] },
        ],
      },
      backup: { type: 'boolean', default: false },
    },
    if: { properties: { kind: { const: 'cell' } }, required: ['kind'] },
    then: { properties: { band: { type: 'integer', default: 4 } } },
    else: { properties: { channel: { type: 'integer', default: 6 } } },
    dependencies: {
      backup: { oneOf: [
        { properties: { backup: { const: false } } },
        { properties: { backup: { const: true }, every: { type: 'integer', default: 60 } } },
      ] },
    },
  };
  const utils = createSchemaUtils(new InterpretingValidator(), schema);
  const link = { ssid: 'home' };
  assert.deepEqual(utils.getDefaultFormState(schema, {}), { kind: 'wifi', link, backup: false, channel: 6 }, 'the else branch');
  assert.deepEqual(utils.getDefaultFormState(schema, { kind: 'cell' }), { kind: 'cell', link, backup: false, band: 4 }, 'the then branch');
  assert.deepEqual(utils.getDefaultFormState(schema, { kind: 'wifi', backup: true }), { kind: 'wifi', link, backup: true, channel: 6, every: 60 }, 'the dependency');
  const options = (schema.properties!.link as RJSFSchema).oneOf as RJSFSchema[];
  assert.equal(utils.getClosestMatchingOption({ apn: 'm2m' }, options, 0), 1);
  assert.equal(utils.getFirstMatchingOption({ ssid: 'office' }, options), 0);
  const retrieved = utils.retrieveSchema(schema, { kind: 'cell', backup: true });
  assert.deepEqual(Object.keys(retrieved.properties ?? {}).sort(), ['backup', 'band', 'every', 'kind', 'link']);
});

test('a schema the library cannot use: a form-level error in words, never a throw', () => {
  const validator = new InterpretingValidator();
  const broken: RJSFSchema = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };
  const { errors, errorSchema } = validator.validateFormData({ a: 1 }, broken);
  assert.equal(errors.length, 1);
  assert.match(errors[0]!.stack, /^The configuration schema cannot be used: Unresolved \$ref "#\/definitions\/missing"\.[^\n]*$/);
  assert.deepEqual(Object.keys(errorSchema), ['$schema']);
  assert.equal(validator.isValid(broken.properties!.a as RJSFSchema, 1, broken), false);
  assert.ok(validator.rawValidation(broken, { a: 1 }).validationError instanceof Error);
});
