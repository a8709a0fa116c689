import type { Command } from 'commander';
import { contextOf } from '../lib/context.js';
import { ask, password } from '../lib/prompt.js';
import { fields } from '../lib/resources.js';
import { passwordLogin } from './auth.js';

interface CurrentToken { expires_at: string | null; client: string; client_id: string; scopes: string[]; orgs: unknown[] }

/** `--expires-in S` / `--never-expires` as the token endpoint's `expires_in` (0: never). */
function lifetime(opts: { expiresIn?: string; neverExpires?: boolean }): Record<string, string> {
  if (opts.neverExpires && opts.expiresIn !== undefined) throw new Error('use --expires-in or --never-expires, not both');
  if (opts.neverExpires) return { expires_in: '0' };
  if (opts.expiresIn === undefined) return {};
  if (!/^\d{1,10}$/.test(opts.expiresIn.trim()) || Number(opts.expiresIn) === 0) {
    throw new Error(`--expires-in must be a whole number of seconds above 0 (--never-expires for a token that never expires), not "${opts.expiresIn}"`);
  }
  return { expires_in: opts.expiresIn.trim() };
}

export function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('access tokens: create one for a script, describe or revoke one');

  token.command('create')
    .description('a new access token by username and password (then a two-factor code when MFA is on); printed, not stored in the profile')
    .option('-u, --username <email>', 'the account (asked when absent)')
    .option('--expires-in <seconds>', 'token lifetime in seconds (default: the cloud\'s, 90 days)')
    .option('--never-expires', 'a token that never expires (keep it especially safe)')
    .action(async (opts: { username?: string; expiresIn?: string; neverExpires?: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const extra = lifetime(opts);
      const username = opts.username ?? (await ask('Username: ')).trim();
      const answer = await passwordLogin(ctx.api, username, await password(), extra);
      const expiresAt = answer.expires_in === 0 ? null : new Date(Date.now() + answer.expires_in * 1000).toISOString();
      ctx.out.result(answer, () => answer.access_token);
      if (!ctx.out.json) {
        ctx.out.note(`${expiresAt === null ? 'It never expires' : `It expires at ${expiresAt}`}; it is not stored in the profile: keep it safe, and revoke it with \`skyport token revoke\` when done.`);
      }
    });

  token.command('current')
    .description('the token in use: its client, scopes and expiry')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = await ctx.authed().request<CurrentToken>('GET', '/v1/access_tokens/current');
      ctx.out.result(t, () => fields([
        ['client', t.client_id],
        ['scopes', t.scopes.length === 0 ? 'full' : t.scopes.join(' ')],
        ['expires at', t.expires_at ?? 'never'],
      ]));
    });

  token.command('revoke')
    .description('revoke a token (the token itself is the credential: no login needed)')
    .argument('<token>', 'the access token to revoke')
    .action(async (value: string, _opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const t = value.trim();
      if (t === '') throw new Error('give the token to revoke');
      // DELETE /v1/access_tokens/:token takes no other credential (docs/api.md, "Access tokens").
      const answer = await ctx.api.request<{ ok: true }>('DELETE', `/v1/access_tokens/${encodeURIComponent(t)}`, { anonymous: true });
      const wasProfiles = ctx.profile.token === t;
      if (wasProfiles) await ctx.remember({ token: undefined });
      ctx.out.result(answer, () => `revoked${wasProfiles ? ` (it was the token of profile ${ctx.profileName}, now forgotten)` : ''}`);
    });
}
