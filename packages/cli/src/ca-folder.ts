/**
 * A --cacertdir folder read as OpenSSL (redis-cli, redis-server) reads a
 * CA folder (`-CApath`): a CA is looked up by its subject's hash, in the
 * files HASH.0, HASH.1, … up to the first that is missing, named as
 * `openssl rehash` (c_rehash) names them; no other file is read, and a
 * file is of use when a certificate in it has that hash (all of its
 * certificates are then in the store).
 * Both engines trust what this finds and nothing else of the folder (the
 * native engine's own reading: tls_config.rs `root_store`, x509.rs
 * `name_hash`). A folder where nothing is found is bad input (the CLI,
 * before any engine).
 */
import { createHash, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { derElement, tbsField } from './engine-js/tls-chain.js';
import { shown } from './flag-values.js';
import { pemCertificates, type PemCertificate } from './pem-certificates.js';
import { UsageError } from './usage-error.js';

/** HASH.N as `openssl rehash` names a file: 8 lowercase hex digits, a dot, a number without leading zeros. */
export function hashedName(name: string): { hash: number; n: number } | null {
  const m = /^([0-9a-f]{8})\.(0|[1-9][0-9]*)$/.exec(name);
  return m ? { hash: parseInt(m[1], 16), n: Number(m[2]) } : null;
}

/** A Name string in OpenSSL's canonical form (asn1_string_canon), or null for a type copied as it is. */
function canonicalText(tag: number, bytes: Buffer): Buffer | null {
  let text: Buffer;
  if (tag === 0x0c) text = bytes;
  else if (tag === 0x13 || tag === 0x14 || tag === 0x16 || tag === 0x1a) text = Buffer.from(bytes.toString('latin1'), 'utf8');
  else if (tag === 0x1c) {
    const points: number[] = [];
    for (let i = 0; i + 4 <= bytes.length; i += 4) points.push(bytes.readUInt32BE(i));
    text = Buffer.from(points.filter((p) => p <= 0x10ffff && (p < 0xd800 || p > 0xdfff)).map((p) => String.fromCodePoint(p)).join(''), 'utf8');
  } else if (tag === 0x1e) text = Buffer.from(Buffer.from(bytes.subarray(0, bytes.length & ~1)).swap16().toString('utf16le'), 'utf8');
  else return null;
  const space = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d);
  let start = 0;
  let end = text.length;
  while (start < end && space(text[start])) start++;
  while (end > start && space(text[end - 1])) end--;
  const out: number[] = [];
  for (let i = start; i < end; i++) {
    const b = text[i];
    if (space(b)) {
      if (out[out.length - 1] !== 0x20) out.push(0x20);
    } else out.push(b >= 0x41 && b <= 0x5a ? b + 0x20 : b);
  }
  return Buffer.from(out);
}

/** One DER element. */
function element(tag: number, contents: Buffer): Buffer {
  const len = contents.length;
  if (len < 0x80) return Buffer.concat([Buffer.from([tag, len]), contents]);
  const bytes: number[] = [];
  for (let n = len; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), contents]);
}

/**
 * OpenSSL's hash of a certificate's subject (X509_NAME_hash_ex: what
 * `openssl x509 -hash` prints): the first four bytes, little-endian, of the
 * SHA-1 of the Name's canonical encoding. null when the DER does not parse.
 */
export function subjectHash(raw: Buffer): number | null {
  const subject = tbsField(raw, 4);
  if (!subject || raw[subject.at] !== 0x30) return null;
  const canon: Buffer[] = [];
  for (let r = subject.start; r < subject.end; ) {
    const rdn = raw[r] === 0x31 ? derElement(raw, r) : null;
    if (!rdn) return null;
    const attributes: Buffer[] = [];
    for (let a = rdn.start; a < rdn.end; ) {
      const attribute = raw[a] === 0x30 ? derElement(raw, a) : null;
      const oid = attribute && raw[attribute.start] === 0x06 ? derElement(raw, attribute.start) : null;
      const value = oid && derElement(raw, oid.end);
      if (!attribute || !oid || !value) return null;
      const headerOf = (e: { start: number }, at: number) => raw.subarray(at, e.start);
      const text = canonicalText(raw[oid.end], raw.subarray(value.start, value.end));
      const encodedValue = text === null ? Buffer.concat([headerOf(value, oid.end), raw.subarray(value.start, value.end)]) : element(0x0c, text);
      attributes.push(element(0x30, Buffer.concat([raw.subarray(attribute.start, oid.end), encodedValue])));
      a = attribute.end;
    }
    // DER orders a SET OF by its elements' encodings.
    attributes.sort(Buffer.compare);
    canon.push(element(0x31, Buffer.concat(attributes)));
    r = rdn.end;
  }
  return createHash('sha1').update(Buffer.concat(canon)).digest().readUInt32LE(0);
}

