/**
 * What the JS engine reads of the chain a TLS server sent, once its
 * handshake is done, to word a refusal as the native engine words it
 * (crates/respbench-core/src/tls_strength.rs, tls.rs `webpki_words`): a key
 * or digest OpenSSL's default security level refuses (Debian's level 2, so
 * redis-cli's and redis-server's: Node's OpenSSL runs at level 1, which
 * takes a 1024-bit RSA key), and a certificate that may not sign (CA:FALSE,
 * no basicConstraints, v1) that signed another (OpenSSL says only
 * "unsupported certificate purpose").
 */
import { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate } from 'node:tls';

/** The security bits level 2 asks of every key of a chain. */
export const MIN_SECURITY_BITS = 112;

/** Signature algorithm OIDs (DER contents) of the digests level 2 refuses, by the digest named; as x509.rs's WEAK_SIGNATURES. */
const WEAK_SIGNATURES: ReadonlyArray<readonly [string, string]> = [
  ['2a864886f70d010102', 'MD2'], // md2WithRSAEncryption
  ['2a864886f70d010103', 'MD4'], // md4WithRSAEncryption
  ['2a864886f70d010104', 'MD5'], // md5WithRSAEncryption
  ['2a864886f70d010105', 'SHA-1'], // sha1WithRSAEncryption
  ['2b0e03021d', 'SHA-1'], // sha1WithRSA, the old OID
  ['2a8648ce3d0401', 'SHA-1'], // ecdsa-with-SHA1
  ['2a8648ce380403', 'SHA-1'], // dsa-with-sha1
];

/** Named curves (Node's names): their name in the words and the bits of their order; as x509.rs's CURVES. */
const CURVES: Record<string, readonly [string, number]> = {
  prime192v1: ['P-192', 192],
  secp224r1: ['P-224', 224],
  prime256v1: ['P-256', 256],
  secp384r1: ['P-384', 384],
  secp521r1: ['P-521', 521],
  secp256k1: ['secp256k1', 256],
};

/**
 * The security bits OpenSSL gives an RSA or DSA key of `n` bits: NIST SP
 * 800-56B's estimate rounded to a multiple of 8, with OpenSSL's step to 112
 * at 1963 bits (tls_strength.rs `ifc_security_bits`, the same numbers).
 */
export function ifcSecurityBits(n: number): number {
  const known: Record<number, number> = { 2048: 112, 3072: 128, 4096: 152, 6144: 176, 7680: 192, 8192: 200, 15360: 256 };
  if (known[n] !== undefined) return known[n];
  if (n < 8) return 0;
  const x = n * Math.LN2;
  const estimate = (1.923 * Math.cbrt(x * Math.log(x) * Math.log(x)) - 4.69) / Math.LN2;
  const cap = n <= 7680 ? 192 : n <= 15360 ? 256 : 1200;
  const bits = (Math.trunc(estimate) + 4) & ~7;
  return n < 1963 ? Math.min(bits, 104) : Math.min(Math.max(bits, 112), cap);
}

/** A certificate's key in words with its security bits (["1024-bit RSA", 80]), or null for a kind never too weak (Ed25519, Ed448) or unknown. */
export function keyStrength(raw: Buffer): readonly [string, number] | null {
  let key;
  try {
    key = new X509Certificate(raw).publicKey;
  } catch {
    return null;
  }
  const details = key.asymmetricKeyDetails ?? {};
  const type = key.asymmetricKeyType;
  if ((type === 'rsa' || type === 'rsa-pss') && details.modulusLength) return [`${details.modulusLength}-bit RSA`, ifcSecurityBits(details.modulusLength)];
  if (type === 'dsa' && details.modulusLength) return [`${details.modulusLength}-bit DSA`, ifcSecurityBits(details.modulusLength)];
  const curve = type === 'ec' && details.namedCurve ? CURVES[details.namedCurve] : undefined;
  return curve ? [`${curve[0]} EC`, curve[1] / 2] : null;
}

/** Whether a certificate of the chain has an EC key with explicit parameters, which OpenSSL refuses (x509.rs `explicit_ec_parameters`). */
export function explicitEcKey(chain: DetailedPeerCertificate[]): boolean {
  return chain.some(({ raw }) => {
    const spki = tbsField(raw, 5);
    const algorithm = spki && derElement(raw, spki.start);
    const oid = algorithm && raw[algorithm.start] === 0x06 ? derElement(raw, algorithm.start) : null;
    // id-ecPublicKey, then a SEQUENCE of the curve's numbers where a named curve's OID would be.
    return oid !== null && raw.subarray(oid.start, oid.end).toString('hex') === '2a8648ce3d0201' && raw[oid.end] === 0x30;
  });
}

/**
 * A field of a certificate's tbsCertificate by its place after the version
 * (0 serialNumber, 1 signature, 2 issuer, 3 validity, 4 subject, 5
 * subjectPublicKeyInfo): where its element starts and its contents; null
 * when the DER does not parse that far.
 */
export function tbsField(raw: Buffer, index: number): { at: number; start: number; end: number } | null {
  const cert = derElement(raw, 0);
  const tbs = cert && derElement(raw, cert.start);
  if (!tbs) return null;
  let at = tbs.start;
  if (raw[at] === 0xa0) at = derElement(raw, at)?.end ?? -1;
  for (let i = 0; i < index && at >= 0; i++) at = derElement(raw, at)?.end ?? -1;
  const field = at >= 0 ? derElement(raw, at) : null;
  return field && { at, ...field };
}

