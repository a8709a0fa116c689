import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What a device keeps of a configuration module between runs: the value and the hash the cloud
 * sent with it, one file per module (`<dir>/<module>.json`). A write goes to a temporary file that
 * is then renamed over the old one, so a crash mid-write leaves the old file whole.
 */
export interface SavedModule { version: 1; hash: string; value: Record<string, unknown> }

export async function loadModule(dir: string, module: string): Promise<SavedModule | null> {
  let text: string;
  try {
    text = await readFile(join(dir, `${module}.json`), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const saved = JSON.parse(text) as Partial<SavedModule>;
  if (saved.version !== 1 || typeof saved.hash !== 'string' || typeof saved.value !== 'object' || saved.value === null || Array.isArray(saved.value)) {
    throw new Error(`${join(dir, `${module}.json`)} is not a saved configuration module`);
  }
  return saved as SavedModule;
}

export async function saveModule(dir: string, module: string, saved: SavedModule): Promise<void> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${module}.json`);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(saved), { flush: true });
  await rename(tmp, path);
}
