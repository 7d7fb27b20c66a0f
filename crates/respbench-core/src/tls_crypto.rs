//! Signature checks ring does not make and OpenSSL (redis-cli, the JS
//! engine) does, in pure Rust (RustCrypto): ECDSA on P-224, P-521 and the
//! brainpool curves and with any SHA-2 digest, Ed448, RSA with a modulus
//! ring refuses (under 2048 bits) and RSA-PSS at any salt length, DSA.
//! Each takes a key as a certificate carries it (the SubjectPublicKeyInfo's
//! bits, and its parameters where the algorithm has them) and says yes or
//! no; [`crate::tls_algorithms`] decides which check an identifier means.
//! They run in the handshake, a few per connection, never per request.

use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::{BoxedUint, Pkcs1v15Sign, PublicKey as RsaPublicKey};
use sha2::Digest;
use signature::Verifier;
use signature::hazmat::PrehashVerifier;

use crate::der::{INTEGER, SEQUENCE, expect, integer_bits};

/// A SHA-2 digest a signature algorithm names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    pub(crate) fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha224 => sha2::Sha224::digest(message).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(message).to_vec(),
            Hash::Sha384 => sha2::Sha384::digest(message).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(message).to_vec(),
        }
    }

    pub(crate) fn len(self) -> usize {
        match self {
            Hash::Sha224 => 28,
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
            Hash::Sha512 => 64,
        }
    }
}

/// A named curve checked here (P-256 and P-384 too, with the digests ring
/// does not pair them with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Curve {
    P224,
    P256,
    P384,
    P521,
    BrainpoolP256r1,
    BrainpoolP384r1,
}

impl Curve {
    /// Bytes of a scalar (r, s) on the curve.
    fn width(self) -> usize {
        match self {
            Curve::P224 => 28,
            Curve::P256 | Curve::BrainpoolP256r1 => 32,
            Curve::P384 | Curve::BrainpoolP384r1 => 48,
            Curve::P521 => 66,
        }
    }
}

/// `SEQUENCE { INTEGER r, INTEGER s }` (an ECDSA or DSA signature) as its
/// two unsigned big-endian integers.
fn two_integers(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut input = der;
    let mut fields = expect(&mut input, SEQUENCE)?.contents;
    if !input.is_empty() {
        return None;
    }
    let r = expect(&mut fields, INTEGER)?.contents;
    let s = expect(&mut fields, INTEGER)?.contents;
    fields.is_empty().then_some(())?;
    let negative = |n: &[u8]| n.first().is_some_and(|b| b & 0x80 != 0);
    if negative(r) || negative(s) {
        return None;
    }
    Some((without_leading_zeros(r), without_leading_zeros(s)))
}

/// An INTEGER's contents without its leading zero bytes.
fn without_leading_zeros(n: &[u8]) -> &[u8] {
    &n[n.iter().position(|&b| b != 0).unwrap_or(n.len())..]
}

/// r ‖ s, each left-padded to `width` bytes (ECDSA's fixed-size form).
fn fixed_size(r: &[u8], s: &[u8], width: usize) -> Option<Vec<u8>> {
    if r.len() > width || s.len() > width {
        return None;
    }
    let mut out = vec![0; 2 * width];
    out[width - r.len()..width].copy_from_slice(r);
    out[2 * width - s.len()..].copy_from_slice(s);
    Some(out)
}

macro_rules! ecdsa_check {
    ($key:ty, $sig:ty, $public:expr, $prehash:expr, $rs:expr) => {
        match (<$key>::from_sec1_bytes($public), <$sig>::from_slice($rs)) {
            (Ok(key), Ok(sig)) => key.verify_prehash($prehash, &sig).is_ok(),
            _ => false,
        }
    };
}

/// ECDSA: `public` the key's SEC1 point, `signature` DER.
pub(crate) fn ecdsa(curve: Curve, hash: Hash, public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Some(rs) = two_integers(signature).and_then(|(r, s)| fixed_size(r, s, curve.width())) else {
        return false;
    };
    let prehash = hash.digest(message);
    match curve {
        Curve::P224 => ecdsa_check!(p224::ecdsa::VerifyingKey, p224::ecdsa::Signature, public, &prehash, &rs),
        Curve::P256 => ecdsa_check!(p256::ecdsa::VerifyingKey, p256::ecdsa::Signature, public, &prehash, &rs),
        Curve::P384 => ecdsa_check!(p384::ecdsa::VerifyingKey, p384::ecdsa::Signature, public, &prehash, &rs),
        Curve::P521 => ecdsa_check!(p521::ecdsa::VerifyingKey, p521::ecdsa::Signature, public, &prehash, &rs),
        Curve::BrainpoolP256r1 => ecdsa_check!(
            ecdsa::VerifyingKey<bp256::BrainpoolP256r1>,
            bp256::r1::ecdsa::Signature,
            public,
            &prehash,
            &rs
        ),
        Curve::BrainpoolP384r1 => ecdsa_check!(
            ecdsa::VerifyingKey<bp384::BrainpoolP384r1>,
            bp384::r1::ecdsa::Signature,
            public,
            &prehash,
            &rs
        ),
    }
}

