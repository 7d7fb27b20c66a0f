//! Whether a server's chain is strong enough for OpenSSL's default
//! security level, 2 (Debian's, so redis-cli's and redis-server's): every
//! key of the chain, its root included, worth at least 112 bits of
//! security, and no signature with SHA-1 or a weaker digest (a self-issued
//! certificate's own aside). webpki refuses most of these too, but as a
//! signature that does not verify, or only when the handshake's signature
//! is checked with the key; Node's OpenSSL runs at level 1 and takes a
//! 1024-bit key. Paired with packages/cli/src/engine-js/tls-chain.ts: the
//! same rules, the same words.

use rustls::pki_types::{CertificateDer, SignatureVerificationAlgorithm};

use crate::tls_algorithms::signed_by;
use crate::x509::{Certificate, KeySize};

/// The security bits level 2 asks of every key of a chain.
pub(crate) const MIN_SECURITY_BITS: u32 = 112;

/// A refusal the verifier words itself; tls.rs `tls_reason` passes its
/// words on as they are.
#[derive(Debug)]
pub(crate) struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// A certificate that signed another but may not (OpenSSL: "invalid CA
/// certificate" or "unsupported certificate purpose"; webpki:
/// EndEntityUsedAsCa, or UnsupportedCertVersion for a v1 one).
pub(crate) const NOT_A_CA: &str = "certificate not accepted (a certificate that signed another in the chain is not a CA (CA:FALSE, or no basicConstraints))";

/// A CA whose keyUsage leaves out keyCertSign that signed another
/// (OpenSSL: "key usage does not include certificate signing"; webpki
/// takes it).
pub(crate) const NO_CERT_SIGN: &str = "certificate not accepted (a CA certificate of the chain may not sign certificates: its keyUsage leaves out keyCertSign)";

/// The fewest bits of an RSA key a signature is checked with (the RSA
/// crate's least; ring's is 2048, tls_algorithms.rs takes what is below).
pub(crate) const RSA_MIN_CHECKED_BITS: usize = 1024;

/// The security bits OpenSSL gives an RSA or DSA key of `n` bits: NIST SP
/// 800-56B's estimate, rounded to a multiple of 8 (OpenSSL's
/// `ossl_ifc_ffc_compute_security_bits`; its fixed-point arithmetic puts
/// the step to 112 at 1963 bits, where this formula in floating point
/// puts it at 1962, so that step is OpenSSL's).
pub(crate) fn ifc_security_bits(n: usize) -> u32 {
    match n {
        2048 => return 112,
        3072 => return 128,
        4096 => return 152,
        6144 => return 176,
        7680 => return 192,
        8192 => return 200,
        15360 => return 256,
        0..8 => return 0,
        _ => {}
    }
    let x = n as f64 * std::f64::consts::LN_2;
    let estimate = (1.923 * (x * x.ln() * x.ln()).cbrt() - 4.690) / std::f64::consts::LN_2;
    let cap = if n <= 7680 {
        192
    } else if n <= 15360 {
        256
    } else {
        1200
    };
    let bits = ((estimate as u32) + 4) & !7;
    if n < 1963 { bits.min(104) } else { bits.clamp(112, cap) }
}

/// A key's words and its security bits: ("1024-bit RSA", 80), ("P-192 EC", 96).
fn strength(key: KeySize) -> (String, u32) {
    match key {
        KeySize::Rsa(n) => (format!("{n}-bit RSA"), ifc_security_bits(n)),
        KeySize::Dsa(n) => (format!("{n}-bit DSA"), ifc_security_bits(n)),
        KeySize::Ec(name, order) => (format!("{name} EC"), order / 2),
    }
}

/// A name from a certificate as the one line may show it: printable ASCII
/// kept, any other byte `?`, at most 64 characters (the JS engine's rule).
pub(crate) fn printable(name: &[u8]) -> String {
    let mut shown: String =
        name.iter().take(64).map(|&b| if (0x20..0x7f).contains(&b) { b as char } else { '?' }).collect();
    if name.len() > 64 {
        shown.push('…');
    }
    shown
}

