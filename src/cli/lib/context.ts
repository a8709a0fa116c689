import type { Command } from 'commander';
import { createApi, type Api } from './api.js';
import { createOutput, type Output } from './output.js';
import { configDir, loadProfiles, updateProfile, type Profile } from './profiles.js';

/** Where the API is when nothing says otherwise: a cloud started with `npm start` on this machine. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

export interface CliContext {
  api: Api;
  out: Output;
  profileName: string;
  profile: Profile;
  /** Saves fields of the current profile (undefined removes one). */
  remember(change: Partial<Record<keyof Profile, string | undefined>>): Promise<void>;
  /** The API client, or an error saying how to log in. */
  authed(): Api;
}

interface GlobalOptions { apiUrl?: string; profile?: string; json?: boolean }

/** Options every command takes; read with `contextOf(cmd)`. */
export function addGlobalOptions(program: Command): Command {
  return program
    .option('--api-url <url>', 'the cloud\'s API (default: the profile\'s, $SKYPORT_API_URL, or http://127.0.0.1:8080)')
    .option('--profile <name>', 'the profile to use (default: the current one)')
    .option('--json', 'print the answer as JSON, for scripts');
}

/**
 * The API URL and token, most specific first: flags, then the environment (`SKYPORT_API_URL`,
 * `SKYPORT_TOKEN`), then the profile.
 */
export async function contextOf(cmd: Command, env: NodeJS.ProcessEnv = process.env): Promise<CliContext> {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const dir = configDir(env);
  const file = await loadProfiles(dir);
  const profileName = opts.profile ?? env.SKYPORT_PROFILE ?? file.current;
  const profile = file.profiles[profileName] ?? {};
  const apiUrl = opts.apiUrl ?? env.SKYPORT_API_URL ?? profile.apiUrl ?? DEFAULT_API_URL;
  const token = env.SKYPORT_TOKEN ?? profile.token;
  const api = createApi(apiUrl, token);
  return {
    api,
    out: createOutput(opts.json === true),
    profileName,
    profile: { ...profile, apiUrl },
    remember: (change) => updateProfile(profileName, change, dir),
    authed() {
      if (!token) throw new Error(`not logged in (profile ${profileName}): run \`skyport login\` or set SKYPORT_TOKEN`);
      return api;
    },
  };
}
