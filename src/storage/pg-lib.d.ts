// pg's own conversion of a JavaScript parameter to its wire form (null, a Buffer or text), the
// one its pool applies; the embedded store applies it too (wire.ts). pg ships no types for it.
declare module 'pg/lib/utils.js' {
  export function prepareValue(value: unknown): unknown;
}
