// src/schema.ts is what openapi-typescript makes of the server's OpenAPI document today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { schemaSource } from '../scripts/schema-source.mjs';

test('the generated types are in sync with the server document (npm run generate)', async () => {
  const checkedIn = readFileSync(new URL('../src/schema.ts', import.meta.url), 'utf8');
  assert.equal(checkedIn, await schemaSource(), 'src/schema.ts is stale: run `npm run generate`');
});
