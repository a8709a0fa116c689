/** The part of a pino logger that services and the gateway use; keeps them free of HTTP types. */
export interface Log {
  error(obj: object, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}
