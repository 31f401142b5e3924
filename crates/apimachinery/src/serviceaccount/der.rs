//! The little of DER and PEM that key files need: reading a TLV, writing one, and
//! PEM blocks (RFC 7468).

use base64::Engine;

/// A DER element: its tag and contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub value: &'a [u8],
}

/// DER tags used by key structures.
pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const NULL: u8 = 0x05;
pub(crate) const OID: u8 = 0x06;

/// Reads the elements of `input` one after another.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Reader<'a> {
        Reader { rest: input }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element (single-byte tags, definite lengths up to 4 bytes).
    pub(crate) fn next(&mut self) -> Option<Tlv<'a>> {
        let (&tag, rest) = self.rest.split_first()?;
        let (&first, mut rest) = rest.split_first()?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let mut len = 0usize;
            for &b in &rest[..n] {
                len = (len << 8) | usize::from(b);
            }
            rest = &rest[n..];
            len
        };
        if rest.len() < len {
            return None;
        }
        let (value, rest) = rest.split_at(len);
        self.rest = rest;
        Some(Tlv { tag, value })
    }

    /// The next element, which must have `tag`.
    pub(crate) fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        let t = self.next()?;
        (t.tag == tag).then_some(t.value)
    }
}

/// The DER encoding of one element.
pub(crate) fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = value.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|&b| b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(value);
    out
}

/// One PEM block: its label (`PRIVATE KEY`, `PUBLIC KEY`, ...) and decoded contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PemBlock {
    /// The label between `-----BEGIN ` and `-----`.
    pub label: String,
    /// The DER contents.
    pub der: Vec<u8>,
}

/// Every PEM block of `text`, in order; text outside blocks is ignored (as Go's
/// `pem.Decode` skips it). Blocks whose base64 does not decode are an error.
pub fn pem_blocks(text: &str) -> Result<Vec<PemBlock>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut b64 = String::new();
        let mut closed = false;
        for l in lines.by_ref() {
            let l = l.trim();
            if l == end {
                closed = true;
                break;
            }
            // RFC 1421 headers (Proc-Type, DEK-Info) are not supported: encrypted keys
            if l.contains(':') {
                return Err(format!(
                    "PEM block {label:?} has headers (encrypted keys are not supported)"
                ));
            }
            b64.push_str(l);
        }
        if !closed {
            return Err(format!("PEM block {label:?} is not terminated"));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| format!("PEM block {label:?}: {e}"))?;
        out.push(PemBlock {
            label: label.to_string(),
            der,
        });
    }
    Ok(out)
}

/// `der` as a PEM block labelled `label`, lines of 64 characters.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlv_round_trips_short_and_long_lengths() {
        for len in [0usize, 1, 127, 128, 255, 256, 70000] {
            let value = vec![7u8; len];
            let enc = tlv(OCTET_STRING, &value);
            let mut r = Reader::new(&enc);
            assert_eq!(r.expect(OCTET_STRING), Some(&value[..]));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn truncated_input_is_refused() {
        let enc = tlv(SEQUENCE, &[1, 2, 3]);
        assert_eq!(Reader::new(&enc[..enc.len() - 1]).next(), None);
        assert_eq!(Reader::new(&[0x30, 0x85, 0, 0, 0, 0, 1]).next(), None);
        assert_eq!(Reader::new(&[0x30]).next(), None);
    }

    #[test]
    fn pem_round_trips_and_skips_text_around_blocks() {
        let a = pem_encode("PUBLIC KEY", &[1u8; 100]);
        let b = pem_encode("CERTIFICATE", &[2u8; 3]);
        let text = format!("comment\n{a}between\n{b}");
        let blocks = pem_blocks(&text).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].label, "PUBLIC KEY");
        assert_eq!(blocks[0].der, vec![1u8; 100]);
        assert_eq!(blocks[1].label, "CERTIFICATE");
        assert!(pem_blocks("-----BEGIN X-----\nAAAA\n").is_err());
        assert!(pem_blocks("-----BEGIN X-----\n!!!!\n-----END X-----\n").is_err());
    }
}
