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
use signature::hazmat::PrehashVerifier;

use crate::der::{INTEGER, SEQUENCE, expect, integer_bits};

/// A digest a signature algorithm names: SHA-2, and SHA-1 for an RSA-PSS
/// mask only (RFC 4055's default MGF1; no signature here is made with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    /// RSA PKCS#1 only (OpenSSL takes SHA-3 there, and refuses it with ECDSA).
    Sha3_256,
    Sha3_384,
    Sha3_512,
}

impl Hash {
    pub(crate) fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha1 => ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, message).as_ref().to_vec(),
            Hash::Sha224 => sha2::Sha224::digest(message).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(message).to_vec(),
            Hash::Sha384 => sha2::Sha384::digest(message).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(message).to_vec(),
            Hash::Sha3_256 => sha3::Sha3_256::digest(message).to_vec(),
            Hash::Sha3_384 => sha3::Sha3_384::digest(message).to_vec(),
            Hash::Sha3_512 => sha3::Sha3_512::digest(message).to_vec(),
        }
    }

    pub(crate) const fn len(self) -> usize {
        match self {
            Hash::Sha1 => 20,
            Hash::Sha224 => 28,
            Hash::Sha256 | Hash::Sha3_256 => 32,
            Hash::Sha384 | Hash::Sha3_384 => 48,
            Hash::Sha512 | Hash::Sha3_512 => 64,
        }
    }
}

/// RSASSA-PSS's parameters: the digest, MGF1's digest, the salt's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pss {
    pub hash: Hash,
    pub mgf: Hash,
    pub salt: usize,
}

impl Pss {
    /// TLS's RSA-PSS: MGF1 over the digest, a salt of the digest's length.
    pub(crate) const fn tls(hash: Hash) -> Pss {
        Pss { hash, mgf: hash, salt: hash.len() }
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
    let sequence = expect(&mut input, SEQUENCE)?;
    if !input.is_empty() || !strict(&sequence) {
        return None;
    }
    let mut fields = sequence.contents;
    let (r, s) = (expect(&mut fields, INTEGER)?, expect(&mut fields, INTEGER)?);
    fields.is_empty().then_some(())?;
    // DER, as OpenSSL holds a signature to: lengths in their shortest form,
    // integers positive and minimal (a leading zero only before a high bit).
    let minimal = |n: &[u8]| match n {
        [] => false,
        [first, ..] if first & 0x80 != 0 => false,
        [0, second, ..] => second & 0x80 != 0,
        _ => true,
    };
    (strict(&r) && strict(&s) && minimal(r.contents) && minimal(s.contents)).then_some(())?;
    Some((without_leading_zeros(r.contents), without_leading_zeros(s.contents)))
}

/// Whether an element's length is written in its shortest form.
fn strict(e: &crate::der::Element<'_>) -> bool {
    let len = e.contents.len();
    let header = e.whole.len() - len;
    let shortest = match len {
        0..0x80 => 2,
        0x80..0x100 => 3,
        0x100..0x1_0000 => 4,
        _ => 5,
    };
    header == shortest
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
        Hash::Sha1 => return false,
        Hash::Sha224 => Pkcs1v15Sign::new::<sha2::Sha224>(),
        Hash::Sha256 => Pkcs1v15Sign::new::<sha2::Sha256>(),
        Hash::Sha384 => Pkcs1v15Sign::new::<sha2::Sha384>(),
        Hash::Sha512 => Pkcs1v15Sign::new::<sha2::Sha512>(),
        Hash::Sha3_256 => Pkcs1v15Sign::new::<sha3::Sha3_256>(),
        Hash::Sha3_384 => Pkcs1v15Sign::new::<sha3::Sha3_384>(),
        Hash::Sha3_512 => Pkcs1v15Sign::new::<sha3::Sha3_512>(),
    };
    key.verify(scheme, &hash.digest(message), signature).is_ok()
}

/// RSASSA-PSS (RFC 8017 §8.1.2 and §9.1.2, EMSA-PSS-VERIFY), with the
/// mask's digest apart from the message's (the RSA crate ties them).
pub(crate) fn rsa_pss(pss: Pss, public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(key) = RsaPublicKey::from_pkcs1_der(public) else { return false };
    use rsa::traits::PublicKeyParts;
    let k = key.size();
    let mod_bits = key.n().bit_width() as usize;
    if signature.len() != k || mod_bits < 2 {
        return false;
    }
    let Ok(s) = BoxedUint::from_be_slice(signature, key.n().bits_precision()) else { return false };
    if s >= *key.n().as_ref() {
        return false;
    }
    let Ok(m) = rsa::hazmat::rsa_encrypt(&key, &s) else { return false };
    let em_bits = mod_bits - 1;
    let em_len = em_bits.div_ceil(8);
    let encoded = m.to_be_bytes();
    // I2OSP(m, emLen): m < 2^emBits, so what is before the last emLen bytes is zero.
    let (high, em) = encoded.split_at(encoded.len().saturating_sub(em_len));
    if em.len() != em_len || high.iter().any(|&b| b != 0) {
        return false;
    }
    emsa_pss_verify(pss, &pss.hash.digest(message), em, em_bits)
}

