//! The signature algorithms the native engine verifies, so that where
//! OpenSSL (redis-cli, the JS engine) accepts a certificate or a handshake
//! signature, rustls here does too: ring's own, and beside them, checked
//! in pure Rust ([`crate::tls_crypto`]), ECDSA on P-224, P-521 and the
//! brainpool curves and with any SHA-2 digest, Ed448, SHA-224, RSA keys
//! under ring's 2048 bits, RSA-PSS at any salt length and RSA-PSS keys, and
//! DSA signatures in a chain.
//!
//! webpki picks an algorithm by the exact bytes of two AlgorithmIdentifiers
//! (the key's and the signature's), and some carry parameters that vary
//! from one certificate to the next (RSA-PSS's salt length, a DSA key's
//! domain): those are made for the certificates a connection meets
//! ([`for_chain`]), once per distinct pair for the process, at most
//! [`MAX_MADE`] of them.

use std::sync::Mutex;

use rustls::SignatureScheme;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm, alg_id};
use webpki::ring as ring_algs;

use crate::der::{INTEGER, OID, SEQUENCE, expect, next};
use crate::tls_crypto::{self, Curve, Hash, Pss};

/// What an algorithm checks, with what.
#[derive(Clone, Copy, Debug)]
enum Check {
    Ecdsa(Curve, Hash),
    Ed448,
    /// ring's for a modulus of 2048 bits and more (its range), tls_crypto's below.
    RsaPkcs1(Hash, Option<&'static dyn SignatureVerificationAlgorithm>),
    RsaPss {
        pss: Pss,
        ring: Option<&'static dyn SignatureVerificationAlgorithm>,
    },
    /// DSA: the domain parameters are the key identifier's.
    Dsa(Hash),
    /// A signature its key's parameters forbid (an RSA-PSS key restricted to
    /// another digest or a longer salt): it never verifies, as OpenSSL's
    /// "signature failure", not an algorithm unknown.
    Forbidden,
}

#[derive(Debug)]
struct Algorithm {
    key: AlgorithmIdentifier,
    signature: AlgorithmIdentifier,
    check: Check,
}

/// ring checks RSA signatures with moduli of 256 to 1024 bytes: 2041 to
/// 8192 bits.
const RING_RSA_BITS: std::ops::RangeInclusive<usize> = 2041..=8192;

impl SignatureVerificationAlgorithm for Algorithm {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.key
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature
    }

    fn verify_signature(&self, public_key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), InvalidSignature> {
        let by_ring = |ring: Option<&'static dyn SignatureVerificationAlgorithm>| {
            ring.filter(|_| tls_crypto::rsa_modulus_bits(public_key).is_some_and(|n| RING_RSA_BITS.contains(&n)))
        };
        let valid = match self.check {
            Check::Ecdsa(curve, hash) => tls_crypto::ecdsa(curve, hash, public_key, message, signature),
            Check::Ed448 => tls_crypto::ed448(public_key, message, signature),
            Check::RsaPkcs1(hash, ring) => match by_ring(ring) {
                Some(ring) => return ring.verify_signature(public_key, message, signature),
                None => tls_crypto::rsa_pkcs1(hash, public_key, message, signature),
            },
            Check::RsaPss { pss, ring } => match by_ring(ring) {
                Some(ring) => return ring.verify_signature(public_key, message, signature),
                None => tls_crypto::rsa_pss(pss, public_key, message, signature),
            },
            Check::Forbidden => false,
            Check::Dsa(hash) => {
                let mut key = self.key.as_ref();
                let _oid = expect(&mut key, OID);
                tls_crypto::dsa(hash, key, public_key, message, signature)
            }
        };
        if valid { Ok(()) } else { Err(InvalidSignature) }
    }
}

const fn id(bytes: &'static [u8]) -> AlgorithmIdentifier {
    AlgorithmIdentifier::from_slice(bytes)
}

// The keys' identifiers: id-ecPublicKey with a named curve; Ed448.
const EC_P224: AlgorithmIdentifier =
    id(&[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x21]);
