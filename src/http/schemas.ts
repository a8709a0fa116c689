import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Shared JSON Schemas of the routes; they validate requests and feed /v1/openapi.json. */

export const ErrorBody = Type.Object({
  ok: Type.Literal(false),
  error: Type.String({ description: 'Stable error code (docs/errors.md)' }),
  error_description: Type.String(),
}, { additionalProperties: true, $id: 'Error' });

export const OkBody = Type.Object({ ok: Type.Literal(true) });

/**
 * The type or null, as OpenAPI 3.0 says it (`nullable`): the response serializer writes it
 * directly, where for an `anyOf` it would try each branch.
 */
export const orNull = <T extends TSchema>(t: T) => Type.Unsafe<Static<T> | null>({ ...t, nullable: true });

/** One of a few words: a string with an `enum`, written by the serializer as a string, typed as the union. */
export const OneOf = <T extends string>(values: readonly T[], opts: Record<string, unknown> = {}) => Type.Unsafe<T>({ type: 'string', enum: [...values], ...opts });

/** An answer without a body (204). */
export const NoContent = Type.Null({ description: 'No content' });

/** The `meta` of a paged list (domain/paging.ts). */
export const PageMeta = Type.Object({ page: Type.Integer(), per_page: Type.Integer(), total: Type.Integer(), total_pages: Type.Integer() });

/** A boolean as JSON sends it, or as a form field ("true"/"false"). */
export const Flag = Type.Union([Type.Boolean(), Type.Literal('true'), Type.Literal('false')]);
export const flagValue = (v: boolean | 'true' | 'false' | undefined): boolean => v === true || v === 'true';

/** A bounded string; every free-text field has a limit so that nothing unbounded is stored. */
export const Str = (max: number, opts: Record<string, unknown> = {}) => Type.String({ maxLength: max, ...opts });

export const errorResponses = (...statuses: number[]): Record<number, TSchema> =>
  Object.fromEntries(statuses.map((s) => [s, Type.Ref('Error')]));

export const Pagination = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 25 })),
});

/**
 * For routes whose body is optional: a request without one (no Content-Type, as a bare
 * `curl -X POST` or particle-cli sends) is validated as an empty object rather than refused.
 */
export const bodyOptional = async (req: { body: unknown }): Promise<void> => {
  if (req.body === undefined || req.body === null) req.body = {};
};
