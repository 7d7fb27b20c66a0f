//! Each signature algorithm this module adds to ring's, on certificates
//! openssl makes here (skipped without it): a CA of that kind signs a
//! certificate, and the signature verifies with the CA's key, and not once
//! a byte of it is changed, nor with another CA's key of the same kind.

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::*;
use crate::tls_crypto::Pss;
use crate::x509::Certificate;

#[path = "../../tests/openssl/mod.rs"]
mod openssl_for_tests;
use openssl_for_tests::openssl;

/// A CA made from a key of `genpkey` (its arguments), and a leaf it signs
/// with `sign` (x509 -req's digest and -sigopt arguments); both CAs of a
/// case (`NAME-a`, `NAME-b`) and the leaf of the first. False when openssl failed.
fn make(dir: &Path, name: &str, genpkey: &[&str], sign: &[&str]) -> bool {
    let made = |ca: &str| {
        let key = format!("{ca}.key");
        let pem = format!("{ca}.pem");
        let subject = format!("/CN={ca}");
        let mut args = vec!["genpkey"];
        args.extend(genpkey);
        args.extend(["-out", &key]);
        openssl(dir, &args)
            && openssl(dir, &["req", "-x509", "-new", "-key", &key, "-out", &pem, "-days", "2", "-subj", &subject])
    };
    let (a, b) = (format!("{name}-a"), format!("{name}-b"));
    let (ca, ca_key, leaf_key, leaf_csr, leaf) = (
        format!("{a}.pem"),
        format!("{a}.key"),
        format!("{name}-leaf.key"),
        format!("{name}-leaf.csr"),
        format!("{name}-leaf.pem"),
    );
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &leaf_csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &leaf,
        "-days",
        "2",
    ];
    args.extend(sign);
    made(&a)
        && made(&b)
        && openssl(
            dir,
            &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", &leaf_key, "-out", &leaf_csr, "-subj", "/CN=leaf"],
        )
        && openssl(dir, &args)
}

