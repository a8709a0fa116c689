import type { Command } from 'commander';
import { ApiError, type Api } from '../lib/api.js';
import { contextOf } from '../lib/context.js';
import { ask, password } from '../lib/prompt.js';

/** The CLI's own public client (src/services/clients.service.ts): it may only log a person in. */
const CLIENT = { client_id: 'skyport-cli', client_secret: 'skyport-cli' };

interface TokenAnswer { access_token: string; expires_in: number; expires_at?: string | null }

/** The password grant, then the OTP step when the account has MFA on (docs/api.md, "OAuth"). */
export async function passwordLogin(api: Api, username: string, secret: string, extra: Record<string, string> = {}): Promise<TokenAnswer> {
  try {
    return await api.request<TokenAnswer>('POST', '/oauth/token', { anonymous: true, form: { grant_type: 'password', username, password: secret, ...CLIENT, ...extra } });
  } catch (err) {
    const body = err instanceof ApiError ? (err.body as { mfa_token?: string }) : undefined;
    if (!(err instanceof ApiError) || err.code !== 'mfa_required' || !body?.mfa_token) throw err;
    const otp = (await ask('Two-factor code (or a recovery code): ')).trim();
    const recovery = !/^\d{6}$/.test(otp);
    return api.request<TokenAnswer>('POST', '/oauth/token', {
      anonymous: true,
      form: recovery
        ? { grant_type: 'urn:custom:recovery-code', mfa_token: body.mfa_token, recovery_code: otp, ...CLIENT }
        : { grant_type: 'urn:custom:mfa-otp', mfa_token: body.mfa_token, otp, ...CLIENT },
    });
  }
}

export function registerAuthCommands(program: Command): void {
  program.command('login')
    .description('log in with a username and password (then a two-factor code when MFA is on) and remember the token in the profile')
    .option('-u, --username <email>', 'the account (asked when absent)')
    .option('--expires-in <seconds>', 'token lifetime in seconds (default: the cloud\'s, 90 days)')
    .action(async (opts: { username?: string; expiresIn?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const username = opts.username ?? (await ask('Username: ')).trim();
      const answer = await passwordLogin(ctx.api, username, await password(), opts.expiresIn ? { expires_in: opts.expiresIn } : {});
      await ctx.remember({ apiUrl: ctx.api.baseUrl, token: answer.access_token, username });
      ctx.out.result({ username, profile: ctx.profileName, api_url: ctx.api.baseUrl, expires_at: answer.expires_at ?? null },
        () => `logged in as ${username} (profile ${ctx.profileName}, ${ctx.api.baseUrl})`);
    });

  program.command('logout')
    .description('revoke the profile\'s token and forget it')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      if (ctx.profile.token) {
        // A token that is already dead is forgotten all the same.
        await ctx.api.request('DELETE', '/v1/access_tokens/current').catch((err: unknown) => {
          if (!(err instanceof ApiError && err.status === 401)) throw err;
        });
      }
      await ctx.remember({ token: undefined });
      ctx.out.result({ ok: true, profile: ctx.profileName }, () => `logged out (profile ${ctx.profileName})`);
    });

  program.command('whoami')
    .description('the account the token belongs to')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const user = await ctx.authed().request<{ username: string; mfa?: { enabled: boolean } }>('GET', '/v1/user');
      ctx.out.result(user, () => user.username);
    });

  const mfa = program.command('mfa').description('two-factor authentication (TOTP) of the account');
  mfa.command('enable')
    .description('enrol an authenticator app: shows the secret, asks for a code, prints the recovery codes once')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const api = ctx.authed();
      const start = await api.request<{ mfa_token: string; secret: string; otpauth_url: string }>('GET', '/v1/user/mfa-enable');
      ctx.out.note(`Add this account to your authenticator app:\n  secret   ${start.secret}\n  URI      ${start.otpauth_url}`);
      const otp = (await ask('Code from the app: ')).trim();
      const done = await api.request<{ recovery_codes: string[] }>('POST', '/v1/user/mfa-enable', { json: { mfa_token: start.mfa_token, otp } });
      ctx.out.result(done, () => `MFA is on. Recovery codes (each works once; store them now, they are not shown again):\n${done.recovery_codes.map((c) => `  ${c}`).join('\n')}`);
    });
  mfa.command('disable')
    .description('turn MFA off (asks for the password)')
    .action(async (_opts, cmd: Command) => {
      const ctx = await contextOf(cmd);
      await ctx.authed().request('PUT', '/v1/user/mfa-disable', { json: { current_password: await password() } });
      ctx.out.result({ ok: true }, () => 'MFA is off');
    });
}
