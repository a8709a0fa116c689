/**
 * A CONNACK that refused the device (docs/device-protocol.md, "Connecting"). `final` says the
 * SDK stopped trying: the same CONNECT would be refused again.
 */
export class ConnectionRefusedError extends Error {
  constructor(readonly code: number, readonly final: boolean, reason: string) {
    super(`the cloud refused the connection (CONNACK ${code}: ${reason})${final ? '' : '; retrying later'}`);
    this.name = 'ConnectionRefusedError';
  }
}

/** Bad device id or secret (or an id the cloud will not take): reconnecting would not help. */
export class CredentialsRefusedError extends ConnectionRefusedError {
  constructor(code: number, reason = 'bad device id or secret') {
    super(code, true, reason);
    this.name = 'CredentialsRefusedError';
  }
}

/** MQTT 3.1.1 return codes and MQTT 5 reason codes the SDK gives up on. */
const FINAL: Record<number, string> = {
  1: 'protocol version not accepted', 2: 'client id refused', 4: 'bad device id or secret',
  0x84: 'protocol version not accepted', 0x85: 'client id refused', 0x86: 'bad device id or secret',
  0x87: 'not authorized', 0x8c: 'bad authentication method',
};

/**
 * Too many failed attempts (3.1.1 code 5, MQTT 5 0x8A). The lock-out ends by itself and attempts
 * made while locked out do not extend it, so a device with the right secret keeps trying, slowly:
 * giving up would leave an unattended device offline for good because of someone else's guesses
 * from the same address.
 */
const BANNED = new Set([5, 0x8a]);

/** The error a refused CONNACK means, or null for anything else (network errors, code 3...). */
export function refusal(code: unknown): ConnectionRefusedError | null {
  if (typeof code !== 'number') return null;
  const reason = FINAL[code];
  if (reason !== undefined) return new CredentialsRefusedError(code, reason);
  if (BANNED.has(code)) return new ConnectionRefusedError(code, false, 'too many failed attempts');
  return null;
}

/** The cloud refused a claim code (`claim_code_invalid`, `device_claimed`): presenting it again would not help. */
export class ClaimRefusedError extends Error {
  constructor(readonly code: string) {
    super(`claim refused: ${code}`);
    this.name = 'ClaimRefusedError';
  }
}
