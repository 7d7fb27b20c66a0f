/**
 * PEM certificates as OpenSSL reads them (redis-cli, redis-server): under
 * the label CERTIFICATE, and the two it reads as certificates too, X509
 * CERTIFICATE and, for trusted CAs (`--cacert`, `--cacertdir`), TRUSTED
 * CERTIFICATE (`openssl x509 -trustout`: the certificate's DER followed by
 * its trust settings, which OpenSSL applies; Node's OpenSSL reads them from
 * the block as written). A file is read line by line as OpenSSL reads it:
 * a block cut short, a BEGIN without its END, or bytes that are not base64
 * make the file malformed. Paired with crates/respbench-core/src/pem.rs.
 */
import { derElement } from './engine-js/tls-chain.js';

/**
 * What a trusted certificate's settings say of server authentication, as
 * OpenSSL's X509_check_trust (obj_trust) reads them for a server (pem.rs
 * `Trust`): no trust list, the default (a self-signed CA trusted); a trust
 * list naming serverAuth or any purpose, trusted (an anchor even when not
 * self-signed); serverAuth or any purpose rejected, or a trust list without
 * it, rejected.
 */
export type Trust = 'default' | 'trusted' | 'rejected';

/** One certificate of a PEM file. */
export interface PemCertificate {
  /** The block as OpenSSL reads it for the purpose: what Node's TLS is given (a trusted one's settings with it where they count). */
  pem: string;
  /** The certificate alone as a CERTIFICATE block: what X509Certificate parses. */
  plain: string;
  trust: Trust;
}

/**
 * How a file is read: a certificate chain (--cert: no TRUSTED CERTIFICATE
 * blocks), a CA file (--cacert: trust settings in TRUSTED CERTIFICATE
 * blocks only), a CA folder's file (--cacertdir: trust settings after any
 * certificate, as OpenSSL's folder lookup reads them).
 */
export type PemPurpose = 'chain' | 'ca-file' | 'ca-folder';

/** A PEM file with a block cut short or not base64. */
export class MalformedPem extends Error {}

const BASE64_LINE = /^[A-Za-z0-9+/]*={0,2}$/;
/** id-kp-serverAuth and anyExtendedKeyUsage (DER contents). */
const SERVER_AUTH = '2b06010505070301';
const ANY_PURPOSE = '551d2500';

/** X509_CERT_AUX: trust SEQUENCE OF OID, reject [0] SEQUENCE OF OID, …; null when it does not parse. */
function trustOf(aux: Buffer): Trust | null {
  const top = aux[0] === 0x30 ? derElement(aux, 0) : null;
  if (top === null) return null;
  const names = (start: number, end: number): boolean | null => {
    let any = false;
    for (let at = start; at < end; ) {
      const oid = aux[at] === 0x06 ? derElement(aux, at) : null;
      if (oid === null) return null;
      const hex = aux.subarray(oid.start, oid.end).toString('hex');
      any ||= hex === SERVER_AUTH || hex === ANY_PURPOSE;
      at = oid.end;
    }
    return any;
  };
  let trust: boolean | null | undefined;
  let reject: boolean | null | undefined;
  for (let at = top.start; at < top.end; ) {
    const field = derElement(aux, at);
    if (field === null) return null;
    if (aux[at] === 0x30 && trust === undefined && reject === undefined) trust = names(field.start, field.end);
    else if (aux[at] === 0xa0 && reject === undefined) reject = names(field.start, field.end);
    if (trust === null || reject === null) return null;
    at = field.end;
  }
  if (reject === true) return 'rejected';
  if (trust === true) return 'trusted';
  return trust === false ? 'rejected' : 'default';
}

function labels(purpose: PemPurpose): string[] {
  return purpose === 'chain' ? ['CERTIFICATE', 'X509 CERTIFICATE'] : ['CERTIFICATE', 'X509 CERTIFICATE', 'TRUSTED CERTIFICATE'];
}

const pemBlock = (label: string, der: Buffer) => [`-----BEGIN ${label}-----`, ...(der.toString('base64').match(/.{1,64}/g) ?? []), `-----END ${label}-----`].join('\n');

/** The certificates of a PEM text, in the order written; other blocks (keys) and text between blocks skipped. */
export function pemCertificates(text: string, purpose: PemPurpose): PemCertificate[] {
  const wanted = labels(purpose);
  const out: PemCertificate[] = [];
  let open: { label: string; body: string[] } | null = null;
  // OpenSSL's reader skips a UTF-8 byte order mark on the first line it reads looking for a block (the
  // file's first, or the one after a block's END); a BEGIN or END line starts at its first column.
  let firstOfSearch = true;
  for (const raw of text.split('\n')) {
    let line = raw.trimEnd();
    if (open === null && firstOfSearch) line = line.replace(/^\uFEFF|^\xEF\xBB\xBF/, '');
    firstOfSearch = false;
    if (open !== null) {
      const end = /^-----END (.*)-----$/.exec(line);
      if (end === null) {
        if (!BASE64_LINE.test(line.trim())) throw new MalformedPem('a PEM block is malformed');
        open.body.push(line.trim());
        continue;
      }
      if (end[1] !== open.label) throw new MalformedPem('a PEM block is malformed');
      const der = Buffer.from(open.body.join(''), 'base64');
      const first = der[0] === 0x30 ? derElement(der, 0) : null;
      if (first === null) throw new MalformedPem('a PEM block is malformed');
      const certificate = der.subarray(0, first.end);
      const aux = der.subarray(first.end);
      // Trust settings count in a TRUSTED CERTIFICATE, and after any certificate of a CA folder's file.
      const counted = aux.length > 0 && purpose !== 'chain' && (open.label === 'TRUSTED CERTIFICATE' || purpose === 'ca-folder');
      const trust = counted ? trustOf(aux) : 'default';
      if (trust === null) throw new MalformedPem('a PEM block is malformed');
      // Node's OpenSSL reads trust settings after any certificate: it gets them only where they count.
      out.push({ pem: counted ? pemBlock('TRUSTED CERTIFICATE', der) : pemBlock('CERTIFICATE', certificate), plain: pemBlock('CERTIFICATE', certificate), trust });
      open = null;
      firstOfSearch = true;
      continue;
    }
    const begin = /^-----BEGIN (.*)-----$/.exec(line);
    if (begin !== null && wanted.includes(begin[1])) open = { label: begin[1], body: [] };
  }
  if (open !== null) throw new MalformedPem('a PEM block is malformed');
  return out;
}