const EC_BP256: AlgorithmIdentifier = id(&[
    0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01,
    0x07,
]);
const EC_BP384: AlgorithmIdentifier = id(&[
    0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01,
    0x0b,
]);
// ecdsa-with-SHA224 (SHA-256, -384 and -512 are alg_id's).
const ECDSA_SHA224: AlgorithmIdentifier = id(&[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x01]);
// sha224WithRSAEncryption, with NULL parameters and without (both are seen).
const RSA_PKCS1_SHA224: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0e, 0x05, 0x00]);
const RSA_PKCS1_SHA224_ABSENT: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0e]);
const RSA_PKCS1_SHA256_ABSENT: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b]);
const RSA_PKCS1_SHA384_ABSENT: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c]);
const RSA_PKCS1_SHA512_ABSENT: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d]);
// id-rsassa-pkcs1-v1_5-with-sha3-256/384/512 (RFC 8702: no parameters), and with NULL ones.
const RSA_PKCS1_SHA3_256: AlgorithmIdentifier = id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x0e]);
const RSA_PKCS1_SHA3_384: AlgorithmIdentifier = id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x0f]);
const RSA_PKCS1_SHA3_512: AlgorithmIdentifier = id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x10]);
const RSA_PKCS1_SHA3_256_NULL: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x0e, 0x05, 0x00]);
const RSA_PKCS1_SHA3_384_NULL: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x0f, 0x05, 0x00]);
const RSA_PKCS1_SHA3_512_NULL: AlgorithmIdentifier =
    id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x10, 0x05, 0x00]);

// OIDs (their contents) this module reads parameters by.
const OID_RSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
const OID_MGF1: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08];
const OID_DSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x01];
/// The digests by OID: sha1, sha224, sha256, sha384, sha512.
const DIGESTS: &[(&[u8], Hash)] = &[
    (&[0x2b, 0x0e, 0x03, 0x02, 0x1a], Hash::Sha1),
    (&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04], Hash::Sha224),
    (&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01], Hash::Sha256),
    (&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02], Hash::Sha384),
    (&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03], Hash::Sha512),
];
/// dsa-with-sha224 and dsa-with-sha256, the DSA signatures OpenSSL's
/// default level takes (dsa-with-sha1 is refused as too weak).
const DSA_SIGNATURES: &[(AlgorithmIdentifier, Hash)] = &[
    (id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x01]), Hash::Sha224),
    (id(&[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x02]), Hash::Sha256),
];

macro_rules! algorithm {
    ($name:ident, $key:expr, $sig:expr, $check:expr) => {
        static $name: &dyn SignatureVerificationAlgorithm = &Algorithm { key: $key, signature: $sig, check: $check };
    };
}

use Check::{Ecdsa, RsaPkcs1, RsaPss};
use Curve::{BrainpoolP256r1 as Bp256, BrainpoolP384r1 as Bp384, P224, P256, P384, P521};
use Hash::{Sha224, Sha256, Sha384, Sha512};

