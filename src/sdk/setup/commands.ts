import type { SetupKey } from './keys.js';
import { isSecurityCode, needsPassword } from './security.js';
import { scanList, type WifiNetwork } from './wifi.js';

/**
 * The device-setup ("SoftAP") commands of Particle's Wi-Fi firmware, free of any transport: the
 * HTTP and TCP servers pass the command's name and body text here and send back what it answers.
 * Answers are the firmware's, field for field; a refusal is `{"r":-1}` with a readable `error`
 * beside it (the firmware writes no reason; clients look at `r` only).
 */
export type Answer = Record<string, unknown>;

/** Wi-Fi credentials as `configure-ap` left them; the password already decrypted, held in memory only. */
export interface Credentials { ssid: string; security: number; channel: number; password?: string }

/** What the commands read from and change on the device. */
export interface SetupTarget {
  /** The device id, as the cloud knows it. */
  readonly id: string;
  readonly claimed: boolean;
  readonly key: SetupKey;
  readonly networks: readonly WifiNetwork[];
  /** A cellular device has no Wi-Fi step: it lists no networks and takes no credentials. */
  readonly cellular: boolean;
  setClaimCode(code: string): void;
  configure(credentials: Credentials): void;
  /** `connect-ap`: called once the answer is on its way; the device leaves listening mode. */
  connect(): void;
  /** Whether connect() has something to join with. */
  readonly configured: boolean;
}

export interface Outcome {
  answer: Answer;
  /** To do once the answer has been sent. */
  after?: () => void;
}

/** The firmware keeps at most 63 characters of a claim code. */
export const CLAIM_CODE_MAX = 63;
/** The largest request taken (an enterprise network's certificates fit). */
export const MAX_REQUEST_BYTES = 16 * 1024;

export const COMMANDS = ['version', 'device-id', 'scan-ap', 'public-key', 'configure-ap', 'connect-ap', 'set'] as const;

const refuse = (error: string): Outcome => ({ answer: { r: -1, error } });
const ok: Outcome = { answer: { r: 0 } };

export function runCommand(target: SetupTarget, name: string, body: string | undefined): Outcome {
  switch (name) {
    case 'version': return { answer: { v: 2 } };
    case 'device-id': return { answer: { id: target.id.toUpperCase(), c: target.claimed ? '1' : '0' } };
    case 'scan-ap': return { answer: { scans: target.cellular ? [] : scanList(target.networks) } };
    case 'public-key': return { answer: { b: target.key.publicKeyHex, r: 0 } };
    case 'configure-ap': return withBody(name, body, (b) => configure(target, b));
    case 'connect-ap': return withBody(name, body, (b) => connect(target, b));
    case 'set': return withBody(name, body, (b) => set(target, b));
    default: return refuse(`unknown command "${name.slice(0, 40)}"; the device knows ${COMMANDS.join(', ')}`);
  }
}

function withBody(name: string, body: string | undefined, run: (b: Record<string, unknown>) => Outcome): Outcome {
  if (body === undefined || body.trim() === '') return refuse(`${name} needs a JSON object as its body`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return refuse(`${name}: the body is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return refuse(`${name}: the body must be a JSON object`);
  return run(parsed as Record<string, unknown>);
}

const isIndex = (v: unknown) => v === undefined || (Number.isInteger(v) && (v as number) >= 0 && (v as number) < 5);

function configure(target: SetupTarget, b: Record<string, unknown>): Outcome {
  if (target.cellular) return refuse('configure-ap: a cellular device has no Wi-Fi to configure');
  if (!isIndex(b.idx)) return refuse('configure-ap: idx must be a whole number from 0 to 4');
  if (typeof b.ssid !== 'string' || b.ssid === '' || Buffer.byteLength(b.ssid) > 32) return refuse('configure-ap: ssid must be a text of 1 to 32 bytes');
  if (!isSecurityCode(b.sec)) return refuse('configure-ap: sec must be one of the Wi-Fi security codes (0 open, 0x400004 WPA2-AES, ...)');
  // softap-setup sends parseInt() of an absent channel, NaN, which JSON writes as null: 0 lets the device pick.
  const ch = b.ch ?? 0;
  if (!Number.isInteger(ch) || (ch as number) < 0 || (ch as number) > 165) return refuse('configure-ap: ch must be a channel number from 0 to 165');
  let password: string | undefined;
  if (needsPassword(b.sec)) {
    if (typeof b.pwd !== 'string') return refuse('configure-ap: a secured network needs pwd, the password encrypted with the device\'s public key (hex)');
    const plain = target.key.decrypt(b.pwd);
    if (plain instanceof Error) return refuse(`configure-ap: ${plain.message}`);
    password = plain.toString('utf8');
  } else if (b.pwd !== undefined && typeof b.pwd !== 'string') {
    return refuse('configure-ap: pwd must be a hex text');
  }
  for (const field of ['eap', 'oi', 'ii', 'crt', 'ek', 'key', 'ca'] as const) {
    const v = b[field];
    if (v !== undefined && typeof v !== (field === 'eap' ? 'number' : 'string')) return refuse(`configure-ap: ${field} has the wrong type`);
  }
  // Saved at once, as the firmware does; joined only on connect-ap.
  target.configure({ ssid: b.ssid, security: b.sec, channel: ch as number, ...(password === undefined ? {} : { password }) });
  return ok;
}

function connect(target: SetupTarget, b: Record<string, unknown>): Outcome {
  if (!isIndex(b.idx)) return refuse('connect-ap: idx must be a whole number from 0 to 4');
  if (!target.cellular && !target.configured) return refuse('connect-ap: no Wi-Fi network is configured; send configure-ap first');
  return { answer: { r: 0 }, after: () => target.connect() };
}

function set(target: SetupTarget, b: Record<string, unknown>): Outcome {
  if (b.k !== 'cc') return refuse('set: the only key is "cc", the claim code');
  if (typeof b.v !== 'string' || b.v === '') return refuse('set: v must be the claim code, a non-empty text');
  target.setClaimCode(b.v.slice(0, CLAIM_CODE_MAX));
  return ok;
}
