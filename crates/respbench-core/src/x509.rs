//! The few fields of an X.509 certificate that TLS verification needs and
//! webpki will not give for the certificates OpenSSL accepts and webpki
//! refuses: the version (webpki parses only v3), the validity, issuer,
//! subject and public key of a v1 certificate, whether a certificate has a
//! subjectAltName, its common name. A DER walk over borrowed bytes: nothing
//! is allocated, nothing is copied (it runs once per connection, in the
//! handshake).

use crate::der::{
    BIT_STRING, BOOLEAN, EXTENSIONS, Element, GENERALIZED_TIME, INTEGER, OCTET_STRING, OID, SEQUENCE, SET, UTC_TIME,
    UTF8_STRING, VERSION, bits, expect, integer_bits, next,
};

/// 2.5.4.3, commonName.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// 2.5.29.19, basicConstraints.
const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
/// 2.5.29.15, keyUsage.
const KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
/// 2.5.29.17, subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// SubjectPublicKeyInfo algorithms whose strength is read here:
/// rsaEncryption, RSASSA-PSS, id-dsa, id-ecPublicKey.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const RSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
const DSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x01];
const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// Named curves by OID: their name and the bits of their order.
const CURVES: &[(&[u8], &str, u32)] = &[
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01], "P-192", 192),
    (&[0x2b, 0x81, 0x04, 0x00, 0x21], "P-224", 224),
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07], "P-256", 256),
    (&[0x2b, 0x81, 0x04, 0x00, 0x22], "P-384", 384),
    (&[0x2b, 0x81, 0x04, 0x00, 0x23], "P-521", 521),
    (&[0x2b, 0x81, 0x04, 0x00, 0x0a], "secp256k1", 256),
];
/// The signature algorithms OpenSSL's default security level (2: Debian's,
/// so redis-cli's and redis-server's) refuses in a chain, by the digest
/// named: md2/md4/md5/sha1WithRSAEncryption (and sha1WithRSA's old OID),
/// ecdsa-with-SHA1, dsa-with-sha1.
const WEAK_SIGNATURES: &[(&[u8], &str)] = &[
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x02], "MD2"),
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x03], "MD4"),
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x04], "MD5"),
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05], "SHA-1"),
    (&[0x2b, 0x0e, 0x03, 0x02, 0x1d], "SHA-1"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01], "SHA-1"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x03], "SHA-1"),
];

/// A public key's kind and size, where its strength can be weighed.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum KeySize {
    /// RSA (or RSA-PSS) by its modulus's bits.
    Rsa(usize),
    /// DSA by its prime's bits.
    Dsa(usize),
    /// A named curve and the bits of its order.
    Ec(&'static str, u32),
}

/// What verification reads of one certificate, borrowed from its DER.
#[derive(Clone, Copy)]
pub(crate) struct Certificate<'a> {
    /// 1, 2 or 3 (the encoded value plus one).
    pub version: u8,
    /// The whole tbsCertificate encoding: what the issuer signed.
    pub signed: &'a [u8],
    /// The contents of signatureAlgorithm (OID and parameters).
    pub signature_algorithm: &'a [u8],
    /// The signature's bits.
    pub signature: &'a [u8],
    /// The contents of the issuer and subject Names.
    pub issuer: &'a [u8],
    pub subject: &'a [u8],
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
    /// The whole SubjectPublicKeyInfo encoding, its algorithm's contents
    /// and the key's bits.
    pub public_key_info: &'a [u8],
    pub public_key_algorithm: &'a [u8],
    pub public_key: &'a [u8],
    /// The contents of the extensions' SEQUENCE (empty for v1).
    extensions: &'a [u8],
}