algorithm!(P224_SHA224, EC_P224, ECDSA_SHA224, Ecdsa(P224, Sha224));
algorithm!(P224_SHA256, EC_P224, alg_id::ECDSA_SHA256, Ecdsa(P224, Sha256));
algorithm!(P224_SHA384, EC_P224, alg_id::ECDSA_SHA384, Ecdsa(P224, Sha384));
algorithm!(P224_SHA512, EC_P224, alg_id::ECDSA_SHA512, Ecdsa(P224, Sha512));
algorithm!(P256_SHA224, alg_id::ECDSA_P256, ECDSA_SHA224, Ecdsa(P256, Sha224));
algorithm!(P256_SHA512, alg_id::ECDSA_P256, alg_id::ECDSA_SHA512, Ecdsa(P256, Sha512));
algorithm!(P384_SHA224, alg_id::ECDSA_P384, ECDSA_SHA224, Ecdsa(P384, Sha224));
algorithm!(P384_SHA512, alg_id::ECDSA_P384, alg_id::ECDSA_SHA512, Ecdsa(P384, Sha512));
algorithm!(P521_SHA224, alg_id::ECDSA_P521, ECDSA_SHA224, Ecdsa(P521, Sha224));
algorithm!(P521_SHA256, alg_id::ECDSA_P521, alg_id::ECDSA_SHA256, Ecdsa(P521, Sha256));
algorithm!(P521_SHA384, alg_id::ECDSA_P521, alg_id::ECDSA_SHA384, Ecdsa(P521, Sha384));
algorithm!(P521_SHA512, alg_id::ECDSA_P521, alg_id::ECDSA_SHA512, Ecdsa(P521, Sha512));
algorithm!(BP256_SHA224, EC_BP256, ECDSA_SHA224, Ecdsa(Bp256, Sha224));
algorithm!(BP256_SHA256, EC_BP256, alg_id::ECDSA_SHA256, Ecdsa(Bp256, Sha256));
algorithm!(BP256_SHA384, EC_BP256, alg_id::ECDSA_SHA384, Ecdsa(Bp256, Sha384));
algorithm!(BP256_SHA512, EC_BP256, alg_id::ECDSA_SHA512, Ecdsa(Bp256, Sha512));
algorithm!(BP384_SHA224, EC_BP384, ECDSA_SHA224, Ecdsa(Bp384, Sha224));
algorithm!(BP384_SHA256, EC_BP384, alg_id::ECDSA_SHA256, Ecdsa(Bp384, Sha256));
algorithm!(BP384_SHA384, EC_BP384, alg_id::ECDSA_SHA384, Ecdsa(Bp384, Sha384));
algorithm!(BP384_SHA512, EC_BP384, alg_id::ECDSA_SHA512, Ecdsa(Bp384, Sha512));
algorithm!(ED448, alg_id::ED448, alg_id::ED448, Check::Ed448);
algorithm!(PKCS1_SHA224, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA224, RsaPkcs1(Sha224, None));
algorithm!(PKCS1_SHA224_ABSENT, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA224_ABSENT, RsaPkcs1(Sha224, None));
algorithm!(PKCS1_SHA3_256, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_256, RsaPkcs1(Hash::Sha3_256, None));
algorithm!(PKCS1_SHA3_384, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_384, RsaPkcs1(Hash::Sha3_384, None));
algorithm!(PKCS1_SHA3_512, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_512, RsaPkcs1(Hash::Sha3_512, None));
algorithm!(PKCS1_SHA3_256_NULL, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_256_NULL, RsaPkcs1(Hash::Sha3_256, None));
algorithm!(PKCS1_SHA3_384_NULL, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_384_NULL, RsaPkcs1(Hash::Sha3_384, None));
algorithm!(PKCS1_SHA3_512_NULL, alg_id::RSA_ENCRYPTION, RSA_PKCS1_SHA3_512_NULL, RsaPkcs1(Hash::Sha3_512, None));
algorithm!(
    PKCS1_SHA256,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA256,
    RsaPkcs1(Sha256, Some(ring_algs::RSA_PKCS1_2048_8192_SHA256))
);
algorithm!(
    PKCS1_SHA384,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA384,
    RsaPkcs1(Sha384, Some(ring_algs::RSA_PKCS1_2048_8192_SHA384))
);
algorithm!(
    PKCS1_SHA512,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA512,
    RsaPkcs1(Sha512, Some(ring_algs::RSA_PKCS1_2048_8192_SHA512))
);
algorithm!(
    PKCS1_SHA256_ABSENT,
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA256_ABSENT,
    RsaPkcs1(Sha256, Some(ring_algs::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS))
);
algorithm!(
    PKCS1_SHA384_ABSENT,
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA384_ABSENT,
    RsaPkcs1(Sha384, Some(ring_algs::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS))
);
algorithm!(
    PKCS1_SHA512_ABSENT,
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA512_ABSENT,
    RsaPkcs1(Sha512, Some(ring_algs::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS))
);
algorithm!(
    PSS_SHA256,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA256,
    RsaPss { pss: Pss::tls(Sha256), ring: Some(ring_algs::RSA_PSS_2048_8192_SHA256_LEGACY_KEY) }
);
algorithm!(
    PSS_SHA384,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA384,
    RsaPss { pss: Pss::tls(Sha384), ring: Some(ring_algs::RSA_PSS_2048_8192_SHA384_LEGACY_KEY) }
);
algorithm!(
    PSS_SHA512,
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA512,
    RsaPss { pss: Pss::tls(Sha512), ring: Some(ring_algs::RSA_PSS_2048_8192_SHA512_LEGACY_KEY) }
);

