/**
 * What the JS engine reads of the chain a TLS server sent, once its
 * handshake is done, to word a refusal as the native engine words it
 * (crates/respbench-core/src/tls_verify.rs `too_weak`, tls.rs `webpki_words`):
 * a key or digest OpenSSL's default security level refuses (Debian's level
 * 2, so redis-cli's and redis-server's: Node's OpenSSL runs at level 1,
 * which takes a 1024-bit RSA key), and a CA:FALSE certificate that signed
 * another (OpenSSL says only "unsupported certificate purpose").
 */
import type { DetailedPeerCertificate } from 'node:tls';

/** The fewest bits of an RSA key that security level 2 accepts. */
export const MIN_RSA_BITS = 2048;

/** Signature algorithm OIDs (DER contents) of the digests level 2 refuses, by the digest named; as x509.rs's WEAK_SIGNATURES. */
const WEAK_SIGNATURES: ReadonlyArray<readonly [string, string]> = [
  ['2a864886f70d010104', 'MD5'], // md5WithRSAEncryption
  ['2a864886f70d010105', 'SHA-1'], // sha1WithRSAEncryption
  ['2a8648ce3d0401', 'SHA-1'], // ecdsa-with-SHA1
  ['2a8648ce380403', 'SHA-1'], // dsa-with-sha1
];

/** The leaf, then each issuer up to the chain's end (a self-issued root is its own issuer). */
export function chainOf(leaf: DetailedPeerCertificate): DetailedPeerCertificate[] {
  const chain: DetailedPeerCertificate[] = [];
  for (let c: DetailedPeerCertificate | undefined = leaf; c && Object.keys(c).length > 0 && !chain.includes(c); c = c.issuerCertificate) chain.push(c);
  return chain;
}

/** One DER element's header: where its contents start and end; null when cut short. */
function element(der: Buffer, at: number): { start: number; end: number } | null {
  if (at + 2 > der.length) return null;
  let len = der[at + 1];
  let start = at + 2;
  if (len >= 0x80) {
    const count = len & 0x7f;
    if (count === 0 || count > 4 || start + count > der.length) return null;
    len = 0;
    for (let i = 0; i < count; i++) len = len * 256 + der[start + i];
    start += count;
  }
  return start + len <= der.length ? { start, end: start + len } : null;
}

/** The digest of a certificate's signature when level 2 refuses it (SHA-1, MD5), read from its DER. */
export function weakDigest(raw: Buffer): string | null {
  const cert = element(raw, 0);
  const tbs = cert && element(raw, cert.start);
  const algorithm = tbs && element(raw, tbs.end);
  const oid = algorithm && raw[algorithm.start] === 0x06 ? element(raw, algorithm.start) : null;
  if (!oid) return null;
  const hex = raw.subarray(oid.start, oid.end).toString('hex');
  return WEAK_SIGNATURES.find(([weak]) => weak === hex)?.[1] ?? null;
}

const selfIssued = (c: DetailedPeerCertificate) => c.issuerCertificate === c;

/**
 * Why the chain is too weak for level 2 (its first certificate that is), or
 * null; the native engine's words. OpenSSL's chain, its root included: an
 * RSA key under 2048 bits anywhere (the anchor's too), a SHA-1 or MD5
 * signature but a self-issued certificate's own.
 */
export function tooWeak(chain: DetailedPeerCertificate[]): string | null {
  for (let i = 0; i < chain.length; i++) {
    const c = chain[i];
    const who = i === 0 ? "the server's certificate" : c.subject?.CN ? `the CA certificate "${c.subject.CN}" of its chain` : 'a CA certificate of its chain';
    if (c.modulus !== undefined && c.bits !== undefined && c.bits < MIN_RSA_BITS) return `certificate too weak: ${who} has a ${c.bits}-bit RSA key (at least ${MIN_RSA_BITS} bits are required)`;
    const digest = selfIssued(c) ? null : weakDigest(c.raw);
    if (digest !== null) return `certificate too weak: ${who} is signed with ${digest} (SHA-256 or stronger is required)`;
  }
  return null;
}

/** Whether a certificate that signed another in the chain is no CA (basicConstraints CA:FALSE, or none on a v3 certificate). */
export function signedByNonCa(chain: DetailedPeerCertificate[]): boolean {
  return chain.slice(1).some((c) => c.ca === false);
}
