import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signatures of the Standard Webhooks specification (docs/webhooks.md, "Verifying a delivery"):
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one entry per valid
 * secret separated by spaces, so that a receiver keeps verifying through a secret rotation.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 32 random bytes in base64. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string | Buffer): string {
  return secrets.map((secret) => {
    const mac = createHmac('sha256', keyOf(secret));
    mac.update(`${id}.${timestampSeconds}.`);
    mac.update(body);
    return `v1,${mac.digest('base64')}`;
  }).join(' ');
}