/// Every algorithm whose identifiers are fixed.
static ALL: &[&dyn SignatureVerificationAlgorithm] = &[
    ring_algs::ECDSA_P256_SHA256,
    ring_algs::ECDSA_P256_SHA384,
    ring_algs::ECDSA_P384_SHA256,
    ring_algs::ECDSA_P384_SHA384,
    ring_algs::ED25519,
    PSS_SHA256,
    PSS_SHA384,
    PSS_SHA512,
    PKCS1_SHA256,
    PKCS1_SHA384,
    PKCS1_SHA512,
    PKCS1_SHA256_ABSENT,
    PKCS1_SHA384_ABSENT,
    PKCS1_SHA512_ABSENT,
    PKCS1_SHA224,
    PKCS1_SHA224_ABSENT,
    PKCS1_SHA3_256,
    PKCS1_SHA3_384,
    PKCS1_SHA3_512,
    PKCS1_SHA3_256_NULL,
    PKCS1_SHA3_384_NULL,
    PKCS1_SHA3_512_NULL,
    P224_SHA224,
    P224_SHA256,
    P224_SHA384,
    P224_SHA512,
    P256_SHA224,
    P256_SHA512,
    P384_SHA224,
    P384_SHA512,
    P521_SHA224,
    P521_SHA256,
    P521_SHA384,
    P521_SHA512,
    BP256_SHA224,
    BP256_SHA256,
    BP256_SHA384,
    BP256_SHA512,
    BP384_SHA224,
    BP384_SHA256,
    BP384_SHA384,
    BP384_SHA512,
    ED448,
];

/// TLS 1.3's RSASSA-PSS with an RSA-PSS key (rsa_pss_pss_sha256/384/512),
/// which rustls has no name for; the handshake's check is
/// [`pss_key_scheme`]'s.
pub(crate) const RSA_PSS_PSS_SHA256: SignatureScheme = SignatureScheme::Unknown(0x0809);
pub(crate) const RSA_PSS_PSS_SHA384: SignatureScheme = SignatureScheme::Unknown(0x080a);
pub(crate) const RSA_PSS_PSS_SHA512: SignatureScheme = SignatureScheme::Unknown(0x080b);

/// The digest of an RSA-PSS-key scheme, or None for another scheme.
pub(crate) fn pss_key_scheme(scheme: SignatureScheme) -> Option<Hash> {
    match scheme {
        RSA_PSS_PSS_SHA256 => Some(Sha256),
        RSA_PSS_PSS_SHA384 => Some(Sha384),
        RSA_PSS_PSS_SHA512 => Some(Sha512),
        _ => None,
    }
}

/// What the provider offers and checks handshakes with. For TLS 1.3 the
/// scheme fixes the curve and rustls takes the first of each list; TLS 1.2's
/// ECDSA schemes name only the digest, so the other curves a client offers
/// follow (P-224 and the brainpool curves are not among OpenSSL's groups,
/// so its client refuses a server key on them: they check chains only).
pub(crate) static SUPPORTED: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: ALL,
    mapping: &[
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &[ring_algs::ECDSA_P384_SHA384, ring_algs::ECDSA_P256_SHA384, P521_SHA384],
        ),
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &[ring_algs::ECDSA_P256_SHA256, ring_algs::ECDSA_P384_SHA256, P521_SHA256],
        ),
        (SignatureScheme::ECDSA_NISTP521_SHA512, &[P521_SHA512, P256_SHA512, P384_SHA512]),
        (SignatureScheme::ED25519, &[ring_algs::ED25519]),
        (SignatureScheme::ED448, &[ED448]),
        (SignatureScheme::RSA_PSS_SHA512, &[PSS_SHA512]),
        (SignatureScheme::RSA_PSS_SHA384, &[PSS_SHA384]),
        (SignatureScheme::RSA_PSS_SHA256, &[PSS_SHA256]),
        (RSA_PSS_PSS_SHA512, &[PSS_SHA512]),
        (RSA_PSS_PSS_SHA384, &[PSS_SHA384]),
        (RSA_PSS_PSS_SHA256, &[PSS_SHA256]),
        (SignatureScheme::RSA_PKCS1_SHA512, &[PKCS1_SHA512]),
        (SignatureScheme::RSA_PKCS1_SHA384, &[PKCS1_SHA384]),
        (SignatureScheme::RSA_PKCS1_SHA256, &[PKCS1_SHA256]),
    ],
};

