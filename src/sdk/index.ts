/** The Skyport device SDK (docs/sdk.md): `import { createDevice } from 'skyport/device'`. */
export { Device, createDevice } from './device.js';
export type { DeviceOptions, DeviceEventMessage, DeviceState, CloudWarning, ReconnectOptions } from './device.js';
export { ConnectionRefusedError, CredentialsRefusedError } from './errors.js';
export type { VariableType, VariableValue, FunctionHandler, VariableGetter } from './replies.js';
export { backoffDelay } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
export { bind, ConfigStatus } from './config.js';
export type { Binding, Bindings } from './config.js';
