// Regenerates src/schema.ts from the OpenAPI document the server serves (`longrun openapi`
// prints the same document); `test/schema.test.mjs` fails when the two drift apart.
import { writeFileSync } from 'node:fs';
import { schemaSource } from './schema-source.mjs';

writeFileSync(new URL('../src/schema.ts', import.meta.url), await schemaSource());
