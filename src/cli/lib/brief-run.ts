import { setFlagsFromString } from 'node:v8';

/**
 * For a command that opens the store for seconds (`user create`, `server migrate`): V8 compiles
 * the embedded store's WebAssembly (9 MB of PostgreSQL) with its baseline compiler alone. Its
 * optimising tier pays in a long-lived server, not in a command of seconds, where it was about a
 * third of the command's CPU (docs/operations.md, "Running"). V8 reads the flag when the store's
 * thread compiles the module, so it is set before the store opens; `server start` keeps the
 * default.
 */
export function briefRun(): void {
  setFlagsFromString('--liftoff-only');
}