fn der(dir: &Path, name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(dir.join(format!("{name}.pem"))).unwrap()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("respbench-tls-algorithms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn what_openssl_verifies_and_ring_does_not_verifies_here_and_nothing_else_does() {
    let dir = temp_dir();
    if !openssl(
        &dir,
        &["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048", "-out", "dsa.param"],
    ) {
        eprintln!("skipped: openssl did not make DSA parameters");
        return;
    }
    let ec = |curve: &'static str| ["-algorithm", "EC", "-pkeyopt", curve];
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("p224", &ec("ec_paramgen_curve:P-224"), &["-sha256"]),
        ("p521-sha512", &ec("ec_paramgen_curve:P-521"), &["-sha512"]),
        ("p521-sha256", &ec("ec_paramgen_curve:P-521"), &["-sha256"]),
        ("p256-sha512", &ec("ec_paramgen_curve:P-256"), &["-sha512"]),
        ("p384-sha224", &ec("ec_paramgen_curve:P-384"), &["-sha224"]),
        ("bp256", &ec("ec_paramgen_curve:brainpoolP256r1"), &["-sha256"]),
        ("bp384", &ec("ec_paramgen_curve:brainpoolP384r1"), &["-sha384"]),
        ("ed448", &["-algorithm", "ED448"], &[]),
        ("rsa-2000", &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2000"], &["-sha256"]),
        ("rsa-sha224", &["-algorithm", "RSA"], &["-sha224"]),
        ("rsa-sha3-256", &["-algorithm", "RSA"], &["-sha3-256"]),
        ("rsa-sha3-512", &["-algorithm", "RSA"], &["-sha3-512"]),
        (
            "rsa-pss-salt-20",
            &["-algorithm", "RSA"],
            &["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:20"],
        ),
        (
            "rsa-2000-pss-max",
            &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2000"],
            &["-sha384", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:max"],
        ),
        ("pss-key", &["-algorithm", "RSA-PSS"], &["-sha256"]),
        (
            "rsa-pss-mgf1-sha512",
            &["-algorithm", "RSA"],
            &["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_mgf1_md:sha512"],
        ),
        (
            "pss-key-sha384-mgf-default",
            &["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_pss_keygen_md:sha384"],
            &["-sha384"],
        ),
        (
            "pss-key-sha512",
            &[
                "-algorithm",
                "RSA-PSS",
                "-pkeyopt",
                "rsa_pss_keygen_md:sha512",
                "-pkeyopt",
                "rsa_pss_keygen_mgf1_md:sha512",
            ],
            &["-sha512"],
        ),
        ("dsa", &["-paramfile", "dsa.param"], &["-sha256"]),
        ("dsa-sha224", &["-paramfile", "dsa.param"], &["-sha224"]),
        // ring's own, through the same list.
        ("rsa-2048", &["-algorithm", "RSA"], &["-sha256"]),
        ("p256", &ec("ec_paramgen_curve:P-256"), &["-sha256"]),
    ];
    for (name, genpkey, sign) in cases {
        assert!(make(&dir, name, genpkey, sign), "{name}: openssl could not make the certificates");
        let (a, b, leaf) =
            (der(&dir, &format!("{name}-a")), der(&dir, &format!("{name}-b")), der(&dir, &format!("{name}-leaf")));
        let (a, b, leaf) =
            (Certificate::parse(&a).unwrap(), Certificate::parse(&b).unwrap(), Certificate::parse(&leaf).unwrap());
        let algorithms = for_chain([a, b, leaf].into_iter());
        assert!(
            signed_by(&leaf, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: the CA's signature does not verify"
        );
        assert!(
            !signed_by(&leaf, b.public_key_algorithm, b.public_key, &algorithms),
            "{name}: another CA's key verifies it"
        );
        // A byte in the middle (an Ed448 signature's last byte is always zero, an ECDSA one's DER framing at the start).
        let mut changed = leaf.signature.to_vec();
        let middle = changed.len() / 2;
        changed[middle] ^= 1;
        let mut tampered = leaf;
        tampered.signature = &changed;
        assert!(
            !signed_by(&tampered, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: a changed signature verifies"
        );
        let mut message = leaf.signed.to_vec();
        message[10] ^= 1;
        let mut forged = leaf;
        forged.signed = &message;
        assert!(
            !signed_by(&forged, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: a changed certificate verifies"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_handshake_offers_the_schemes_openssl_servers_sign_with() {
    let offered = SUPPORTED.supported_schemes();
    for scheme in [
        SignatureScheme::ECDSA_NISTP256_SHA256,
        SignatureScheme::ECDSA_NISTP384_SHA384,
        SignatureScheme::ECDSA_NISTP521_SHA512,
        SignatureScheme::ED25519,
        SignatureScheme::ED448,
        SignatureScheme::RSA_PSS_SHA256,
        RSA_PSS_PSS_SHA256,
        RSA_PSS_PSS_SHA512,
        SignatureScheme::RSA_PKCS1_SHA256,
    ] {
        assert!(offered.contains(&scheme), "{scheme:?}");
    }
    // TLS 1.3 takes the first algorithm of a scheme: its own curve.
    let first = |s: SignatureScheme| SUPPORTED.mapping.iter().find(|(m, _)| *m == s).unwrap().1[0].public_key_alg_id();
    assert_eq!(first(SignatureScheme::ECDSA_NISTP521_SHA512), alg_id::ECDSA_P521);
    assert_eq!(first(SignatureScheme::ECDSA_NISTP256_SHA256), alg_id::ECDSA_P256);
}

#[test]
fn rsa_pss_parameters_are_read_as_rfc_4055_writes_them() {
    // openssl's sha256 / mgf1-sha256 / salt 222, and the same with the salt's default (20).
    let params = |salt: &[u8]| {
        let mut p = vec![0x30, 0];
        p.extend([
            0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00,
        ]);
        p.extend([0xa1, 0x1c, 0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08]);
        p.extend([0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00]);
        p.extend(salt);
        p[1] = (p.len() - 2) as u8;
        p
    };
    assert_eq!(
        pss_parameters(&params(&[0xa2, 0x04, 0x02, 0x02, 0x00, 0xde])),
        Some(Pss { hash: Hash::Sha256, mgf: Hash::Sha256, salt: 222 })
    );
    assert_eq!(pss_parameters(&params(&[])), Some(Pss { hash: Hash::Sha256, mgf: Hash::Sha256, salt: 20 }));
    // A mask over another digest (OpenSSL makes one with rsa_mgf1_md); SHA-1, the digest when none is named, is not taken.
    let mut other_mask = params(&[]);
    let at = other_mask.len() - 3;
    other_mask[at] = 0x02;
    assert_eq!(pss_parameters(&other_mask), Some(Pss { hash: Hash::Sha256, mgf: Hash::Sha384, salt: 20 }));
    assert_eq!(pss_parameters(&[0x30, 0x00]), None);
}

#[test]
fn an_rsa_pss_key_with_parameters_signs_only_as_they_allow() {
    // id-RSASSA-PSS with sha256 / mgf1-sha256 / salt at least 32, as openssl genpkey -pkeyopt rsa_pss_keygen_md:sha256 writes it.
    let mut key = vec![0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a, 0x30, 0];
    key.extend([0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00]);
    key.extend([0xa1, 0x1c, 0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08]);
    key.extend([0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00]);
    key.extend([0xa2, 0x03, 0x02, 0x01, 0x20]);
    key[12] = (key.len() - 13) as u8;
    let pss = |hash: Hash, mgf: Hash, salt: usize| Pss { hash, mgf, salt };
    assert!(pss_key_allows(&key, pss(Hash::Sha256, Hash::Sha256, 32)));
    assert!(pss_key_allows(&key, pss(Hash::Sha256, Hash::Sha256, 222)));
    assert!(!pss_key_allows(&key, pss(Hash::Sha256, Hash::Sha256, 20)), "a salt under the key's least");
    assert!(!pss_key_allows(&key, pss(Hash::Sha512, Hash::Sha512, 64)), "another digest");
    assert!(!pss_key_allows(&key, pss(Hash::Sha256, Hash::Sha512, 32)), "another mask");
    // A bare RSA-PSS key and an rsaEncryption key allow any.
    assert!(pss_key_allows(&key[..11], pss(Hash::Sha512, Hash::Sha1, 0)));
    assert!(pss_key_allows(alg_id::RSA_ENCRYPTION.as_ref(), Pss::tls(Hash::Sha384)));
}

#[test]
fn rsa_pss_parameters_that_der_does_not_allow_are_refused() {
    let sha256 = [0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00];
    let mgf = {
        let mut m = vec![0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08];
        m.extend(sha256);
        m
    };
    let field = |tag: u8, contents: &[u8]| {
        let mut f = vec![tag, contents.len() as u8];
        f.extend(contents);
        f
    };
    let seq = |fields: &[Vec<u8>]| {
        let inner: Vec<u8> = fields.concat();
        let mut p = vec![0x30, inner.len() as u8];
        p.extend(inner);
        p
    };
    let (hash, mask) = (field(0xa0, &sha256), field(0xa1, &mgf));
    assert_eq!(
        pss_parameters(&seq(&[hash.clone(), mask.clone(), field(0xa2, &[0x02, 0x01, 0x20])])),
        Some(Pss { hash: Hash::Sha256, mgf: Hash::Sha256, salt: 32 })
    );
    // A negative salt, fields out of order or twice, bytes after the SEQUENCE.
    assert_eq!(pss_parameters(&seq(&[hash.clone(), mask.clone(), field(0xa2, &[0x02, 0x01, 0x80])])), None);
    assert_eq!(pss_parameters(&seq(&[mask.clone(), hash.clone()])), None);
    assert_eq!(pss_parameters(&seq(&[hash.clone(), hash.clone(), mask.clone()])), None);
    let mut trailing = seq(&[hash.clone(), mask.clone()]);
    trailing.push(0);
    assert_eq!(pss_parameters(&trailing), None);
    // Something after the digest's NULL.
    let mut odd = sha256.to_vec();
    odd[1] += 2;
    odd.extend([0x05, 0x00]);
    assert_eq!(pss_parameters(&seq(&[field(0xa0, &odd), mask])), None);
}

#[test]
fn an_rsa_pss_key_is_held_to_its_kind_and_to_its_parameters() {
    let dir = temp_dir().join("kinds");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| assert!(openssl(&dir, args), "openssl {args:?}");
    // A CA on an RSA-PSS key restricted to SHA-512 (salt at least 64), and a
    // plain RSA certificate on the same key numbers with the same subject,
    // which signs leaves as the restricted key may not.
    run(&[
        "genpkey",
        "-algorithm",
        "RSA-PSS",
        "-pkeyopt",
        "rsa_pss_keygen_md:sha512",
        "-pkeyopt",
        "rsa_pss_keygen_mgf1_md:sha512",
        "-pkeyopt",
        "rsa_pss_keygen_saltlen:64",
        "-out",
        "pss.key",
    ]);
    run(&["req", "-x509", "-new", "-key", "pss.key", "-out", "pss.pem", "-days", "2", "-subj", "/CN=twin"]);
    // The RSAPrivateKey inside its PKCS#8, as a plain RSA key (openssl rsa keeps the RSA-PSS kind).
    let pkcs8 = rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join("pss.key")).unwrap();
    let mut input = pkcs8.secret_der();
    let mut fields = crate::der::expect(&mut input, crate::der::SEQUENCE).unwrap().contents;
    for _ in 0..2 {
        crate::der::next(&mut fields).unwrap();
    }
    std::fs::write(dir.join("rsa.der"), crate::der::expect(&mut fields, crate::der::OCTET_STRING).unwrap().contents)
        .unwrap();
    run(&["rsa", "-inform", "DER", "-in", "rsa.der", "-traditional", "-out", "rsa.key"]);
    run(&["req", "-x509", "-new", "-key", "rsa.key", "-out", "rsa.pem", "-days", "2", "-subj", "/CN=twin"]);
    run(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=leaf"]);
    let sign = |name: &str, opts: &[&str]| {
        let out = format!("{name}.pem");
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "rsa.pem",
            "-CAkey",
            "rsa.key",
            "-CAcreateserial",
            "-out",
            &out,
            "-days",
            "2",
        ];
        args.extend(opts);
        run(&args);
    };
    sign("pkcs1", &["-sha512"]);
    sign("pss-sha256", &["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]);
    sign("pss-sha512-salt-32", &["-sha512", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]);
    sign("pss-sha512-salt-64", &["-sha512", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:64"]);
    let (pss, rsa) = (der(&dir, "pss"), der(&dir, "rsa"));
    let (pss, rsa) = (Certificate::parse(&pss).unwrap(), Certificate::parse(&rsa).unwrap());
    for (leaf, by_pss_key) in
        [("pkcs1", false), ("pss-sha256", false), ("pss-sha512-salt-32", false), ("pss-sha512-salt-64", true)]
    {
        let der = der(&dir, leaf);
        let leaf_cert = Certificate::parse(&der).unwrap();
        let algorithms = for_chain([pss, rsa, leaf_cert].into_iter());
        // The same key numbers as rsaEncryption take every one of them.
        assert!(signed_by(&leaf_cert, rsa.public_key_algorithm, rsa.public_key, &algorithms), "{leaf} by the RSA twin");
        assert_eq!(
            signed_by(&leaf_cert, pss.public_key_algorithm, pss.public_key, &algorithms),
            by_pss_key,
            "{leaf} by the restricted RSA-PSS key (openssl verify: only the SHA-512, salt 64 one)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
