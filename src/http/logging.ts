import type { FastifyServerOptions } from 'fastify';
import type { Settings } from '../config/settings.js';

/**
 * Log options: JSON lines (pino) with the request id on every line, and no secret in any of
 * them. Tokens travel in headers, in the `access_token` query parameter and in the path of
 * DELETE /v1/access_tokens/:token, so URLs are scrubbed as well as headers.
 */
export function redactUrl(url: string): string {
  return url
    .replace(/([?&](?:access_token|client_secret|password|refresh_token|mfa_token|otp)=)[^&]*/gi, '$1[redacted]')
    .replace(/^(\/v1\/access_tokens\/)(?!current(?:[?/]|$))[^?/]+/, '$1[redacted]');
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
