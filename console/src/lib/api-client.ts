import createClient, { mergeHeaders, type FetchOptions, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { paths } from './api-schema.js';
import { errorOf, unreachable } from './api-error.js';

/**
 * The console's only way to the cloud: the public REST API of its own origin, as a user's own
 * code would call it (docs/api.md), typed by the server's own OpenAPI document (api-schema.d.ts,
 * generated from the routes by `npm run docs:api-types`): a path, its parameters and its body are
 * checked against the document, and a call answers the success's JSON with its type, or throws
 * ApiError (api-error.ts) in words from the error catalogue. A changed route breaks the
 * type-check, not a person.
 *
 *     const { team } = await api(session.token).GET('/v1/products/{productIdOrSlug}/team', { params: { path: { productIdOrSlug } } });
 */
type Method = 'get' | 'put' | 'post' | 'delete';
const JSON_TYPE = 'application/json';
/** A product's configuration schema is read and written in its own media type (docs/api.md, "Configuration"). */
export const SCHEMA_TYPE = 'application/schema+json';
type Media = typeof JSON_TYPE | typeof SCHEMA_TYPE;
/** What a binary answer (a firmware image) is asked as. */
const BINARY_TYPE = 'application/octet-stream';
/** The headers of a form body (the token endpoint's): openapi-fetch then encodes the body as a form. */
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' } as const;

/** The paths of the document that have `method`. */
export type PathsWith<M extends Method> = { [P in keyof paths]: paths[P] extends Record<M, object> ? P : never }[keyof paths];
/** A call's parameters and body; optional when nothing in them is required. */
type Args<P extends keyof paths, M extends Method> = undefined extends MaybeOptionalInit<paths[P], M>
  ? [init?: MaybeOptionalInit<paths[P], M>]
  : [init: MaybeOptionalInit<paths[P], M>];
/** The success answer of an operation in `Md`, as the document describes it; undefined when it has no body (204). */
type Data<Op, Md extends Media> = Op extends Record<string | number, unknown>
  ? [Exclude<FetchResponse<Op, object, Md>['data'], undefined>] extends [never] ? undefined : Exclude<FetchResponse<Op, object, Md>['data'], undefined>
  : never;
type Call<M extends Method, Md extends Media> = <P extends PathsWith<M>>(path: P, ...init: Args<P, M>) => Promise<Data<paths[P][M], Md>>;

/** The API, acting with a token; its calls answer JSON in `Md`. */
export interface Api<Md extends Media = typeof JSON_TYPE> {
  GET: Call<'get', Md>;
  PUT: Call<'put', Md>;
  POST: Call<'post', Md>;
  DELETE: Call<'delete', Md>;
}

/** The JSON answer of `method path`, to name what a component is given of it. */
export type ApiAnswer<P extends PathsWith<M>, M extends Method = 'get'> = Data<paths[P][M], typeof JSON_TYPE>;
/** The JSON body `method path` takes, to name what a form builds of it. */
export type ApiBody<P extends PathsWith<M>, M extends Method> = paths[P][M] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

const client = createClient<paths>();

function caller(method: Method, token: string | null, accept: Media | typeof BINARY_TYPE) {
  return async (path: string, init: Omit<FetchOptions<unknown>, 'body' | 'params'> & { body?: unknown; params?: object } = {}): Promise<unknown> => {
    // A call's own headers (a content type, the token endpoint's client) come after the Accept,
    // and the session's token after them all.
    const headers = mergeHeaders({ accept }, init.headers, token ? { authorization: `Bearer ${token}` } : undefined);
    let answer: { data?: unknown; error?: unknown; response: Response };
    try {
      answer = await client.request(method, path as PathsWith<Method>, { ...init, headers } as never);
    } catch {
      // fetch() itself failed: no answer came (offline, the server down, a proxy hung up).
      throw unreachable();
    }
    if (!answer.response.ok) throw errorOf(answer.response.status, answer.error);
    return answer.data;
  };
}

function calls<Md extends Media>(token: string | null, accept: Md): Api<Md> {
  return {
    GET: caller('get', token, accept),
    PUT: caller('put', token, accept),
    POST: caller('post', token, accept),
    DELETE: caller('delete', token, accept),
  } as unknown as Api<Md>;
}

/** The API acting with `token` (null: the calls that need none, or carry their own credentials). */
export const api = (token: string | null): Api => calls(token, JSON_TYPE);

/** The same, asking for the configuration schema itself (Accept: application/schema+json). */
export const schemaApi = (token: string | null): Api<typeof SCHEMA_TYPE> => calls(token, SCHEMA_TYPE);

/** The path parameters of `method path`. */
type PathOf<P extends keyof paths, M extends Method> = paths[P][M] extends { parameters: { path: infer T } } ? T : never;

/**
 * A multipart upload (a firmware binary): the form travels as the browser encodes it, with its
 * boundary. The document does not describe a multipart body; the answer keeps its type.
 */
export function upload<P extends PathsWith<'post'>>(token: string, path: P, at: PathOf<P, 'post'>, form: FormData): Promise<Data<paths[P]['post'], typeof JSON_TYPE>> {
  return caller('post', token, JSON_TYPE)(path, { params: { path: at }, body: form }) as Promise<Data<paths[P]['post'], typeof JSON_TYPE>>;
}

/**
 * A binary answer (a firmware image) as a Blob. The token goes in the header as for any call:
 * a download link would have to carry it in its URL.
 */
export function binary<P extends PathsWith<'get'>>(token: string, path: P, at: PathOf<P, 'get'>): Promise<Blob> {
  return caller('get', token, BINARY_TYPE)(path, { params: { path: at }, parseAs: 'blob' }) as Promise<Blob>;
}
