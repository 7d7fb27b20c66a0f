/**
 * A --cacertdir folder read as OpenSSL reads one (ca-folder.ts): the
 * subject hash against `openssl x509 -hash` for names whose canonical form
 * differs from their encoding, and what is found in folders laid out as
 * users lay them out. The native engine's reading is pinned against the
 * same openssl in crates/respbench-core/src/x509.rs (its unit tests).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCaFolder, hashedName, readCaFolder, subjectHash } from '../src/ca-folder.js';

const SUBJECTS = ['/CN=respbench ca', '/CN=  Mixed   Case\tCA  ', '/C=FR/O=Acme Corp/OU=Ops/CN=root', '/O=Acme/CN=a+serialNumber=42', '/CN=Ünïcode Root/O=ÉTÉ', '/DC=example/DC=test/CN=x'];

let dir: string;
const openssl = (...args: string[]) => spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
const hashOf = (file: string) => openssl('x509', '-hash', '-noout', '-in', file).stdout.trim();

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'respbench-ca-folder-'));
  SUBJECTS.forEach((subject, i) => {
    const made = openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-utf8', '-days', '1', '-keyout', `${i}.key`, '-out', `${i}.pem`, '-subj', subject);
    expect(made.status, made.stderr).toBe(0);
  });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a CA folder as OpenSSL reads it', () => {
  it('hashes a subject as openssl x509 -hash does', () => {
    SUBJECTS.forEach((subject, i) => {
      const file = path.join(dir, `${i}.pem`);
      expect(subjectHash(new X509Certificate(readFileSync(file)).raw)?.toString(16).padStart(8, '0'), subject).toBe(hashOf(file));
    });
  });

  it('takes only names openssl rehash makes: HASH.N, lowercase, no leading zeros', () => {
    expect(hashedName('fb2c8394.0')).toEqual({ hash: 0xfb2c8394, n: 0 });
    expect(hashedName('fb2c8394.12')).toEqual({ hash: 0xfb2c8394, n: 12 });
    for (const name of ['ca.pem', 'FB2C8394.0', 'fb2c839.0', 'fb2c8394.', 'fb2c8394.r0', 'fb2c8394.0.pem', 'fb2c8394.01']) expect(hashedName(name), name).toBeNull();
  });

  it('finds a CA under its hash, from .0 on, and nothing under another name', () => {
    const ca = path.join(dir, '0.pem');
    const other = path.join(dir, '1.pem');
    const [hash, otherHash] = [hashOf(ca), hashOf(other)];
    const folder = (name: string, files: Record<string, string>) => {
      const d = path.join(dir, name);
      mkdirSync(d);
      for (const [as, from] of Object.entries(files)) copyFileSync(from, path.join(d, as));
      return d;
    };
    const cases: Array<[string, Record<string, string>, number]> = [
      ['rehashed', { [`${hash}.0`]: ca, 'ca.pem': ca }, 1],
      ['second of two', { [`${hash}.0`]: other, [`${hash}.1`]: ca }, 1],
      ['.1 without .0', { [`${hash}.1`]: ca }, 0],
      ['leading zero', { [`${hash}.01`]: ca }, 0],
      ['another hash', { [`${otherHash}.0`]: ca }, 0],
      ['own name only', { 'ca.pem': ca }, 0],
    ];
    for (const [name, files, found] of cases) expect(readCaFolder(folder(name.replace(/ /g, '-'), files)).found, name).toHaveLength(found);
    writeFileSync(path.join(folder('junk', {}), `${hash}.0`), 'not a certificate\n');
    expect(() => checkCaFolder(path.join(dir, 'junk'))).toThrow(/holds no PEM certificate$/);
    expect(() => checkCaFolder(path.join(dir, 'another-hash'))).toThrow(new RegExp(`\\(under its subject's hash: ${otherHash}\\.0 as ${hash}\\.0\\)`));
  });
});
