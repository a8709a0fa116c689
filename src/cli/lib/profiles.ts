import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What the CLI remembers per profile: where the cloud is, and the token it logged in with. */
export interface Profile { apiUrl?: string; token?: string; username?: string }

interface ProfileFile { current: string; profiles: Record<string, Profile> }

/**
 * Profiles live in the user's config folder (`$SKYPORT_CONFIG_DIR`, else
 * `$XDG_CONFIG_HOME/skyport`, else `~/.config/skyport`), in `profiles.json`, readable by the user
 * alone (0600, the folder 0700): it holds access tokens.
 */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SKYPORT_CONFIG_DIR) return env.SKYPORT_CONFIG_DIR;
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'skyport');
}

const fileOf = (dir: string) => join(dir, 'profiles.json');

export async function loadProfiles(dir = configDir()): Promise<ProfileFile> {
  let text: string;
  try {
    text = await readFile(fileOf(dir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { current: 'default', profiles: {} };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<ProfileFile>;
    return { current: typeof parsed.current === 'string' ? parsed.current : 'default', profiles: typeof parsed.profiles === 'object' && parsed.profiles ? parsed.profiles : {} };
  } catch {
    throw new Error(`${fileOf(dir)} is not valid JSON; fix or delete it`);
  }
}

export async function saveProfiles(file: ProfileFile, dir = configDir()): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = fileOf(dir);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600); // mode is masked by the umask on creation
  await rename(tmp, path);
}

/** Changes one profile (creating it) and saves; `undefined` fields are removed. */
export async function updateProfile(name: string, change: Partial<Record<keyof Profile, string | undefined>>, dir = configDir()): Promise<void> {
  const file = await loadProfiles(dir);
  const profile: Profile = { ...file.profiles[name] };
  for (const [k, v] of Object.entries(change) as Array<[keyof Profile, string | undefined]>) {
    if (v === undefined) delete profile[k];
    else profile[k] = v;
  }
  file.profiles[name] = profile;
  await saveProfiles(file, dir);
}
