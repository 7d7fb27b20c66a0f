//! The few fields of an X.509 certificate that TLS verification needs and
//! webpki will not give for the certificates OpenSSL accepts and webpki
//! refuses: the version (webpki parses only v3), the validity, issuer,
//! subject and public key of a v1 certificate, whether a certificate has a
//! subjectAltName, its common name. A DER walk over borrowed bytes: nothing
//! is allocated, nothing is copied (it runs once per connection, in the
//! handshake).

/// One DER element: its tag and its contents, and the whole encoding.
#[derive(Clone, Copy)]
struct Element<'a> {
    tag: u8,
    contents: &'a [u8],
    whole: &'a [u8],
}

/// The next element of `input`, which moves past it; None when `input` does
/// not start with a whole element (multi-byte tags are not used here).
fn next<'a>(input: &mut &'a [u8]) -> Option<Element<'a>> {
    let bytes = *input;
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let count = (first & 0x7f) as usize;
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count].iter().fold(0usize, |n, &b| (n << 8) | b as usize);
        (len, &rest[count..])
    };
    if rest.len() < len {
        return None;
    }
    let header = bytes.len() - rest.len();
    *input = &rest[len..];
    Some(Element { tag, contents: &rest[..len], whole: &bytes[..header + len] })
}

fn expect<'a>(input: &mut &'a [u8], tag: u8) -> Option<Element<'a>> {
    let e = next(input)?;
    (e.tag == tag).then_some(e)
}

const SEQUENCE: u8 = 0x30;
const BOOLEAN: u8 = 0x01;
const OCTET_STRING: u8 = 0x04;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const OID: u8 = 0x06;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const VERSION: u8 = 0xa0;
const EXTENSIONS: u8 = 0xa3;
/// 2.5.4.3, commonName.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// 2.5.29.19, basicConstraints.
const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
/// 2.5.29.17, subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// 1.2.840.113549.1.1.1, rsaEncryption.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// The signature algorithms OpenSSL's default security level (2: Debian's,
/// so redis-cli's and redis-server's) refuses in a chain, by the digest
/// named: md5WithRSAEncryption, sha1WithRSAEncryption, ecdsa-with-SHA1,
/// dsa-with-sha1.
const WEAK_SIGNATURES: &[(&[u8], &str)] = &[
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x04], "MD5"),
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05], "SHA-1"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01], "SHA-1"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x03], "SHA-1"),
];
/// The fewest bits of an RSA key that security level 2 accepts.
pub(crate) const MIN_RSA_BITS: usize = 2048;

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
        let mut list = self.extensions;
        while let Some(ext) = next(&mut list) {
            let mut fields = ext.contents;
            if expect(&mut fields, OID).is_none_or(|oid| oid.contents != BASIC_CONSTRAINTS) {
                continue;
            }
            if fields.first() == Some(&BOOLEAN) {
                next(&mut fields);
            }
            let Some(value) = expect(&mut fields, OCTET_STRING) else { return false };
            let mut inner = value.contents;
            let Some(constraints) = expect(&mut inner, SEQUENCE) else { return false };
            let mut items = constraints.contents;
            return expect(&mut items, BOOLEAN).is_some_and(|ca| ca.contents == [0xff]);
        }
        false
    }

    /// The subject's (last) common name, as bytes of its string.
    pub(crate) fn common_name(&self) -> Option<&'a [u8]> {
        common_name(self.subject)
    }

    /// The bits of its RSA modulus; None for another kind of key.
    pub(crate) fn rsa_bits(&self) -> Option<usize> {
        let mut algorithm = self.public_key_algorithm;
        if expect(&mut algorithm, OID)?.contents != RSA_ENCRYPTION {
            return None;
        }
        let mut key = self.public_key;
        let mut fields = expect(&mut key, SEQUENCE)?.contents;
        let modulus = expect(&mut fields, INTEGER)?.contents;
        let start = modulus.iter().position(|&b| b != 0)?;
        Some((modulus.len() - start) * 8 - modulus[start].leading_zeros() as usize)
    }

    /// The digest of its signature when OpenSSL's default security level
    /// refuses it (SHA-1, MD5).
    pub(crate) fn weak_digest(&self) -> Option<&'static str> {
        let mut algorithm = self.signature_algorithm;
        let oid = expect(&mut algorithm, OID)?.contents;
        WEAK_SIGNATURES.iter().find(|(weak, _)| *weak == oid).map(|&(_, digest)| digest)
    }
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

/// A BIT STRING's bits, whole bytes only (what keys and signatures are).
fn bits(contents: &[u8]) -> Option<&[u8]> {
    match contents.split_first() {
        Some((0, rest)) => Some(rest),
        _ => None,
    }
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
        let cert = Certificate {
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
        assert_eq!(cert.rsa_bits(), Some(1024));
        assert_eq!(cert.weak_digest(), Some("SHA-1"));
    }

    #[test]
    fn a_truncated_certificate_is_none_not_a_panic() {
        let der = [0x30, 0x82, 0x01, 0x00, 0x30, 0x03, 0x02, 0x01];
        for end in 0..der.len() {
            assert!(Certificate::parse(&der[..end]).is_none());
        }
    }
}