/// RSASSA-PSS-params (RFC 4055): the digest (SHA-1, its default, is not
/// taken: OpenSSL's level 2 refuses it), MGF1's digest (SHA-1 by default)
/// and the salt length (20 by default); None for what is not that (another
/// mask, a trailer other than 1, what DER does not allow).
pub(crate) fn pss_parameters(mut params: &[u8]) -> Option<Pss> {
    // An AlgorithmIdentifier of a digest: its OID, and NULL or nothing after it.
    let digest = |alg: &[u8]| {
        let mut alg = alg;
        let oid = expect(&mut alg, OID)?.contents;
        (alg.is_empty() || alg == [0x05, 0x00]).then_some(())?;
        DIGESTS.iter().find(|(d, _)| *d == oid).map(|&(_, h)| h)
    };
    let whole = |rest: &[u8]| rest.is_empty().then_some(());
    let mut fields = expect(&mut params, SEQUENCE)?.contents;
    whole(params)?;
    let (mut hash, mut mgf_hash, mut salt) = (None, Hash::Sha1, 20usize);
    // DER: each field at most once, in their order.
    let mut last_tag = None;
    while !fields.is_empty() {
        let field = next(&mut fields)?;
        (last_tag < Some(field.tag)).then_some(())?;
        last_tag = Some(field.tag);
        let mut inner = field.contents;
        match field.tag {
            0xa0 => hash = Some(digest(expect(&mut inner, SEQUENCE)?.contents)?),
            0xa1 => {
                let mut mgf = expect(&mut inner, SEQUENCE)?.contents;
                (expect(&mut mgf, OID)?.contents == OID_MGF1).then_some(())?;
                mgf_hash = digest(expect(&mut mgf, SEQUENCE)?.contents)?;
                whole(mgf)?;
            }
            0xa2 => {
                let n = expect(&mut inner, INTEGER)?.contents;
                // Non-negative, and no longer than a salt can be.
                (!n.is_empty() && n[0] & 0x80 == 0 && n.len() <= 4).then_some(())?;
                salt = n.iter().fold(0usize, |s, &b| (s << 8) | b as usize);
            }
            0xa3 => (expect(&mut inner, INTEGER)?.contents == [1]).then_some(())?,
            _ => return None,
        }
        whole(inner)?;
    }
    let hash = hash.filter(|&h| h != Hash::Sha1)?;
    Some(Pss { hash, mgf: mgf_hash, salt })
}

/// The most algorithms made for parameters met in certificates (each a few
/// hundred bytes, kept for the process).
const MAX_MADE: usize = 256;

static MADE: Mutex<Vec<&'static Algorithm>> = Mutex::new(Vec::new());

/// The algorithm for a key identifier and a signature identifier that
/// carry parameters, made once.
fn made(key: &[u8], signature: &[u8], check: Check) -> Option<&'static dyn SignatureVerificationAlgorithm> {
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&found) = made.iter().find(|a| a.key.as_ref() == key && a.signature.as_ref() == signature) {
        return Some(found);
    }
    if made.len() >= MAX_MADE {
        return None;
    }
    let leak = |bytes: &[u8]| id(Box::leak(bytes.to_vec().into_boxed_slice()));
    let algorithm: &'static Algorithm =
        Box::leak(Box::new(Algorithm { key: leak(key), signature: leak(signature), check }));
    made.push(algorithm);
    Some(algorithm)
}

/// The AlgorithmIdentifier contents' OID.
fn oid_of(alg: &[u8]) -> Option<&[u8]> {
    let mut alg = alg;
    Some(expect(&mut alg, OID)?.contents)
}

