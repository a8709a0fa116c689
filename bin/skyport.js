#!/usr/bin/env node
// The `skyport` command. Runs the compiled CLI (npm run build, which npm start runs first).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('skyport: not built yet; run `npm run build` (npm start does it for you)\n');
  process.exit(1);
}
const { runCli } = await import(entry.href);
await runCli(process.argv.slice(2));
