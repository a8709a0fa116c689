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
 * JSON text and shared by every route, and by every app built in the same process (a cluster test
 * runs several nodes in one).
 *
 * `on-first-use` (what a server does) compiles each schema when its route first needs it: a
 * server that starts again after a deploy or a crash, with its fleet reconnecting, serves sooner
 * (ready in 1.4-1.6 s instead of 1.7-2.0, 0.4 CPU-s less; docs/benchmarks.md, "Restart storms"),
 * and the first request of each route pays its own compile, up to about 20 ms. `at-start`
 * compiles every schema while the app is built. The route schemas are the code's, the same in
 * every deployment, and test/openapi.test.ts builds the app `at-start`, so a schema that does not
 * compile fails the suite rather than a request. The tests build hundreds of apps and call a few
 * routes of each (test/helpers/server.ts).
 */
export type CompileSchemas = 'at-start' | 'on-first-use';

const validators = new Map<string, ValidateFunction>();
const serializers = new Map<string, (data: unknown) => string>();

// Request bodies are validated as sent: a JSON number is not a string. Query strings and path
// parameters are text by nature, so those are coerced to the declared types.
const bodyAjv = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
const textAjv = new Ajv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false, strict: false });

/** What `compiled` holds under `key`, compiled on the first ask. */
function kept<T>(compiled: Map<string, T>, key: string, compile: () => T): T {
  let made = compiled.get(key);
  if (made === undefined) {
    made = compile();
    compiled.set(key, made);
  }
  return made;
}

function validatorOf(schema: object, httpPart: string | undefined): ValidateFunction {
  const body = httpPart === 'body';
  // A schema with an $id is kept by Ajv under it, and a second compile of it would be refused:
  // keeping each compiled schema sees to it that there is none.
  return kept(validators, `${body ? 'body' : 'text'}\u0000${JSON.stringify(schema)}`, () => (body ? bodyAjv : textAjv).compile(schema));
}

type Validate = (data: unknown) => boolean;
type Serialize = (data: unknown) => string;
const selector = SerializerSelector();
type SerializerFactory = typeof selector;

export function schemaCompilers(when: CompileSchemas): {
  validatorCompiler: (route: { schema: object; httpPart?: string }) => Validate;
  buildSerializer: SerializerFactory;
} {
  return {
    validatorCompiler({ schema, httpPart }) {
      if (when === 'at-start') return validatorOf(schema, httpPart);
      let real: ValidateFunction | undefined;
      // Fastify reads the errors from the function it was given, after calling it.
      const validate = Object.assign((data: unknown): boolean => {
        real ??= validatorOf(schema, httpPart);
        const ok = real(data);
        validate.errors = real.errors;
        return ok;
      }, { errors: undefined as ValidateFunction['errors'] });
      return validate;
    },

    buildSerializer(externalSchemas, options) {
      const compile = selector(externalSchemas, options);
      let context: string | undefined;
      const serializerOf = (route: Parameters<ReturnType<SerializerFactory>>[0]): Serialize => {
        context ??= JSON.stringify([externalSchemas ?? null, options ?? null]);
        return kept(serializers, `${context}\u0000${JSON.stringify(route.schema)}`, () => compile(route));
      };
      if (when === 'at-start') return serializerOf;
      return (route) => {
        let real: Serialize | undefined;
        return (data: unknown) => (real ??= serializerOf(route))(data);
      };
    },
  };
}
