// Writes console/src/lib/api-schema.d.ts from the server's OpenAPI document (npm run docs:api-types).
import { writeFileSync } from 'node:fs';
import { apiTypes, API_TYPES_FILE } from './api-types.js';

writeFileSync(API_TYPES_FILE, await apiTypes());
console.log('wrote console/src/lib/api-schema.d.ts');
