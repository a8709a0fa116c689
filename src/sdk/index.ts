/** The Skyport device SDK (docs/sdk.md): `import { createDevice } from 'skyport/device'`. */
export { Device, createDevice, ListeningRefusedError } from './device.js';
export type { DeviceOptions, DeviceEventMessage, DeviceState, CloudWarning, ReconnectOptions } from './device.js';
export { ClaimRefusedError, ConnectionRefusedError, CredentialsRefusedError } from './errors.js';
export type { VariableType, VariableValue, FunctionHandler, VariableGetter } from './replies.js';
export { backoffDelay } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
export { bind, ConfigStatus } from './config.js';
export type { FirmwareKey, FirmwareOffer, FirmwareUpdate } from './firmware.js';
export type { Binding, Bindings } from './config.js';
export type { Listening, ListenOptions, SetupProgress, SetupStep, ClaimOutcome } from './setup/listening.js';
export { DEFAULT_NETWORKS, parseNetworks } from './setup/wifi.js';
export type { WifiNetwork } from './setup/wifi.js';
export { SECURITY_CODES } from './setup/security.js';
export type { SecurityName } from './setup/security.js';
