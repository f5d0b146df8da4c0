// Builds dist/ for both module systems from src/: dist/esm (ES modules) and dist/cjs (CommonJS,
// marked by its own package.json), each with its .d.ts files. It is the `prepare` script, so
// `npm ci` here, `npm pack`, `npm publish` and `npm install <path to this folder>` all run it.
// In the last case npm does not install this folder's devDependencies, so the build installs
// them itself first (`npm ci` from the lock file).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = join(dirname(fileURLToPath(import.meta.url)), '..');

function tscPath() {
  try {
    return createRequire(join(here, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return undefined;
  }
}

let tsc = tscPath();
if (!tsc) {
  console.error(`@longrun/client: installing its build tools into ${join(here, 'node_modules')} (npm ci)`);
  // The installing command's own settings (a global install, another prefix) are not this one's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) =>
    !/^npm_config_(global|location|prefix|save|omit|include|production|only|also|install_links)/i.test(k)));
  const npm = process.env.npm_execpath;
  const [cmd, args] = npm && existsSync(npm) ? [process.execPath, [npm]] : ['npm', []];
  execFileSync(cmd, [...args, 'ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: here, env, stdio: ['ignore', 'inherit', 'inherit'],
  });
  tsc = tscPath();
  if (!tsc) throw new Error('@longrun/client: typescript is still missing after npm ci');
}

rmSync(join(here, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', join(here, project)], { stdio: 'inherit' });
}
mkdirSync(join(here, 'dist', 'cjs'), { recursive: true });
writeFileSync(join(here, 'dist', 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