impl<'a> Certificate<'a> {
    /// None when `der` is not a certificate this walk can read.
    pub(crate) fn parse(der: &'a [u8]) -> Option<Certificate<'a>> {
        let mut input = der;
        let mut outer = expect(&mut input, SEQUENCE)?.contents;
        let tbs = expect(&mut outer, SEQUENCE)?;
        let signature_algorithm = expect(&mut outer, SEQUENCE)?.contents;
        let signature = bits(expect(&mut outer, BIT_STRING)?.contents)?;
        let mut fields = tbs.contents;
        let mut version = 1;
        if fields.first() == Some(&VERSION) {
            let mut explicit = next(&mut fields)?.contents;
            let v = expect(&mut explicit, INTEGER)?.contents;
            version = match v {
                [n @ 0..=2] => n + 1,
                _ => return None,
            };
        }
        expect(&mut fields, INTEGER)?;
        expect(&mut fields, SEQUENCE)?;
        let issuer = expect(&mut fields, SEQUENCE)?.contents;
        let mut validity = expect(&mut fields, SEQUENCE)?.contents;
        let not_before = time(next(&mut validity)?)?;
        let not_after = time(next(&mut validity)?)?;
        let subject = expect(&mut fields, SEQUENCE)?.contents;
        let spki = expect(&mut fields, SEQUENCE)?;
        let mut spki_fields = spki.contents;
        let public_key_algorithm = expect(&mut spki_fields, SEQUENCE)?.contents;
        let public_key = bits(expect(&mut spki_fields, BIT_STRING)?.contents)?;
        let mut extensions: &[u8] = &[];
        while let Some(e) = next(&mut fields) {
            if e.tag == EXTENSIONS {
                let mut inner = e.contents;
                extensions = expect(&mut inner, SEQUENCE)?.contents;
            }
        }
        Some(Certificate {
            version,
            signed: tbs.whole,
            signature_algorithm,
            signature,
            issuer,
            subject,
            not_before,
            not_after,
            public_key_info: spki.whole,
            public_key_algorithm,
            public_key,
            extensions,
        })
    }

    /// Whether it carries a subjectAltName extension (names are then checked
    /// against it alone; without one, against the common name, as OpenSSL's
    /// and Node's host checks do).
    pub(crate) fn has_subject_alt_name(&self) -> bool {
        let mut list = self.extensions;
        while let Some(ext) = next(&mut list) {
            let mut fields = ext.contents;
            if expect(&mut fields, OID).is_some_and(|oid| oid.contents == SUBJECT_ALT_NAME) {
                return true;
            }
        }
        false
    }

    /// Issuer and subject are the same name (a root, or a self-signed
    /// server certificate).
    pub(crate) fn is_self_issued(&self) -> bool {
        self.subject == self.issuer
    }

    /// Whether it may sign certificates: a v3 certificate with
    /// basicConstraints CA:TRUE, or a v1 one whose subject is its issuer
    /// (a v1 root, which OpenSSL takes as a CA).
    pub(crate) fn is_ca(&self) -> bool {
        if self.version < 3 {
            return self.is_self_issued();
        }
        let Some(mut value) = self.extension(BASIC_CONSTRAINTS) else { return false };
        let Some(constraints) = expect(&mut value, SEQUENCE) else { return false };
        let mut items = constraints.contents;
        expect(&mut items, BOOLEAN).is_some_and(|ca| ca.contents == [0xff])
    }

    /// Whether its keyUsage allows signing certificates (keyCertSign, bit
    /// 5); true without a keyUsage extension.
    pub(crate) fn may_sign_certificates(&self) -> bool {
        let Some(mut value) = self.extension(KEY_USAGE) else { return true };
        expect(&mut value, BIT_STRING).is_some_and(|bits| bits.contents.get(1).is_some_and(|b| b & 0x04 != 0))
    }

    /// The value (its OCTET STRING's contents) of its extension `oid`, or
    /// None when it has none or it does not parse.
    fn extension(&self, oid: &[u8]) -> Option<&'a [u8]> {
        let mut list = self.extensions;
        while let Some(ext) = next(&mut list) {
            let mut fields = ext.contents;
            if expect(&mut fields, OID).is_none_or(|o| o.contents != oid) {
                continue;
            }
            if fields.first() == Some(&BOOLEAN) {
                next(&mut fields);
            }
            return expect(&mut fields, OCTET_STRING).map(|v| v.contents);
        }
        None
    }

