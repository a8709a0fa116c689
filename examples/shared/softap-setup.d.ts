/**
 * Types for `softap-setup` 4.1.0, Particle's device-setup client (CommonJS, no types of its own),
 * as far as the examples use it. Read from node_modules/softap-setup/lib/*.js. Its callbacks are
 * node-style but not to be trusted with once-only semantics: use it through ./softap.ts.
 */
declare module 'softap-setup' {
  namespace SoftAPSetup {
    type Callback<T> = (err: Error | null | undefined, result?: T) => void;

    interface Options {
      /** Default 192.168.0.1: the device's address on its own access point. */
      host?: string;
      /** Default 5609 for TCP, 80 for HTTP. */
      port?: number;
      /** Default 'tcp'. */
      protocol?: 'tcp' | 'http';
      /** Per command, ms (default 8000). */
      timeout?: number;
      keepAlive?: boolean;
      noDelay?: boolean;
    }

    /** A network of the device's scan: the `scan-ap` answer's `scans` entries. */
    interface ScannedNetwork {
      ssid: string;
      rssi: number;
      /** Security as Particle's number (see `securityLookup`). */
      sec: number;
      ch: number;
      mdr?: number;
    }

    interface ConfigureOptions {
      ssid: string;
      /** A name of the library's table (`open`, `wpa2_aes`, …) or the number a scan answered. */
      security?: string | number;
      /** Encrypted with the device's public key before it is sent; `publicKey` must come first. */
      password?: string;
      channel?: number | string;
      /** The slot of the stored credentials (default 0). */
      index?: number;
    }

    interface SoftAP {
      readonly host: string;
      readonly port: number;
      readonly timeout: number;
      /** `device-id`: the id in lower case, and whether the device says it is claimed. */
      deviceInfo(cb: Callback<{ id: string; claimed: boolean }>): void;
      /** `public-key`: the device's RSA key, as PEM; kept for `configure`. */
      publicKey(cb: Callback<string>): void;
      /** `set {k: "cc", v: code}`. Throws at once when `code` is not a non-empty string. */
      setClaimCode(code: string, cb: Callback<void>): void;
      /** `scan-ap`. */
      scan(cb: Callback<ScannedNetwork[]>): void;
      /** `configure-ap`: answers the device's JSON (`{r}`) without checking it. Throws at once without a public key. */
      configure(options: ConfigureOptions, cb: Callback<{ r: number; error?: string }>): void;
      /** `connect-ap {idx}`: the device leaves listening mode and joins the network. */
      connect(cb: Callback<void>): void;
      connect(index: number, cb: Callback<void>): void;
      /** `version`. */
      version(cb: Callback<{ v: number }>): void;
      securityLookup(value: number | string): string | null;
      securityValue(name: string): number | undefined;
    }
  }

  /** `new SoftAPSetup(options)` answers a TCP or an HTTP client. */
  const SoftAPSetup: new (options?: SoftAPSetup.Options) => SoftAPSetup.SoftAP;
  export = SoftAPSetup;
}
