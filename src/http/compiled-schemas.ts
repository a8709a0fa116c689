import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ValidateFunction } from 'ajv';

/**
 * The request validators and response serializers of the REST API, compiled once per schema.
 *
 * Fastify compiles a validator for each part of each route and a serializer for each status of
 * each route's responses. Many are the same schema written again (every route's error answers are
 * `{ $ref: 'Error' }`, ids and pages recur), and compiling is most of what building the app costs:
 * about a second of CPU for some 200 routes, 70 % of it in fast-json-stringify and Ajv
 * (docs/benchmarks.md, "Measurements behind design choices"). Compiled code depends only on the
 * schema (and, for serializers, the shared schemas it may refer to), so it is kept by the schema's
 * JSON text and shared by every route, and by every app built in the same process (the tests
 * build hundreds, a cluster test several nodes).
 */

const validators = new Map<string, ValidateFunction>();
const serializers = new Map<string, (data: unknown) => string>();

// Request bodies are validated as sent: a JSON number is not a string. Query strings and path
// parameters are text by nature, so those are coerced to the declared types.
const bodyAjv = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
const textAjv = new Ajv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false, strict: false });

/** Fastify's validatorCompiler. */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }): ValidateFunction {
  const body = httpPart === 'body';
  const key = `${body ? 'body' : 'text'}\u0000${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (!validate) {
    // A schema with an $id is kept by Ajv under it, and a second compile of it would be refused:
    // the map above sees to it that there is none.
    validate = (body ? bodyAjv : textAjv).compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

const selector = SerializerSelector();

/** Fastify's schemaController.compilersFactory.buildSerializer: the default one, remembered. */
export function buildSerializer(externalSchemas?: unknown, options?: Parameters<typeof selector>[1]): ReturnType<typeof selector> {
  const compile = selector(externalSchemas, options);
  const context = JSON.stringify([externalSchemas ?? null, options ?? null]);
  return (route) => {
    const key = `${context}\u0000${JSON.stringify(route.schema)}`;
    let serialize = serializers.get(key);
    if (!serialize) {
      serialize = compile(route);
      serializers.set(key, serialize);
    }
    return serialize;
  };
}
