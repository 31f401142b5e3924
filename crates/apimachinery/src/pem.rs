//! PEM blocks as Go's `encoding/pem` decodes them (`pem.Decode`): the first block of a
//! text, its type, whether it had headers, its bytes, and the rest after it. Text that
//! is not a block is skipped, as Go skips it.

use base64::Engine;

/// One decoded PEM block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The type after `BEGIN` (`CERTIFICATE`, `CERTIFICATE REQUEST`, ...).
    pub kind: String,
    /// Whether the block had `Key: value` headers.
    pub has_headers: bool,
    /// The decoded contents.
    pub bytes: Vec<u8>,
}

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const TAIL: &str = "-----";

/// The first PEM block of `data` and what follows it; `None` when there is none.
pub fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    loop {
        let start = find(rest, BEGIN.as_bytes())?;
        // a BEGIN line must start a line
        if start > 0 && rest[start - 1] != b'\n' {
            rest = &rest[start + BEGIN.len()..];
            continue;
        }
        let after = &rest[start + BEGIN.len()..];
        let (line, body) = split_line(after);
        let line = trim_right(line);
        let Some(kind) = line.strip_suffix(TAIL.as_bytes()) else {
            rest = body;
            continue;
        };
        let kind = String::from_utf8_lossy(kind).into_owned();
        let end_marker = format!("\n{END}{kind}{TAIL}");
        // the body may be empty: the END line follows the BEGIN line at once
        let prefixed: Vec<u8> = [b"\n".as_slice(), body].concat();
        let Some(end) = find(&prefixed, end_marker.as_bytes()) else {
            rest = body;
            continue;
        };
        let inner = &prefixed[1..end.max(1)];
        let after_end = &prefixed[end + end_marker.len()..];
        let (tail_line, remaining) = split_line(after_end);
        if !trim_right(tail_line).is_empty() {
            rest = body;
            continue;
        }
        let (has_headers, b64) = headers(inner);
        let text: Vec<u8> = b64
            .iter()
            .copied()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&text) else {
            rest = body;
            continue;
        };
        let rem_offset = data.len() - remaining.len().min(data.len());
        return Some((
            Block {
                kind,
                has_headers,
                bytes,
            },
            &data[rem_offset..],
        ));
    }
}

/// Every block of `data`, in order.
pub fn decode_all(mut data: &[u8]) -> Vec<Block> {
    let mut out = Vec::new();
    while let Some((b, rest)) = decode(data) {
        out.push(b);
        data = rest;
    }
    out
}

/// A block encoded as PEM text (64 characters a line).
pub fn encode(kind: &str, bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = format!("{BEGIN}{kind}{TAIL}\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("{END}{kind}{TAIL}\n"));
    out
}

/// Splits the header lines (`Key: value`, up to a blank line) from the base64 body.
fn headers(inner: &[u8]) -> (bool, &[u8]) {
    let mut rest = inner;
    let mut any = false;
    loop {
        let (line, next) = split_line(rest);
        let line_t = trim_right(line);
        if line_t.contains(&b':') && !line_t.is_empty() {
            any = true;
            rest = next;
            continue;
        }
        if any && line_t.is_empty() {
            return (true, next);
        }
        return (any, rest);
    }
}

fn split_line(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|c| *c == b'\n') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &[]),
    }
}

fn trim_right(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    &b[..end]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_and_surrounding_text_is_skipped() {
        let one = encode("CERTIFICATE", b"abc");
        let two = encode("CERTIFICATE REQUEST", &[0u8; 100]);
        let text = format!("leading text\n{one}between\n{two}");
        let blocks = decode_all(text.as_bytes());
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].kind, "CERTIFICATE");
        assert_eq!(blocks[0].bytes, b"abc");
        assert!(!blocks[0].has_headers);
        assert_eq!(blocks[1].kind, "CERTIFICATE REQUEST");
        assert_eq!(blocks[1].bytes, vec![0u8; 100]);
    }

    #[test]
    fn headers_are_noticed_and_garbage_is_not_a_block() {
        let text = "-----BEGIN X-----\nProc-Type: 4,ENCRYPTED\n\nYWJj\n-----END X-----\n";
        let (b, rest) = decode(text.as_bytes()).expect("a block");
        assert!(b.has_headers);
        assert_eq!(b.bytes, b"abc");
        assert!(rest.is_empty());
        assert!(decode(b"no pem here").is_none());
        assert!(decode(b"-----BEGIN X-----\n!!!!\n-----END X-----\n").is_none());
        assert!(decode(b"-----BEGIN X-----\nYWJj\n-----END Y-----\n").is_none());
    }
}
