//! Reading DER (X.509's encoding) over borrowed bytes: one element at a
//! time, nothing allocated, nothing copied. What x509.rs and
//! tls_algorithms.rs read certificates, keys and algorithm parameters with.

/// One DER element: its tag and its contents, and the whole encoding.
#[derive(Clone, Copy)]
pub(crate) struct Element<'a> {
    pub tag: u8,
    pub contents: &'a [u8],
    pub whole: &'a [u8],
}

/// The next element of `input`, which moves past it; None when `input` does
/// not start with a whole element (multi-byte tags are not used here).
pub(crate) fn next<'a>(input: &mut &'a [u8]) -> Option<Element<'a>> {
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

pub(crate) fn expect<'a>(input: &mut &'a [u8], tag: u8) -> Option<Element<'a>> {
    let e = next(input)?;
    (e.tag == tag).then_some(e)
}

pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const BOOLEAN: u8 = 0x01;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const SET: u8 = 0x31;
pub(crate) const UTF8_STRING: u8 = 0x0c;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const OID: u8 = 0x06;
pub(crate) const UTC_TIME: u8 = 0x17;
pub(crate) const GENERALIZED_TIME: u8 = 0x18;
pub(crate) const VERSION: u8 = 0xa0;
pub(crate) const EXTENSIONS: u8 = 0xa3;

/// A BIT STRING's bits, whole bytes only (what keys and signatures are).
pub(crate) fn bits(contents: &[u8]) -> Option<&[u8]> {
    match contents.split_first() {
        Some((0, rest)) => Some(rest),
        _ => None,
    }
}

/// An INTEGER's contents' bits, its sign byte and leading zeros aside.
pub(crate) fn integer_bits(contents: &[u8]) -> Option<usize> {
    let start = contents.iter().position(|&b| b != 0)?;
    Some((contents.len() - start) * 8 - contents[start].leading_zeros() as usize)
}