/// Why the chain is refused beyond webpki's verdict (its first certificate
/// that is), or None: too weak for level 2; a CA whose keyUsage may not
/// sign (webpki takes it, OpenSSL does not).
/// The chain is walked as OpenSSL builds it: from the server's certificate,
/// each issuer looked for by name among the trusted certificates
/// (`anchors`, self-signed, of --cacert/--cacertdir) first, then the other
/// certificates of --cacert/--cacertdir (`links`), then what the server
/// sent; of several with that name, the one whose key checks the signature;
/// the walk ends at a trusted certificate or a self-issued one.
pub(crate) fn too_weak(
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    anchors: &[CertificateDer<'static>],
    links: &[CertificateDer<'static>],
    algorithms: &[&'static dyn SignatureVerificationAlgorithm],
) -> Option<Refused> {
    let pool: Vec<(Certificate<'_>, bool)> = anchors
        .iter()
        .map(|d| (d.as_ref(), true))
        .chain(links.iter().map(|d| (d.as_ref(), false)))
        .chain(intermediates.iter().map(|d| (d.as_ref(), false)))
        .filter_map(|(der, trusted)| Certificate::parse(der).map(|c| (c, trusted)))
        .collect();
    let signs = |issuer: &Certificate<'_>, cert: &Certificate<'_>| {
        signed_by(cert, issuer.public_key_algorithm, issuer.public_key, algorithms)
    };
    let mut cert = Certificate::parse(end_entity.as_ref())?;
    let mut trusted = anchors.iter().any(|a| a.as_ref() == end_entity.as_ref());
    for depth in 0..8 {
        let who = || match (depth, cert.common_name()) {
            (0, _) => "the server's certificate".to_string(),
            (_, Some(cn)) => format!("the CA certificate \"{}\" of its chain", printable(cn)),
            _ => "a CA certificate of its chain".to_string(),
        };
        if let Some((key, bits)) = cert.key_size().map(strength).filter(|&(_, bits)| bits < MIN_SECURITY_BITS) {
            return Some(Refused(format!(
                "certificate too weak: {} has a {key} key ({bits}-bit security; at least {MIN_SECURITY_BITS} is required)",
                who()
            )));
        }
        if depth > 0 && !cert.may_sign_certificates() {
            return Some(Refused(NO_CERT_SIGN.into()));
        }
        if trusted || cert.is_self_issued() {
            break;
        }
        if let Some(digest) = cert.weak_digest() {
            return Some(Refused(format!(
                "certificate too weak: {} is signed with {digest} (SHA-1 and weaker digests are refused)",
                who()
            )));
        }
        let named = || pool.iter().filter(|(c, _)| c.subject == cert.issuer);
        let &(next, next_trusted) = named().find(|(c, _)| signs(c, &cert)).or_else(|| named().next())?;
        (cert, trusted) = (next, next_trusted);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_bits_step_where_openssls_do() {
        // `openssl verify -auth_level 2` here: 1962 bits refused, 1963 taken.
        assert_eq!(ifc_security_bits(1962), 104);
        assert_eq!(ifc_security_bits(1963), 112);
        assert_eq!(ifc_security_bits(1024), 80);
        assert_eq!(ifc_security_bits(1536), 96);
        assert_eq!(ifc_security_bits(2047), 112);
        assert_eq!(ifc_security_bits(2048), 112);
        assert_eq!(ifc_security_bits(3000), 128);
    }

    #[test]
    fn a_name_is_shown_on_one_line() {
        assert_eq!(printable(b"weak\nroot\x1b[2J"), "weak?root?[2J");
        assert_eq!(printable(&[b'a'; 70]), format!("{}…", "a".repeat(64)));
    }
}