/** --cacertdir's folders: OpenSSL takes a ':'-separated list of them (its LIST_SEPARATOR_CHAR), empty names aside. */
export function caFolders(value: string): string[] {
  return value.split(':').filter((folder) => folder !== '');
}

/** A certificate file of a folder that OpenSSL would not read. */
interface Unread {
  name: string;
  file: string;
}

/** What OpenSSL finds in one folder: the PEM certificates (as written: a trusted one's settings with it), and the certificate files it would not read. */
function readOneFolder(dir: string): { found: PemCertificate[]; elsewhere: Unread[] } {
  const names = new Set(fs.readdirSync(dir));
  const found: PemCertificate[] = [];
  const elsewhere: Unread[] = [];
  for (const name of [...names].sort()) {
    let blocks: PemCertificate[];
    const file = path.join(dir, name);
    try {
      // A file OpenSSL cannot read whole (a malformed block) gives it no CA.
      blocks = fs.statSync(file).isFile() ? pemCertificates(fs.readFileSync(file, 'latin1'), 'ca-folder') : [];
    } catch {
      continue;
    }
    const certs = blocks.flatMap(({ pem, plain, trust }) => {
      try {
        return [{ block: { pem, plain, trust }, raw: new X509Certificate(plain).raw }];
      } catch {
        return [];
      }
    });
    if (certs.length === 0) continue;
    const named = hashedName(name);
    const reached = named !== null && Array.from({ length: named.n }, (_, k) => `${named.hash.toString(16).padStart(8, '0')}.${k}`).every((n) => names.has(n));
    // OpenSSL reads the file when it looks that hash up, and then keeps every certificate in it.
    if (reached && certs.some((c) => subjectHash(c.raw) === named!.hash)) found.push(...certs.map((c) => c.block));
    else elsewhere.push({ name, file });
  }
  return { found, elsewhere };
}

/** What OpenSSL finds in --cacertdir's folders: the PEM certificates, and the certificate files it would not read. */
export function readCaFolder(value: string): { found: PemCertificate[]; elsewhere: Unread[] } {
  // A folder of the list that does not exist is skipped, as OpenSSL skips it.
  const all = caFolders(value).filter((dir) => fs.existsSync(dir)).map(readOneFolder);
  return { found: all.flatMap((f) => f.found), elsewhere: all.flatMap((f) => f.elsewhere) };
}

/** --cacertdir: folders where OpenSSL would find no CA are bad input (redis-cli given them refuses every server), with the name each certificate should have. */
export function checkCaFolder(value: string): void {
  let folder: { found: PemCertificate[]; elsewhere: Unread[] };
  try {
    folder = readCaFolder(value);
  } catch (err) {
    throw new UsageError(`--cacertdir: ${shown(value)} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (folder.found.length > 0) return;
  if (folder.elsewhere.length === 0) throw new UsageError(`--cacertdir: ${shown(value)} holds no PEM certificate`);
  const expected = folder.elsewhere.slice(0, 3).map(({ name, file }) => {
    const block = pemCertificates(fs.readFileSync(file, 'latin1'), 'ca-folder')[0].plain;
    const hash = subjectHash(new X509Certificate(block).raw);
    return `${name}${hash === null ? '' : ` as ${hash.toString(16).padStart(8, '0')}.0`}`;
  });
  const more = folder.elsewhere.length > 3 ? ', …' : '';
  throw new UsageError(
    `--cacertdir: ${shown(value)} holds certificates, but none where OpenSSL looks a CA up (under its subject's hash: ${expected.join(', ')}${more}), so redis-cli and redis-server would not find them either: run openssl rehash on the folder`,
  );
}
