/**
 * The files --cacert, --cert and --key name (and --cacertdir's), read once before any engine
 * starts: a file that holds no certificate or key, a certificate that does
 * not parse, a key that is not the certificate's, is bad input (one line
 * naming the flag and the file, exit 2), the same for both engines, instead
 * of a TLS library's own text at connect time. OpenSSL (node:crypto) parses
 * them, as redis-cli would: an X.509 v1 certificate is a certificate.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { shown } from './flag-values.js';
import { UsageError } from './usage-error.js';

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function readText(flag: string, file: string): string {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch (err) {
    throw new UsageError(`${flag}: ${shown(file)} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** Every PEM certificate of `file`, each parsed; at least one. */
export function readCertificates(flag: string, file: string): X509Certificate[] {
  const blocks = readText(flag, file).match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw new UsageError(`${flag}: ${shown(file)} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new UsageError(`${flag}: certificate ${i + 1} in ${shown(file)} cannot be parsed`);
    }
  });
}

/** The private key of `file`: unencrypted PEM (PKCS#8, PKCS#1 or SEC1), what both engines load. */
export function readPrivateKey(flag: string, file: string): KeyObject {
  const text = readText(flag, file);
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text)) {
    throw new UsageError(`${flag}: ${shown(file)} is an encrypted private key; give it unencrypted (openssl pkey -in KEY -out PLAIN.key)`);
  }
  if (!/-----BEGIN (RSA |EC )?PRIVATE KEY-----/.test(text)) {
    throw new UsageError(`${flag}: ${shown(file)} holds no PEM private key (-----BEGIN PRIVATE KEY-----)`);
  }
  try {
    return createPrivateKey(text);
  } catch {
    throw new UsageError(`${flag}: the private key in ${shown(file)} cannot be parsed`);
  }
}

/** The certificate's subject as one line (`CN=localhost, O=…`), for messages. */
export function subjectLine(cert: X509Certificate): string {
  return cert.subject.split('\n').join(', ');
}

/**
 * How OpenSSL names a certificate in a CA folder (`openssl rehash`,
 * c_rehash): its subject's hash, a dot, a number. OpenSSL (redis-cli,
 * redis-server) looks a CA up in `-CApath`/`--cacertdir` by that name and
 * reads no other file, so both engines read those files alone (the hash
 * itself is not computed: a file so named is taken as it is).
 */
export const HASHED_NAME = /^[0-9a-f]{8}\.\d+$/;

/** The files of `dir` (not folders) that hold a PEM certificate that parses, by name; unreadable ones skipped. */
function certificateFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => {
    try {
      const file = path.join(dir, name);
      const block = fs.statSync(file).isFile() ? fs.readFileSync(file, 'latin1').match(CERTIFICATE_BLOCK)?.[0] : undefined;
      return block !== undefined && new X509Certificate(block) !== null;
    } catch {
      return false;
    }
  });
}

/**
 * --cacertdir: a folder where OpenSSL would find no CA is bad input (redis-cli
 * given it refuses every server): one with certificates under other names
 * (what `cp ca.pem DIR` makes) is told to run `openssl rehash`.
 */
export function checkCaFolder(dir: string): void {
  let found: string[];
  try {
    found = certificateFiles(dir);
  } catch (err) {
    throw new UsageError(`--cacertdir: ${shown(dir)} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (found.some((name) => HASHED_NAME.test(name))) return;
  if (found.length === 0) throw new UsageError(`--cacertdir: ${shown(dir)} holds no PEM certificate`);
  const some = found.slice(0, 3).join(', ') + (found.length > 3 ? ', …' : '');
  throw new UsageError(
    `--cacertdir: ${shown(dir)} holds certificates (${some}) but none under the name OpenSSL looks a CA up by (its subject's hash: HASH.0), so redis-cli and redis-server would not find them either: run openssl rehash on the folder`,
  );
}

/** --cacert, and --cert with --key: readable, parsable, the key the certificate's. */
export function checkTlsFiles(files: { cacert: string | null; cert: string | null; key: string | null }): void {
  if (files.cacert !== null) readCertificates('--cacert', files.cacert);
  if (files.cert === null || files.key === null) return;
  const [cert] = readCertificates('--cert', files.cert);
  const key = readPrivateKey('--key', files.key);
  if (!cert.checkPrivateKey(key)) {
    throw new UsageError(`--key: ${shown(files.key)} is not the private key of the certificate in --cert ${shown(files.cert)} (${subjectLine(cert)})`);
  }
}
