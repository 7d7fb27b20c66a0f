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
import { keyStrength, MIN_SECURITY_BITS, weakDigest } from './engine-js/tls-chain.js';
import { shown } from './flag-values.js';
import { MalformedPem, pemCertificates } from './pem-certificates.js';
import { UsageError } from './usage-error.js';

function readText(flag: string, file: string): string {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch (err) {
    throw new UsageError(`${flag}: ${shown(file)} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/**
 * Every PEM certificate of `file`, each parsed; at least one. `trusted`: a
 * list of trusted CAs (--cacert), where OpenSSL also reads TRUSTED
 * CERTIFICATE blocks; --cert is read as a certificate chain, where it does not.
 */
export function readCertificates(flag: string, file: string, trusted: boolean): X509Certificate[] {
  let blocks: string[];
  try {
    blocks = pemCertificates(readText(flag, file), trusted ? 'ca-file' : 'chain').map((c) => c.plain);
  } catch (err) {
    if (!(err instanceof MalformedPem)) throw err;
    throw new UsageError(`${flag}: ${shown(file)} is not a PEM certificate file (a PEM block is malformed)`);
  }
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
    // A UTF-8 byte order mark before the key, as OpenSSL's PEM reader skips it.
    return createPrivateKey(text.replace(/^\xEF\xBB\xBF/, ''));
  } catch {
    throw new UsageError(`${flag}: the private key in ${shown(file)} cannot be parsed`);
  }
}

/** The certificate's subject as one line (`CN=localhost, O=…`), for messages. */
export function subjectLine(cert: X509Certificate): string {
  return cert.subject.split('\n').join(', ');
}

/**
 * A client certificate OpenSSL's default security level refuses to load
 * (Debian's level 2: redis-cli says "Invalid client certificate" before it
 * connects, redis-server refuses it): a key under 112-bit security, a
 * signature with SHA-1 or weaker (a self-signed one's own aside). The JS
 * engine's OpenSSL (level 1) and rustls would send it, or fail in their
 * own words.
 */
function checkClientStrength(file: string, cert: X509Certificate): void {
  const strength = keyStrength(cert.raw);
  if (strength !== null && strength[1] < MIN_SECURITY_BITS) {
    throw new UsageError(`--cert: ${shown(file)} has a ${strength[0]} key (${strength[1]}-bit security; redis-cli and redis-server ask for at least ${MIN_SECURITY_BITS})`);
  }
  const digest = cert.subject === cert.issuer ? null : weakDigest(cert.raw);
  if (digest !== null) throw new UsageError(`--cert: ${shown(file)} is signed with ${digest} (redis-cli and redis-server refuse SHA-1 and weaker digests)`);
}

/** The digests TLS signs RSA-PSS with, and their lengths (a TLS salt's). */
const TLS_PSS_DIGESTS: Record<string, number> = { sha256: 32, sha384: 48, sha512: 64 };

/**
 * An RSA-PSS client key whose parameters allow no TLS signature: TLS 1.3
 * signs with SHA-256/384/512 and a salt of the digest's length, so a key
 * held to another digest, or to a longer salt, cannot sign a handshake
 * (redis-cli fails with OpenSSL's "EVP lib"): bad input, for both engines.
 */
function checkPssClientKey(file: string, key: KeyObject): void {
  if (key.asymmetricKeyType !== 'rsa-pss') return;
  const { hashAlgorithm, saltLength } = key.asymmetricKeyDetails ?? {};
  if (hashAlgorithm === undefined) return;
  const length = TLS_PSS_DIGESTS[hashAlgorithm];
  if (length !== undefined && (saltLength ?? 0) <= length) return;
  const why = length === undefined ? `${hashAlgorithm}, which TLS does not sign RSA-PSS with` : `${hashAlgorithm} with a salt of at least ${saltLength} bytes, more than TLS signs with (${length}, the digest's length)`;
  throw new UsageError(`--key: ${shown(file)} is an RSA-PSS key whose parameters hold it to ${why}: no TLS handshake can be signed with it (redis-cli and redis-server refuse it too)`);
}

/** --cacert, and --cert with --key: readable, parsable, the key the certificate's. */
export function checkTlsFiles(files: { cacert: string | null; cert: string | null; key: string | null }): void {
  if (files.cacert !== null) readCertificates('--cacert', files.cacert, true);
  if (files.cert === null || files.key === null) return;
  const [cert] = readCertificates('--cert', files.cert, false);
  checkClientStrength(files.cert, cert);
  const key = readPrivateKey('--key', files.key);
  checkPssClientKey(files.key, key);
  if (!cert.checkPrivateKey(key)) {
    throw new UsageError(`--key: ${shown(files.key)} is not the private key of the certificate in --cert ${shown(files.cert)} (${subjectLine(cert)})`);
  }
}
