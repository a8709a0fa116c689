import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * examples/simple-auth-web: plain JavaScript that the tests' compilation does not copy into
 * .build/. It is found beside the repository's package.json, which .build/package.json links to
 * (scripts/run-tests.mjs), so that the compiled tests and the sources alike reach the same folder.
 */
export const WEB_EXAMPLE = join(dirname(realpathSync(fileURLToPath(new URL('../../package.json', import.meta.url)))), 'examples', 'simple-auth-web');

/** One of its modules, imported as the browser would (`name` such as 'rsa.js'), typed by the caller. */
export function importWebExample<T>(name: string): Promise<T> {
  return import(pathToFileURL(join(WEB_EXAMPLE, name)).href) as Promise<T>;
}