    /// The subject's (last) common name, as bytes of its string.
    pub(crate) fn common_name(&self) -> Option<&'a [u8]> {
        common_name(self.subject)
    }

    /// Its key's kind and size; None for a kind whose strength is not
    /// weighed here (Ed25519 and Ed448 are never too weak) or that does not parse.
    pub(crate) fn key_size(&self) -> Option<KeySize> {
        let mut algorithm = self.public_key_algorithm;
        let oid = expect(&mut algorithm, OID)?.contents;
        if oid == RSA_ENCRYPTION || oid == RSA_PSS {
            let mut key = self.public_key;
            let mut fields = expect(&mut key, SEQUENCE)?.contents;
            return integer_bits(expect(&mut fields, INTEGER)?.contents).map(KeySize::Rsa);
        }
        if oid == DSA {
            let mut params = expect(&mut algorithm, SEQUENCE)?.contents;
            return integer_bits(expect(&mut params, INTEGER)?.contents).map(KeySize::Dsa);
        }
        if oid == EC_PUBLIC_KEY {
            let curve = expect(&mut algorithm, OID)?.contents;
            return CURVES.iter().find(|(c, _, _)| *c == curve).map(|&(_, name, bits)| KeySize::Ec(name, bits));
        }
        None
    }

    /// The digest of its signature when OpenSSL's default security level
    /// refuses it (SHA-1, MD5).
    pub(crate) fn weak_digest(&self) -> Option<&'static str> {
        let mut algorithm = self.signature_algorithm;
        let oid = expect(&mut algorithm, OID)?.contents;
        WEAK_SIGNATURES.iter().find(|(weak, _)| *weak == oid).map(|&(_, digest)| digest)
    }
}

/// A string of a Name in OpenSSL's canonical form (`asn1_string_canon`):
/// as UTF-8, leading and trailing whitespace dropped, each run inside one
/// space, ASCII lower case; None for a type OpenSSL copies as it is.
fn canonical_text(tag: u8, bytes: &[u8]) -> Option<Vec<u8>> {
    let text: Vec<u8> = match tag {
        // UTF8String
        0x0c => bytes.to_vec(),
        // PrintableString, T61String (as Latin-1), IA5String, VisibleString
        0x13 | 0x14 | 0x16 | 0x1a => bytes.iter().map(|&b| b as char).collect::<String>().into_bytes(),
        // UniversalString (UTF-32BE), BMPString (UTF-16BE)
        0x1c => bytes
            .chunks(4)
            .filter_map(|c| char::from_u32(u32::from_be_bytes(c.try_into().ok()?)))
            .collect::<String>()
            .into_bytes(),
        0x1e => char::decode_utf16(bytes.chunks(2).filter_map(|c| Some(u16::from_be_bytes(c.try_into().ok()?))))
            .map(|c| c.unwrap_or('\u{fffd}'))
            .collect::<String>()
            .into_bytes(),
        _ => return None,
    };
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = text.iter().position(|b| !space(b)).unwrap_or(text.len());
    let end = text.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    let mut out = Vec::with_capacity(end - start);
    for &b in &text[start..end] {
        if space(&b) {
            if out.last() != Some(&b' ') {
                out.push(b' ');
            }
        } else {
            out.push(b.to_ascii_lowercase());
        }
    }
    Some(out)
}

/// Appends one DER element.
fn push_element(out: &mut Vec<u8>, tag: u8, contents: &[u8]) {
    out.push(tag);
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len() - 1);
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(contents);
}

/// Whether an id-ecPublicKey key's parameters are explicit (a SEQUENCE of
/// the curve's numbers) rather than a named curve. `algorithm`: a
/// SubjectPublicKeyInfo's algorithm contents.
pub(crate) fn explicit_ec_parameters(algorithm: &[u8]) -> bool {
    let mut alg = algorithm;
    expect(&mut alg, OID).is_some_and(|oid| oid.contents == EC_PUBLIC_KEY) && alg.first() == Some(&SEQUENCE)
}