/// Ed448 (RFC 8032, no context): a 57-byte key, a 114-byte signature.
pub(crate) fn ed448(public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(point) = <&[u8; 57]>::try_from(public) else { return false };
    let (Ok(key), Ok(sig)) =
        (ed448_goldilocks::VerifyingKey::from_bytes(point), ed448_goldilocks::Signature::from_slice(signature))
    else {
        return false;
    };
    key.verify_raw(&sig, message).is_ok()
}

/// The bits of an RSAPublicKey's modulus (the key's bits in a certificate).
pub(crate) fn rsa_modulus_bits(public: &[u8]) -> Option<usize> {
    let mut input = public;
    let mut fields = expect(&mut input, SEQUENCE)?.contents;
    integer_bits(expect(&mut fields, INTEGER)?.contents)
}

/// RSA PKCS#1 v1.5.
pub(crate) fn rsa_pkcs1(hash: Hash, public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(key) = RsaPublicKey::from_pkcs1_der(public) else { return false };
    let scheme = match hash {
        Hash::Sha224 => Pkcs1v15Sign::new::<sha2::Sha224>(),
        Hash::Sha256 => Pkcs1v15Sign::new::<sha2::Sha256>(),
        Hash::Sha384 => Pkcs1v15Sign::new::<sha2::Sha384>(),
        Hash::Sha512 => Pkcs1v15Sign::new::<sha2::Sha512>(),
    };
    key.verify(scheme, &hash.digest(message), signature).is_ok()
}

macro_rules! pss_check {
    ($digest:ty, $key:expr, $salt:expr, $message:expr, $signature:expr) => {
        match rsa::pss::Signature::try_from($signature) {
            Ok(sig) => rsa::pss::VerifyingKey::<$digest>::new_with_salt_len($key, $salt).verify($message, &sig).is_ok(),
            Err(_) => false,
        }
    };
}

/// RSASSA-PSS with MGF1 over the same digest and `salt` bytes of salt.
pub(crate) fn rsa_pss(hash: Hash, salt: usize, public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(key) = RsaPublicKey::from_pkcs1_der(public) else { return false };
    match hash {
        Hash::Sha224 => pss_check!(sha2::Sha224, key, salt, message, signature),
        Hash::Sha256 => pss_check!(sha2::Sha256, key, salt, message, signature),
        Hash::Sha384 => pss_check!(sha2::Sha384, key, salt, message, signature),
        Hash::Sha512 => pss_check!(sha2::Sha512, key, salt, message, signature),
    }
}

/// DSA: `parameters` the key's Dss-Parms (`SEQUENCE { p, q, g }`, its
/// AlgorithmIdentifier's parameters), `public` its INTEGER y, `signature`
/// DER.
pub(crate) fn dsa(hash: Hash, parameters: &[u8], public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    // g and y at p's precision, q at its own (how the DSA crate sizes a key).
    fn digits(e: Option<crate::der::Element<'_>>) -> Option<&[u8]> {
        Some(without_leading_zeros(e?.contents))
    }
    let mut input = parameters;
    let Some(mut params) = expect(&mut input, SEQUENCE).map(|e| e.contents) else { return false };
    let (p, q, g) = (
        digits(expect(&mut params, INTEGER)),
        digits(expect(&mut params, INTEGER)),
        digits(expect(&mut params, INTEGER)),
    );
    let mut key = public;
    let (Some(p), Some(q), Some(g), Some(y)) = (p, q, g, digits(expect(&mut key, INTEGER))) else { return false };
    let bits = |n: &[u8]| (n.len() * 8).max(8) as u32;
    let uint = |n: &[u8], precision: u32| BoxedUint::from_be_slice(n, precision).ok();
    let (Some(p), Some(q), Some(g), Some(y)) = (uint(p, bits(p)), uint(q, bits(q)), uint(g, bits(p)), uint(y, bits(p)))
    else {
        return false;
    };
    let Ok(components) = dsa::Components::from_components(p, q, g) else { return false };
    let (Ok(key), Ok(sig)) = (dsa::VerifyingKey::from_components(components, y), dsa::Signature::try_from(signature))
    else {
        return false;
    };
    key.verify_prehash(&hash.digest(message), &sig).is_ok()
}
