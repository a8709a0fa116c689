// The part of WebAssembly's JavaScript interface that the embedded store uses. Node.js has it;
// @types/node 20 does not declare it (TypeScript declares it with the browser's globals, lib.dom).
declare namespace WebAssembly {
  /** Compiled code: instantiated as often as wanted, and sent to worker threads as it is. */
  interface Module {
    readonly __compiledWebAssembly?: never;
  }
  function compile(bytes: Uint8Array): Promise<Module>;
}