/** A name from a certificate as the one line may show it: printable ASCII kept, any other byte `?`, at most 64 (tls_strength.rs `printable`). */
export function printable(name: string): string {
  const bytes = Buffer.from(name, 'utf8');
  let shown = '';
  for (const b of bytes.subarray(0, 64)) shown += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '?';
  return bytes.length > 64 ? `${shown}…` : shown;
}

/** The leaf, then each issuer up to the chain's end (a self-issued root is its own issuer). */
export function chainOf(leaf: DetailedPeerCertificate): DetailedPeerCertificate[] {
  const chain: DetailedPeerCertificate[] = [];
  for (let c: DetailedPeerCertificate | undefined = leaf; c && Object.keys(c).length > 0 && !chain.includes(c); c = c.issuerCertificate) chain.push(c);
  return chain;
}

/** One DER element's header: where its contents start and end; null when cut short. */
export function derElement(der: Buffer, at: number): { start: number; end: number } | null {
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
  const cert = derElement(raw, 0);
  const tbs = cert && derElement(raw, cert.start);
  const algorithm = tbs && derElement(raw, tbs.end);
  const oid = algorithm && raw[algorithm.start] === 0x06 ? derElement(raw, algorithm.start) : null;
  if (!oid) return null;
  const hex = raw.subarray(oid.start, oid.end).toString('hex');
  return WEAK_SIGNATURES.find(([weak]) => weak === hex)?.[1] ?? null;
}

const selfIssued = (c: DetailedPeerCertificate) => c.issuerCertificate === c;

/** Whether a certificate's keyUsage allows signing certificates (keyCertSign); true without a keyUsage extension (x509.rs `may_sign_certificates`). */
export function maySignCertificates(raw: Buffer): boolean {
  const cert = derElement(raw, 0);
  const tbs = cert && derElement(raw, cert.start);
  if (!tbs) return true;
  for (let at = tbs.start; at < tbs.end; ) {
    const field = derElement(raw, at);
    if (!field) return true;
    if (raw[at] === 0xa3) {
      const list = derElement(raw, field.start);
      for (let e = list ? list.start : field.end; list && e < list.end; ) {
        const ext = derElement(raw, e);
        const oid = ext && derElement(raw, ext.start);
        if (!ext || !oid) return true;
        if (raw.subarray(oid.start, oid.end).toString('hex') === '551d0f') {
          let v = oid.end;
          if (raw[v] === 0x01) v = derElement(raw, v)?.end ?? ext.end;
          const octets = raw[v] === 0x04 ? derElement(raw, v) : null;
          const bits = octets && raw[octets.start] === 0x03 ? derElement(raw, octets.start) : null;
          return bits !== null && bits.end - bits.start > 1 && (raw[bits.start + 1] & 0x04) !== 0;
        }
        e = ext.end;
      }
    }
    at = field.end;
  }
  return true;
}

/** A CA whose keyUsage leaves out keyCertSign signed another: the native engine's words (tls_strength.rs NO_CERT_SIGN). */
export const NO_CERT_SIGN = 'certificate not accepted (a CA certificate of the chain may not sign certificates: its keyUsage leaves out keyCertSign)';

/** Whether a certificate that signed another has a keyUsage without keyCertSign. */
export function signedWithoutCertSign(chain: DetailedPeerCertificate[]): boolean {
  return chain.slice(1).some((c) => !maySignCertificates(c.raw));
}

/**
 * Why the chain is too weak for level 2 (its first certificate that is), or
 * null; the native engine's words (tls_strength.rs `too_weak`). OpenSSL's
 * chain, its root included: a key under 112-bit security anywhere (the
 * anchor's too), a SHA-1 or weaker signature but a self-issued
 * certificate's own.
 */
export function tooWeak(chain: DetailedPeerCertificate[]): string | null {
  for (let i = 0; i < chain.length; i++) {
    const c = chain[i];
    const who = i === 0 ? "the server's certificate" : c.subject?.CN ? `the CA certificate "${printable(String(c.subject.CN))}" of its chain` : 'a CA certificate of its chain';
    const strength = keyStrength(c.raw);
    if (strength !== null && strength[1] < MIN_SECURITY_BITS) {
      return `certificate too weak: ${who} has a ${strength[0]} key (${strength[1]}-bit security; at least ${MIN_SECURITY_BITS} is required)`;
    }
    const digest = selfIssued(c) ? null : weakDigest(c.raw);
    if (digest !== null) return `certificate too weak: ${who} is signed with ${digest} (SHA-1 and weaker digests are refused)`;
  }
  return null;
}

/** Whether a certificate that signed another in the chain may not sign (CA:FALSE, no basicConstraints, a v1 one not self-signed). */
export function signedByNonCa(chain: DetailedPeerCertificate[]): boolean {
  // Node's `ca` is X509_check_ca() === 1: false for a self-signed v1 root too, which is a CA to OpenSSL.
  return chain.slice(1).some((c) => c.ca === false && !selfIssued(c));
}
