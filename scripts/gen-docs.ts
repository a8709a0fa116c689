// Writes docs/configuration.md from the settings table (npm run docs:config).
import { writeFileSync } from 'node:fs';
import { configurationDoc } from '../src/config/settings-doc.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationDoc());
console.log('wrote docs/configuration.md');
