import type { FastifyServerOptions } from 'fastify';
import type { Settings } from '../config/settings.js';

/**
 * Log options: JSON lines (pino) with the request id on every line, and no secret in any of
 * them. Tokens travel in headers, in the `access_token` query parameter and in the path of
 * DELETE /v1/access_tokens/:token, so URLs are scrubbed as well as headers.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  // The router and the query parser decode percent-escapes (`access%5Ftoken=` is
  // `access_token=`, `/v1/access%5Ftokens/…` reaches the revoke route), so names are compared
  // decoded and in any letter case.
  let afterAccessTokens = false;
  const path = (q < 0 ? url : url.slice(0, q)).split('/').map((segment) => {
    const name = decoded(segment).toLowerCase();
    if (afterAccessTokens && segment !== '' && name !== 'current') return '[redacted]';
    if (name === 'access_tokens') afterAccessTokens = true;
    return segment;
  }).join('/');
  if (q < 0) return path;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0 || !SECRET_PARAMS.has(decoded(pair.slice(0, eq)).toLowerCase())) return pair;
    return `${pair.slice(0, eq)}=[redacted]`;
  }).join('&');
  return `${path}?${query}`;
}

const SECRET_PARAMS = new Set(['access_token', 'client_secret', 'password', 'refresh_token', 'mfa_token', 'otp', 'recovery_code', 'token']);

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

export function loggerOptions(settings: Pick<Settings, 'logLevel'>): FastifyServerOptions['logger'] {
  return {
    level: settings.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.password', '*.client_secret', '*.access_token', '*.refresh_token', '*.secret'],
      censor: '[redacted]',
    },
    serializers: {
      req(req: { method: string; url: string; ip?: string; headers: Record<string, unknown> }) {
        return { method: req.method, url: redactUrl(req.url), remoteAddress: req.ip, userAgent: req.headers['user-agent'] };
      },
    },
  };
}