/// OpenSSL's hash of a Name (`X509_NAME_hash_ex`: what `openssl x509
/// -hash` prints and `openssl rehash` names a CA folder's files by): the
/// first four bytes, little-endian, of the SHA-1 of its canonical encoding
/// (each RDN's attributes with their strings canonical, the RDNs' SETs one
/// after another, no outer SEQUENCE). `name`: a Name's contents. Paired
/// with packages/cli/src/subject-hash.ts.
pub(crate) fn name_hash(name: &[u8]) -> Option<u32> {
    let mut canon = Vec::new();
    let mut rdns = name;
    while !rdns.is_empty() {
        let mut attributes = expect(&mut rdns, SET)?.contents;
        let mut encoded: Vec<Vec<u8>> = Vec::new();
        while !attributes.is_empty() {
            let mut fields = expect(&mut attributes, SEQUENCE)?.contents;
            let oid = expect(&mut fields, OID)?;
            let value = next(&mut fields)?;
            let mut inner = oid.whole.to_vec();
            match canonical_text(value.tag, value.contents) {
                Some(text) => push_element(&mut inner, UTF8_STRING, &text),
                None => inner.extend_from_slice(value.whole),
            }
            let mut attribute = Vec::new();
            push_element(&mut attribute, SEQUENCE, &inner);
            encoded.push(attribute);
        }
        // DER orders a SET OF by its elements' encodings.
        encoded.sort();
        push_element(&mut canon, SET, &encoded.concat());
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &canon);
    Some(u32::from_le_bytes(digest.as_ref()[..4].try_into().ok()?))
}

/// A SubjectPublicKeyInfo's contents (as a trust anchor holds them): its
/// algorithm's contents and the key's bits.
pub(crate) fn public_key_parts(contents: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut fields = contents;
    let algorithm = expect(&mut fields, SEQUENCE)?.contents;
    let key = bits(expect(&mut fields, BIT_STRING)?.contents)?;
    Some((algorithm, key))
}

/// The last commonName in a Name's contents.
pub(crate) fn common_name(name: &[u8]) -> Option<&[u8]> {
    let mut found = None;
    let mut sets = name;
    while let Some(set) = next(&mut sets) {
        if set.tag != SET {
            return found;
        }
        let mut pairs = set.contents;
        while let Some(pair) = next(&mut pairs) {
            let mut fields = pair.contents;
            if expect(&mut fields, OID).is_some_and(|oid| oid.contents == COMMON_NAME) {
                found = next(&mut fields).map(|value| value.contents);
            }
        }
    }
    found
}

/// Whether a DNS name matches a certificate's common name: equal ignoring
/// ASCII case, or a `*.` wildcard standing for one whole leftmost label.
pub(crate) fn name_matches(common_name: &[u8], host: &str) -> bool {
    let host = host.as_bytes();
    if let Some(suffix) = common_name.strip_prefix(b"*.") {
        return match host.iter().position(|&b| b == b'.') {
            Some(dot) if dot > 0 => host[dot + 1..].eq_ignore_ascii_case(suffix),
            _ => false,
        };
    }
    common_name.eq_ignore_ascii_case(host)
}

