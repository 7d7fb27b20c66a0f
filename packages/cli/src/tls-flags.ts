/**
 * The TLS flags (--cacert, --cacertdir, --cert, --key, --insecure, --sni,
 * --tls-ciphers, --tls-ciphersuites) to a Plan's TlsPlan: each file there
 * and readable, the certificates and key parsed (tls-files.ts), ciphers
 * both engines have, and no TLS flag without --tls.
 */
import fs from 'node:fs';
import type { TlsPlan } from './engine-js/plan.js';
import { TLS12_CIPHERS, TLS13_CIPHERSUITES } from './engine-js/transport.js';
import { shown } from './flag-values.js';
import { caFolders, checkCaFolder } from './ca-folder.js';
import { checkTlsFiles } from './tls-files.js';
import { UsageError } from './usage-error.js';

/** The TLS flags' raw values, as commander hands them over. */
export interface RawTlsOptions {
  cacert?: string;
  cacertdir?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
  sni?: string;
  tlsCiphers?: string;
  tlsCiphersuites?: string;
}

/** A file or folder a flag names must be there and readable; the message names both. */
function readablePath(flag: string, raw: unknown, kind: 'file' | 'folder'): string {
  const file = String(raw);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new UsageError(`${flag}: no such ${kind} ${shown(file)}`);
  }
  if (kind === 'file' ? !stat.isFile() : !stat.isDirectory()) throw new UsageError(`${flag}: ${shown(file)} is not a ${kind}`);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch {
    throw new UsageError(`${flag}: ${shown(file)} cannot be read (permission denied)`);
  }
  return file;
}

/** `a:b:c` where every name is one of `known`. */
function cipherList(flag: string, raw: unknown, known: readonly string[]): string {
  const text = String(raw).trim();
  const names = text.split(':').map((n) => n.trim()).filter((n) => n.length > 0);
  if (names.length === 0) throw new UsageError(`${flag} must name at least one cipher (got ${shown(raw)})`);
  for (const name of names) {
    if (!known.includes(name)) {
      throw new UsageError(`${flag}: ${shown(name)} is not a cipher both engines have; choose from ${known.join(', ')}`);
    }
  }
  return names.join(':');
}

/** The TLS flags that need TLS on, in the order messages name them. */
const TLS_FLAGS = [
  ['cacert', '--cacert'],
  ['cacertdir', '--cacertdir'],
  ['cert', '--cert'],
  ['key', '--key'],
  ['insecure', '--insecure'],
  ['sni', '--sni'],
  ['tlsCiphers', '--tls-ciphers'],
  ['tlsCiphersuites', '--tls-ciphersuites'],
] as const;

/**
 * The TLS settings, or null without TLS. `on`: --tls was given (or a URI
 * asked for TLS); a TLS flag without it is a mistake, not silently plain TCP.
 */
export function parseTls(raw: RawTlsOptions, on: boolean): TlsPlan | null {
  if (!on) {
    for (const [field, flag] of TLS_FLAGS) {
      const v = raw[field];
      if (v !== undefined && v !== false) throw new UsageError(`${flag} needs --tls`);
    }
    return null;
  }
  if ((raw.cert === undefined) !== (raw.key === undefined)) throw new UsageError('--cert and --key go together');
  const sni = raw.sni === undefined ? null : String(raw.sni).trim();
  if (sni !== null && !/^[A-Za-z0-9.-]+$/.test(sni)) throw new UsageError(`--sni must be a host name (got ${shown(raw.sni)})`);
  const files = {
    cacert: raw.cacert === undefined ? null : readablePath('--cacert', raw.cacert, 'file'),
    cert: raw.cert === undefined ? null : readablePath('--cert', raw.cert, 'file'),
    key: raw.key === undefined ? null : readablePath('--key', raw.key, 'file'),
  };
  checkTlsFiles(files);
  return {
    cacert: files.cacert,
    cacertdir: raw.cacertdir === undefined ? null : caFolder(String(raw.cacertdir), raw.insecure === true),
    cert: files.cert,
    key: files.key,
    insecure: raw.insecure === true,
    sni,
    ciphers: raw.tlsCiphers === undefined ? null : cipherList('--tls-ciphers', raw.tlsCiphers, TLS12_CIPHERS),
    ciphersuites: raw.tlsCiphersuites === undefined ? null : cipherList('--tls-ciphersuites', raw.tlsCiphersuites, TLS13_CIPHERSUITES),
  };
}

/**
 * --cacertdir: its folders (a ':'-separated list, as OpenSSL takes it: one
 * that does not exist is skipped, as it skips it), each a readable folder,
 * and one where OpenSSL would find a CA (ca-folder.ts);
 * the CA is not looked for under --insecure, which trusts no CA (redis-cli
 * connects then too).
 */
function caFolder(value: string, insecure: boolean): string {
  // OpenSSL skips a folder of the list that does not exist; one that does must be a readable folder.
  const folders = caFolders(value).filter((folder) => fs.existsSync(folder));
  if (folders.length === 0) throw new UsageError(`--cacertdir: no such folder ${shown(value)}`);
  for (const folder of folders) readablePath('--cacertdir', folder, 'folder');
  if (!insecure) checkCaFolder(value);
  return value;
}
