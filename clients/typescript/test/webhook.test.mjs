// verifyWebhook against signatures made independently with node:crypto.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { verifyWebhook } from '../dist/esm/index.js';

const secret = '0123456789abcdef-hook';
const body = JSON.stringify({ id: 'run_1#3#completed', run_id: 'run_1', status: 'completed' });
const sign = (s, b) => `sha256=${createHmac('sha256', s).update(b).digest('hex')}`;

test('a delivery signed with the secret verifies, as a string or as bytes', async () => {
  assert.equal(await verifyWebhook(secret, body, sign(secret, body)), true);
  assert.equal(await verifyWebhook(secret, new TextEncoder().encode(body), sign(secret, body).toUpperCase().replace('SHA256', 'sha256')), true);
});

test('a changed body, another secret or a malformed header does not verify', async () => {
  assert.equal(await verifyWebhook(secret, body.replace('completed', 'failed'), sign(secret, body)), false);
  assert.equal(await verifyWebhook('another-secret-0123', body, sign(secret, body)), false);
  for (const header of [undefined, null, '', 'sha256=', 'sha1=abc', sign(secret, body).slice(0, -2), `${sign(secret, body)}00`]) {
    assert.equal(await verifyWebhook(secret, body, header), false, String(header));
  }
});
