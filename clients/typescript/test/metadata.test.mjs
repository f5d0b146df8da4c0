// Ready to publish: the package says what it is, where it comes from and what it needs, and its
// version is the binary's (the workspace version in Cargo.toml), with a CHANGELOG.md entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { longrunBin } from '../scripts/schema-source.mjs';

const read = (path) => readFileSync(new URL(path, import.meta.url), 'utf8');
const pkg = JSON.parse(read('../package.json'));

test('the version is the binary\'s and the workspace\'s, in the lock file too, and the changelog has it', () => {
  // Arrange
  const workspace = /\[workspace\.package\][^[]*?\nversion\s*=\s*"([^"]+)"/.exec(read('../../../Cargo.toml'))?.[1];
  const binary = execFileSync(longrunBin(), ['--version'], { encoding: 'utf8' }).trim().split(' ').pop();
  const lock = JSON.parse(read('../package-lock.json'));

  // Assert
  assert.equal(pkg.version, workspace, 'package.json and Cargo.toml [workspace.package]');
  assert.equal(pkg.version, binary, 'package.json and `longrun --version`');
  assert.equal(lock.version, pkg.version);
  assert.equal(lock.packages[''].version, pkg.version);
  assert.match(read('../../../CHANGELOG.md'), new RegExp(`^## ${pkg.version.replaceAll('.', '\\.')}\\b`, 'm'));
});

test('the package metadata names its license, repository, keywords, engines and files', () => {
  assert.equal(pkg.license, 'Apache-2.0');
  assert.ok(pkg.description.length > 20, pkg.description);
  assert.match(pkg.repository.url, /^git\+https:\/\/github\.com\/.+\.git$/);
  assert.equal(pkg.repository.directory, 'clients/typescript');
  assert.ok(pkg.homepage && pkg.bugs?.url);
  assert.ok(pkg.keywords.includes('longrun'));
  assert.equal(pkg.engines.node, '>=20');
  assert.deepEqual(pkg.files, ['dist', 'src', 'README.md', 'LICENSE']);
  assert.equal(pkg.publishConfig.access, 'public', 'a scoped package is published public');
  assert.match(read('../LICENSE'), /Apache License\s+Version 2\.0/);
});