/// UTCTime (YYMMDDHHMMSSZ, 50–99 meaning 19xx) or GeneralizedTime
/// (YYYYMMDDHHMMSSZ) as Unix seconds; the only forms RFC 5280 allows.
fn time(e: Element<'_>) -> Option<i64> {
    let (year, rest) = match e.tag {
        UTC_TIME if e.contents.len() == 13 => {
            let yy = digits(&e.contents[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &e.contents[2..])
        }
        GENERALIZED_TIME if e.contents.len() == 15 => (digits(&e.contents[..4])?, &e.contents[4..]),
        _ => return None,
    };
    if rest[10] != b'Z' {
        return None;
    }
    let (month, day) = (digits(&rest[0..2])?, digits(&rest[2..4])?);
    let (hour, minute, second) = (digits(&rest[4..6])?, digits(&rest[6..8])?, digits(&rest[8..10])?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

fn digits(text: &[u8]) -> Option<i64> {
    text.iter().try_fold(0i64, |n, &b| b.is_ascii_digit().then(|| n * 10 + (b - b'0') as i64))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_unix_seconds() {
        let utc = Element { tag: UTC_TIME, contents: b"700101000000Z", whole: &[] };
        assert_eq!(time(utc), Some(0));
        let utc = Element { tag: UTC_TIME, contents: b"491231235959Z", whole: &[] };
        assert_eq!(time(utc), Some(2_524_607_999));
        let general = Element { tag: GENERALIZED_TIME, contents: b"20240229120000Z", whole: &[] };
        assert_eq!(time(general), Some(1_709_208_000));
        let local = Element { tag: GENERALIZED_TIME, contents: b"20240229120000+", whole: &[] };
        assert_eq!(time(local), None);
    }

    #[test]
    fn common_names_match_hosts_as_openssl_does() {
        assert!(name_matches(b"LocalHost", "localhost"));
        assert!(name_matches(b"*.example.test", "db.example.test"));
        assert!(!name_matches(b"*.example.test", "a.db.example.test"));
        assert!(!name_matches(b"*.example.test", "example.test"));
        assert!(!name_matches(b"localhost", "localhost.example"));
    }

    #[test]
    fn a_modulus_counts_its_bits_without_the_sign_byte() {
        // SEQUENCE { INTEGER 0x00 0x80 <127 bytes>, INTEGER 65537 } as a 1024-bit key's.
        let mut key = vec![0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00, 0x80];
        key.extend([0u8; 127]);
        key.extend([0x02, 0x03, 0x01, 0x00, 0x01]);
        let mut cert = Certificate {
            version: 3,
            signed: &[],
            signature_algorithm: &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05, 0x05, 0x00],
            signature: &[],
            issuer: &[1],
            subject: &[2],
            not_before: 0,
            not_after: 0,
            public_key_info: &[],
            public_key_algorithm: &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00],
            public_key: &key,
            extensions: &[],
        };
        assert_eq!(cert.key_size(), Some(KeySize::Rsa(1024)));
        assert_eq!(cert.weak_digest(), Some("SHA-1"));
        let p192 = [
            0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01,
            0x01,
        ];
        cert.public_key_algorithm = &p192;
        assert_eq!(cert.key_size(), Some(KeySize::Ec("P-192", 192)));
        // Cut short: None, not a panic.
        cert.public_key_algorithm = &p192[..12];
        assert_eq!(cert.key_size(), None);
    }

    #[test]
    fn a_subject_hashes_as_openssl_hashes_it() {
        // Subjects whose canonical form differs from their encoding: case, spaces, several RDNs,
        // a multi-valued RDN, UTF-8 beyond ASCII, a UTF8String beside a PrintableString.
        let subjects = [
            "/CN=respbench ca",
            "/CN=  Mixed   Case\tCA  ",
            "/C=FR/O=Acme Corp/OU=Ops/CN=root",
            "/O=Acme/CN=a+serialNumber=42",
            "/CN=Ünïcode Root/O=ÉTÉ",
            "/DC=example/DC=test/CN=x",
        ];
        let dir = std::env::temp_dir().join(format!("respbench-x509-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, subject) in subjects.iter().enumerate() {
            let pem = dir.join(format!("{i}.pem"));
            let made = std::process::Command::new("openssl")
                .args([
                    "req",
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                    "-nodes",
                    "-utf8",
                    "-days",
                    "1",
                ])
                .args([
                    "-keyout",
                    &dir.join(format!("{i}.key")).to_string_lossy(),
                    "-out",
                    &pem.to_string_lossy(),
                    "-subj",
                    subject,
                ])
                .output();
            let Ok(made) = made else { return }; // no openssl: nothing to compare with
            assert!(made.status.success(), "{subject}: {}", String::from_utf8_lossy(&made.stderr));
            let hash = std::process::Command::new("openssl")
                .args(["x509", "-hash", "-noout", "-in", &pem.to_string_lossy()])
                .output()
                .unwrap();
            let want = u32::from_str_radix(String::from_utf8_lossy(&hash.stdout).trim(), 16).unwrap();
            let text = std::fs::read_to_string(&pem).unwrap();
            let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
            let der = decode_base64(&b64);
            let cert = Certificate::parse(&der).unwrap();
            assert_eq!(name_hash(cert.subject), Some(want), "{subject}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn decode_base64(text: &str) -> Vec<u8> {
        let value = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
        bytes
            .chunks(4)
            .flat_map(|c| {
                let n = c.iter().enumerate().fold(0u32, |n, (i, &v)| n | (v as u32) << (18 - 6 * i));
                n.to_be_bytes()[1..c.len()].to_vec()
            })
            .collect()
    }

    #[test]
    fn a_truncated_certificate_is_none_not_a_panic() {
        let der = [0x30, 0x82, 0x01, 0x00, 0x30, 0x03, 0x02, 0x01];
        for end in 0..der.len() {
            assert!(Certificate::parse(&der[..end]).is_none());
        }
    }
}