/// EMSA-PSS-VERIFY over an encoded message `em` of `em_bits` bits.
fn emsa_pss_verify(pss: Pss, m_hash: &[u8], em: &[u8], em_bits: usize) -> bool {
    let (h_len, s_len, em_len) = (pss.hash.len(), pss.salt, em.len());
    if em_len < h_len + s_len + 2 || em[em_len - 1] != 0xbc {
        return false;
    }
    let (masked_db, h) = em[..em_len - 1].split_at(em_len - h_len - 1);
    let top_bits = 8 * em_len - em_bits;
    let top_mask = 0xffu8.checked_shr(top_bits as u32).unwrap_or(0);
    if masked_db[0] & !top_mask != 0 {
        return false;
    }
    let mut db = masked_db.to_vec();
    mgf1_xor(pss.mgf, h, &mut db);
    db[0] &= top_mask;
    let ps = em_len - h_len - s_len - 2;
    if db[..ps].iter().any(|&b| b != 0) || db[ps] != 0x01 {
        return false;
    }
    let salt = &db[db.len() - s_len..];
    let again = pss.hash.digest(&[&[0u8; 8][..], m_hash, salt].concat());
    again.as_slice() == h
}

/// MGF1 (RFC 8017 B.2.1) with `digest` over `seed`, XORed into `out`.
fn mgf1_xor(digest: Hash, seed: &[u8], out: &mut [u8]) {
    let mut at = 0;
    for counter in 0u32.. {
        if at >= out.len() {
            break;
        }
        let block = digest.digest(&[seed, &counter.to_be_bytes()].concat());
        for (d, m) in out[at..].iter_mut().zip(&block) {
            *d ^= m;
        }
        at += block.len();
    }
}

/// RSASSA-PSS signing (RFC 8017 §8.1.1, EMSA-PSS-ENCODE) with the mask's
/// digest apart from the message's, the private operation blinded; None
/// when the key is too small for the parameters or the RNG fails.
pub(crate) fn rsa_pss_sign(pss: Pss, key: &rsa::PrivateKey, message: &[u8]) -> Option<Vec<u8>> {
    use rsa::traits::PublicKeyParts;
    let em_bits = (key.n().bit_width() as usize).checked_sub(1)?;
    let (em_len, h_len, s_len) = (em_bits.div_ceil(8), pss.hash.len(), pss.salt);
    if em_len < h_len + s_len + 2 {
        return None;
    }
    let mut salt = vec![0u8; s_len];
    getrandom::fill(&mut salt).ok()?;
    let h = pss.hash.digest(&[&[0u8; 8][..], &pss.hash.digest(message), &salt].concat());
    // DB = PS ‖ 0x01 ‖ salt, masked; EM = maskedDB ‖ H ‖ 0xbc.
    let mut db = vec![0u8; em_len - h_len - 1];
    let ps = em_len - s_len - h_len - 2;
    db[ps] = 0x01;
    db[ps + 1..].copy_from_slice(&salt);
    mgf1_xor(pss.mgf, &h, &mut db);
    db[0] &= 0xffu8.checked_shr((8 * em_len - em_bits) as u32).unwrap_or(0);
    let em = [&db[..], &h, &[0xbc]].concat();
    let m = BoxedUint::from_be_slice(&em, key.n().bits_precision()).ok()?;
    let s = rsa::hazmat::rsa_decrypt_and_check(key, Some(&mut getrandom::SysRng), &m).ok()?;
    // I2OSP(s, k).
    let bytes = s.to_be_bytes();
    let k = key.size();
    let mut out = vec![0u8; k];
    let take = bytes.len().min(k);
    out[k - take..].copy_from_slice(&bytes[bytes.len() - take..]);
    Some(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa_pss_signs_what_it_verifies_with_its_own_mask_and_salt() {
        use rsa::pkcs1::EncodeRsaPublicKey;
        let Some(key) = test_key() else { return };
        let public = key.to_public_key().to_pkcs1_der().unwrap();
        for pss in [
            Pss::tls(Hash::Sha256),
            Pss { hash: Hash::Sha256, mgf: Hash::Sha512, salt: 32 },
            Pss { hash: Hash::Sha384, mgf: Hash::Sha1, salt: 0 },
        ] {
            let signature = rsa_pss_sign(pss, &key, b"hello").unwrap();
            assert!(rsa_pss(pss, public.as_bytes(), b"hello", &signature), "{pss:?}");
            assert!(!rsa_pss(pss, public.as_bytes(), b"hellO", &signature), "{pss:?}");
            assert!(!rsa_pss(Pss { salt: pss.salt + 1, ..pss }, public.as_bytes(), b"hello", &signature), "{pss:?}");
        }
    }

    /// A 2048-bit RSA key made by openssl (None without it).
    fn test_key() -> Option<rsa::PrivateKey> {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        let out = std::process::Command::new("openssl").args(["genrsa", "-traditional", "2048"]).output().ok()?;
        let pem = String::from_utf8(out.stdout).ok()?;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = crate::pem::decode_base64(body.as_bytes())?;
        rsa::PrivateKey::from_pkcs1_der(&der).ok()
    }

    #[test]
    fn an_ecdsa_signature_is_taken_only_in_strict_der() {
        assert_eq!(two_integers(&[0x30, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07]), Some((&[5u8][..], &[7u8][..])));
        // A high bit needs its leading zero.
        assert_eq!(
            two_integers(&[0x30, 0x07, 0x02, 0x02, 0x00, 0x85, 0x02, 0x01, 0x07]).map(|(r, _)| r.to_vec()),
            Some(vec![0x85])
        );
        // A leading zero it does not need; a long-form length of a short one; a negative one; bytes after.
        assert_eq!(two_integers(&[0x30, 0x07, 0x02, 0x02, 0x00, 0x05, 0x02, 0x01, 0x07]), None);
        assert_eq!(two_integers(&[0x30, 0x07, 0x02, 0x81, 0x01, 0x05, 0x02, 0x01, 0x07]), None);
        assert_eq!(two_integers(&[0x30, 0x81, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07]), None);
        assert_eq!(two_integers(&[0x30, 0x06, 0x02, 0x01, 0x85, 0x02, 0x01, 0x07]), None);
        assert_eq!(two_integers(&[0x30, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07, 0x00]), None);
    }
}
