#!/usr/bin/env node
/**
 * Sets one version on everything that is released together:
 *
 *   packages/cli, packages/report, packages/native      (package.json version)
 *   packages/native/npm/<platform>/package.json         (version, as `napi version` would)
 *   @respbench/native's optionalDependencies            (the platform packages, exact version)
 *   packages/native/index.js                            (the version the generated loader checks,
 *                                                        exactly what the next `napi build` writes)
 *   Cargo.toml [workspace.package] and Cargo.lock       (the crates, so `cargo` agrees)
 *
 * Usage: node scripts/version.mjs <x.y.z[-pre]> | patch | minor | major
 *        [--root <dir>]  (another checkout; the tests use a copy)
 *        [--check]       (change nothing; exit 1 and list what disagrees)
 *
 * Dependencies between the packages are `workspace:*`; pnpm pack writes the
 * exact version into the tarballs, so they need no bump. See docs/release.md.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$/;
const PACKAGES = ['packages/cli', 'packages/report', 'packages/native'];

function fail(message) {
  console.error(`version: ${message}`);
  process.exit(1);
}

const args = process.argv.slice(2);
let root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let wanted = null;
let check = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--root') root = path.resolve(args[++i] ?? fail('--root needs a directory'));
  else if (args[i] === '--check') check = true;
  else if (wanted === null) wanted = args[i];
  else fail(`unexpected argument "${args[i]}"`);
}
if (!check && wanted === null) fail('usage: node scripts/version.mjs <x.y.z> | patch | minor | major [--check]');

const at = (rel) => path.join(root, rel);
const readJson = (rel) => JSON.parse(readFileSync(at(rel), 'utf8'));
const writeJson = (rel, value) => writeFileSync(at(rel), `${JSON.stringify(value, null, 2)}\n`);

const native = readJson('packages/native/package.json');
const current = native.version;
const platformDirs = readdirSync(at('packages/native/npm'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(at(`packages/native/npm/${d.name}/package.json`)))
  .map((d) => `packages/native/npm/${d.name}`)
  .sort();

if (check) {
  const wrong = [];
  const expect = wanted ?? current;
  for (const rel of [...PACKAGES, ...platformDirs]) {
    const v = readJson(`${rel}/package.json`).version;
    if (v !== expect) wrong.push(`${rel}/package.json: version ${v}`);
  }
  const platformNames = platformDirs.map((d) => readJson(`${d}/package.json`).name).sort();
  const optional = native.optionalDependencies ?? {};
  if (JSON.stringify(Object.keys(optional).sort()) !== JSON.stringify(platformNames)) {
    wrong.push(`optionalDependencies of @respbench/native (${Object.keys(optional).join(', ')}) are not the platform packages (${platformNames.join(', ')})`);
  }
  for (const [name, v] of Object.entries(optional)) if (v !== expect) wrong.push(`optionalDependencies["${name}"]: ${v}`);
  for (const v of loaderVersions(readFileSync(at('packages/native/index.js'), 'utf8'))) {
    if (v !== expect) wrong.push(`packages/native/index.js checks for ${v}`);
  }
  const cargoVersion = workspaceCargoVersion(readFileSync(at('Cargo.toml'), 'utf8'));
  if (cargoVersion !== expect) wrong.push(`Cargo.toml [workspace.package] version ${cargoVersion}`);
  if (wrong.length) fail(`not everything is at ${expect}:\n  ${wrong.join('\n  ')}`);
  console.log(`version: everything is at ${expect}`);
  process.exit(0);
}

const next = bump(current, wanted);

for (const rel of [...PACKAGES, ...platformDirs]) {
  const pkg = readJson(`${rel}/package.json`);
  pkg.version = next;
  if (rel === 'packages/native') {
    for (const name of Object.keys(pkg.optionalDependencies ?? {})) pkg.optionalDependencies[name] = next;
  }
  writeJson(`${rel}/package.json`, pkg);
}

// The generated loader compares each platform package's version with this
// literal; napi writes it from package.json on every build.
const loaderPath = at('packages/native/index.js');
const loader = readFileSync(loaderPath, 'utf8');
const quoted = escapeRegExp(current);
writeFileSync(
  loaderPath,
  loader
    .replace(new RegExp(`(bindingPackageVersion !== ')${quoted}(')`, 'g'), `$1${next}$2`)
    .replace(new RegExp(`(expected )${quoted}( but got)`, 'g'), `$1${next}$2`),
);

const cargoToml = readFileSync(at('Cargo.toml'), 'utf8');
const tomlOut = cargoToml.replace(/(\[workspace\.package\][^[]*?\nversion\s*=\s*")[^"]*(")/, `$1${next}$2`);
if (tomlOut === cargoToml && workspaceCargoVersion(cargoToml) !== next) fail('Cargo.toml has no [workspace.package] version to set');
writeFileSync(at('Cargo.toml'), tomlOut);

if (existsSync(at('Cargo.lock'))) {
  const members = cargoMemberNames();
  const lock = readFileSync(at('Cargo.lock'), 'utf8');
  writeFileSync(
    at('Cargo.lock'),
    lock.replace(/\[\[package\]\]\nname = "([^"]+)"\nversion = "[^"]*"/g, (all, name) =>
      members.has(name) ? `[[package]]\nname = "${name}"\nversion = "${next}"` : all,
    ),
  );
}

console.log(`version: ${current} -> ${next} (${PACKAGES.length + platformDirs.length} packages, optionalDependencies, loader, Cargo)`);

function bump(from, how) {
  if (SEMVER.test(how)) return how;
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(from);
  if (!m) fail(`current version "${from}" is not x.y.z`);
  const [maj, min, pat] = m.slice(1).map(Number);
  if (how === 'major') return `${maj + 1}.0.0`;
  if (how === 'minor') return `${maj}.${min + 1}.0`;
  if (how === 'patch') return `${maj}.${min}.${pat + 1}`;
  return fail(`"${how}" is not a version (x.y.z or x.y.z-pre) nor patch/minor/major`);
}

function loaderVersions(text) {
  return [...text.matchAll(/bindingPackageVersion !== '([^']+)'/g)].map((m) => m[1]);
}

function workspaceCargoVersion(text) {
  return /\[workspace\.package\][^[]*?\nversion\s*=\s*"([^"]*)"/.exec(text)?.[1] ?? null;
}

/** Names of the workspace crates whose version comes from [workspace.package]. */
function cargoMemberNames() {
  const names = new Set();
  const dirs = ['packages/native'];
  if (existsSync(at('crates'))) for (const d of readdirSync(at('crates'))) dirs.push(`crates/${d}`);
  for (const dir of dirs) {
    const file = at(`${dir}/Cargo.toml`);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const name = /\[package\][^[]*?\nname\s*=\s*"([^"]+)"/.exec(text)?.[1];
    if (name && /\nversion\.workspace\s*=\s*true/.test(text)) names.add(name);
  }
  return names;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