/// The algorithms a chain of these certificates (the server's, and those of
/// --cacert/--cacertdir) may be checked with: every fixed one, and one for
/// each pair of an RSA key (rsaEncryption, or an RSA-PSS key whatever its
/// parameters) and an RSA-PSS signature identifier met among them, and of
/// a DSA key (its domain) and a DSA signature.
pub(crate) fn for_chain<'c>(
    certificates: impl Iterator<Item = crate::x509::Certificate<'c>> + Clone,
) -> Vec<&'static dyn SignatureVerificationAlgorithm> {
    let mut out: Vec<&'static dyn SignatureVerificationAlgorithm> = ALL.to_vec();
    let rsa_keys: Vec<&[u8]> = std::iter::once(alg_id::RSA_ENCRYPTION.as_ref())
        .chain(certificates.clone().map(|c| c.public_key_algorithm).filter(|k| oid_of(k) == Some(OID_RSA_PSS)))
        .collect();
    let dsa_keys = certificates.clone().map(|c| c.public_key_algorithm).filter(|k| oid_of(k) == Some(OID_DSA));
    let mut add = |key: &[u8], signature: &[u8], check: Check| {
        let known =
            out.iter().any(|a| a.public_key_alg_id().as_ref() == key && a.signature_alg_id().as_ref() == signature);
        if !known {
            out.extend(made(key, signature, check));
        }
    };
    for signature in certificates.map(|c| c.signature_algorithm).filter(|s| oid_of(s) == Some(OID_RSA_PSS)) {
        let mut params = signature;
        let _oid = expect(&mut params, OID);
        let Some(pss) = pss_parameters(params) else { continue };
        for &key in &rsa_keys {
            let check = if pss_key_allows(key, pss) { Check::RsaPss { pss, ring: None } } else { Check::Forbidden };
            add(key, signature, check);
        }
    }
    for key in dsa_keys {
        for &(signature, hash) in DSA_SIGNATURES {
            add(key, signature.as_ref(), Check::Dsa(hash));
        }
    }
    out
}

/// Whether `cert` is signed by the key `key` of algorithm `algorithm`.
pub(crate) fn signed_by(
    cert: &crate::x509::Certificate<'_>,
    algorithm: &[u8],
    key: &[u8],
    algorithms: &[&'static dyn SignatureVerificationAlgorithm],
) -> bool {
    algorithms.iter().any(|alg| {
        alg.public_key_alg_id().as_ref() == algorithm
            && alg.signature_alg_id().as_ref() == cert.signature_algorithm
            && alg.verify_signature(key, cert.signed, cert.signature).is_ok()
    })
}

/// Whether `key` (a SubjectPublicKeyInfo's algorithm contents) is an
/// RSA-PSS key (id-RSASSA-PSS, whatever its parameters).
pub(crate) fn is_pss_key(key: &[u8]) -> bool {
    oid_of(key) == Some(OID_RSA_PSS)
}

/// An RSA-PSS key's parameters (a SubjectPublicKeyInfo's algorithm
/// contents): Some(None) for an RSA key without them (rsaEncryption, or a
/// bare RSA-PSS key), Some(Some(…)) for a restricted one, None for
/// parameters that do not parse (such a key signs nothing that verifies).
fn pss_key_parameters(key: &[u8]) -> Option<Option<Pss>> {
    let mut params = key;
    if expect(&mut params, OID).is_none_or(|oid| oid.contents != OID_RSA_PSS) || params.is_empty() {
        return Some(None);
    }
    pss_parameters(params).map(Some)
}

/// Whether a key may make an RSA-PSS signature with these parameters: an
/// RSA-PSS key with parameters restricts them (RFC 4055: that digest and
/// mask, at least that salt), as OpenSSL holds it to; rsaEncryption and a
/// bare RSA-PSS key allow any.
fn pss_key_allows(key: &[u8], pss: Pss) -> bool {
    match pss_key_parameters(key) {
        Some(None) => true,
        Some(Some(key)) => key.hash == pss.hash && key.mgf == pss.mgf && pss.salt >= key.salt,
        None => false,
    }
}

/// A handshake signature of TLS 1.3's RSA-PSS-key schemes: `key_algorithm`
/// and `public` the certificate's key. The scheme names the digest and TLS
/// the salt (the digest's length); the mask is MGF1 over the digest, or over
/// the one a restricted key's parameters name, which OpenSSL signs with.
pub(crate) fn pss_key_handshake(
    hash: Hash,
    key_algorithm: &[u8],
    public: &[u8],
    message: &[u8],
    signature: &[u8],
) -> bool {
    let tls = Pss::tls(hash);
    let pss = match pss_key_parameters(key_algorithm) {
        Some(None) => tls,
        Some(Some(key)) if key.hash == hash && tls.salt >= key.salt => Pss { mgf: key.mgf, ..tls },
        _ => return false,
    };
    tls_crypto::rsa_pss(pss, public, message, signature)
}

#[cfg(test)]
mod tests;
