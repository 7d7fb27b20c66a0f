/**
 * PEM certificates as OpenSSL reads them (redis-cli, redis-server): under
 * the label CERTIFICATE, and the two it reads as certificates too, X509
 * CERTIFICATE and TRUSTED CERTIFICATE (`openssl x509 -trustout`: the
 * certificate's DER followed by its trust settings, which are dropped
 * here, as a client's list of trusted CAs makes no use of them). Each
 * comes back as a CERTIFICATE block, what Node's TLS and X509Certificate
 * take. Paired with crates/respbench-core/src/pem.rs.
 */
import { derElement } from './engine-js/tls-chain.js';

const BLOCK = /-----BEGIN (TRUSTED |X509 )?CERTIFICATE-----([\s\S]*?)-----END \1CERTIFICATE-----/g;

/** The certificate blocks of a PEM text, each as `-----BEGIN CERTIFICATE-----`; a trusted one's DER cut to the certificate. */
export function certificateBlocks(text: string): string[] {
  const blocks: string[] = [];
  for (const m of text.matchAll(BLOCK)) {
    if (m[1] === undefined) {
      blocks.push(m[0]);
      continue;
    }
    let der = Buffer.from(m[2].replace(/\s+/g, ''), 'base64');
    if (m[1] === 'TRUSTED ') {
      const first = der[0] === 0x30 ? derElement(der, 0) : null;
      // Not a certificate inside: left whole, for the parse to refuse.
      if (first !== null) der = der.subarray(0, first.end);
    }
    const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
    blocks.push(['-----BEGIN CERTIFICATE-----', ...lines, '-----END CERTIFICATE-----'].join('\n'));
  }
  return blocks;
}
