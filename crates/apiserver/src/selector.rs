//! Kubernetes label selectors and field selectors.
//!
//! This module follows the behaviour of the upstream Go packages
//! `k8s.io/apimachinery/pkg/labels` (the `labelSelector` query parameter
//! syntax), `k8s.io/apimachinery/pkg/fields` (the `fieldSelector` query
//! parameter syntax) and `metav1.LabelSelectorAsSelector` (the structured
//! `{matchLabels, matchExpressions}` form used inside objects).
//!
//! Error messages are produced with the same wording as upstream so that
//! clients see the same `400 Bad Request` messages as from a real
//! kube-apiserver, e.g. parsing `a in (b` fails with
//! `unable to parse requirement: found '', expected: ',' or ')'`.
//!
//! Nothing in here panics, whatever the input.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// An error produced while parsing or building a selector.
///
/// The contained string is exactly the message upstream Kubernetes reports
/// for the same input; [`fmt::Display`] prints it unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

/// The offending value carried by a field error, rendered like Go's
/// `field.Error.ErrorBody` renders it.
enum BadValue<'a> {
    /// A Go `string`, rendered with `%q`.
    Str(&'a str),
    /// A Go `[]string`, rendered with `%#v`. Empty means a nil slice.
    List(&'a [String]),
}

impl fmt::Display for BadValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Str(s) => f.write_str(&go_quote(s)),
            BadValue::List([]) => f.write_str("[]string(nil)"),
            BadValue::List(items) => {
                f.write_str("[]string{")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&go_quote(item))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Formats a `field.Invalid` error: `<path>: Invalid value: <value>: <detail>`.
fn field_invalid(path: &str, value: BadValue<'_>, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

/// Mirrors `field.ErrorList.ToAggregate().Error()`: duplicates are dropped, a
/// single error is printed as is and several are printed as `[e1, e2]`.
fn aggregate(errors: Vec<String>) -> Option<SelectorError> {
    let mut seen = std::collections::HashSet::with_capacity(errors.len());
    let mut unique: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        if seen.insert(e.clone()) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop().map(SelectorError),
        _ => Some(SelectorError(format!("[{}]", unique.join(", ")))),
    }
}

/// Quotes a string the way Go's `strconv.Quote` (and so `%q`) does.
///
/// Printable characters are kept, `"` and `\` are backslash-escaped, the
/// usual C escapes are used where Go uses them and every other character is
/// written as `\xNN`, `\uNNNN` or `\UNNNNNNNN`. Go's notion of "printable"
/// relies on the full Unicode tables; here it is approximated (control,
/// format, separator, private-use and non-character code points are treated
/// as non-printable; unassigned code points are treated as printable).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Approximation of Go's `unicode.IsPrint`.
fn go_is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format_or_private = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xE000..=0xF8FF
            | 0xFDD0..=0xFDEF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0x10FFFF
    );
    !format_or_private && (u & 0xFFFE) != 0xFFFE
}

// ---------------------------------------------------------------------------
// Label key / value validation (k8s.io/apimachinery/pkg/api/validate/content)
// ---------------------------------------------------------------------------

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_MAX_LENGTH: usize = 63;
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MAX_LENGTH: usize = 63;
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(ex);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

fn dns1123_subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn is_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
fn is_dns1123_subdomain_syntax(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => alnum(f) && alnum(l) && b.iter().all(|c| alnum(c) || *c == b'-'),
            _ => false,
        }
    })
}

fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain_syntax(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

/// Validates a label key (an optional DNS subdomain prefix and `/`, then a
/// name of at most 63 characters). Returns upstream's messages
/// (`content.IsLabelKey`); an empty list means the key is valid.
pub fn label_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name = match value.split_once('/') {
        None => value,
        Some((_, suffix)) if suffix.contains('/') => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
        Some((prefix, suffix)) => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            suffix
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_KEY_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(LABEL_KEY_MAX_LENGTH)));
    }
    if !is_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Validates a label value (empty, or at most 63 characters of
/// `[-A-Za-z0-9_.]` starting and ending with an alphanumeric). Returns
/// upstream's messages (`content.IsLabelValue`); empty means valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `validateLabelKey`: one `field.Invalid` error at `path` or nothing.
fn validate_label_key(key: &str, path: &str) -> Option<String> {
    let errs = label_key_errors(key);
    if errs.is_empty() {
        None
    } else {
        Some(field_invalid(path, BadValue::Str(key), &errs.join("; ")))
    }
}

// ---------------------------------------------------------------------------
// Label requirements
// ---------------------------------------------------------------------------

/// The operator of a label requirement (`selection.Operator` upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOp {
    /// `key in (v1,v2)`: the label exists and has one of the values.
    In,
    /// `key notin (v1,v2)`: the label is absent or has none of the values.
    NotIn,
    /// `key=v`: the label exists and equals the value.
    Equals,
    /// `key==v`: same as [`LabelOp::Equals`], kept apart for printing.
    DoubleEquals,
    /// `key!=v`: the label is absent or differs from the value.
    NotEquals,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label exists and is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label exists and is an integer less than `n`.
    LessThan,
}

impl LabelOp {
    /// The upstream `selection.Operator` string (`in`, `notin`, `=`, `==`,
    /// `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            LabelOp::In => "in",
            LabelOp::NotIn => "notin",
            LabelOp::Equals => "=",
            LabelOp::DoubleEquals => "==",
            LabelOp::NotEquals => "!=",
            LabelOp::Exists => "exists",
            LabelOp::DoesNotExist => "!",
            LabelOp::GreaterThan => "gt",
            LabelOp::LessThan => "lt",
        }
    }
}

/// One requirement of a label selector: a key, an operator and values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

impl LabelRequirement {
    /// Builds and validates a requirement like upstream `labels.NewRequirement`:
    /// the key must be a valid label key, each value a valid label value,
    /// `In`/`NotIn` need at least one value, the equality operators exactly
    /// one, `Exists`/`DoesNotExist` none and `Gt`/`Lt` exactly one integer.
    /// All problems are reported together, with upstream's messages.
    pub fn new(key: &str, op: LabelOp, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut errs = Vec::new();
        if let Some(e) = validate_label_key(key, "key") {
            errs.push(e);
        }
        let list = BadValue::List(&values);
        match op {
            LabelOp::In | LabelOp::NotIn => {
                if values.is_empty() {
                    errs.push(field_invalid(
                        "values",
                        list,
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::NotEquals => {
                if values.len() != 1 {
                    errs.push(field_invalid(
                        "values",
                        list,
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            LabelOp::Exists | LabelOp::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(field_invalid(
                        "values",
                        list,
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            LabelOp::GreaterThan | LabelOp::LessThan => {
                if values.len() != 1 {
                    errs.push(field_invalid(
                        "values",
                        list,
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(field_invalid(
                            &format!("values[{i}]"),
                            BadValue::Str(v),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let verrs = label_value_errors(v);
            if !verrs.is_empty() {
                errs.push(field_invalid(
                    &format!("values[{i}][{key}]"),
                    BadValue::Str(v),
                    &verrs.join("; "),
                ));
            }
        }
        match aggregate(errs) {
            Some(e) => Err(e),
            None => Ok(LabelRequirement {
                key: key.to_string(),
                op,
                values,
            }),
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn op(&self) -> LabelOp {
        self.op
    }

    /// The values, in the order given (sorted and de-duplicated when parsed
    /// from a string).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set, seen through `get`, satisfies this requirement.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            LabelOp::In | LabelOp::Equals | LabelOp::DoubleEquals => {
                get(&self.key).is_some_and(has)
            }
            LabelOp::NotIn | LabelOp::NotEquals => get(&self.key).is_none_or(|v| !has(v)),
            LabelOp::Exists => get(&self.key).is_some(),
            LabelOp::DoesNotExist => get(&self.key).is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let Some(Ok(actual)) = get(&self.key).map(str::parse::<i64>) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.op == LabelOp::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    /// Prints the requirement in selector syntax, values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == LabelOp::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, parens) = match self.op {
            LabelOp::Exists | LabelOp::DoesNotExist => return Ok(()),
            LabelOp::Equals => ("=", false),
            LabelOp::DoubleEquals => ("==", false),
            LabelOp::NotEquals => ("!=", false),
            LabelOp::In => (" in ", true),
            LabelOp::NotIn => (" notin ", true),
            LabelOp::GreaterThan => (">", false),
            LabelOp::LessThan => ("<", false),
        };
        f.write_str(op)?;
        if parens {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if parens {
            f.write_str(")")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Lexer (labels.Lexer)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn literal_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Byte-oriented tokenizer, faithful to upstream including its treatment of
/// a NUL byte as "end of input" where a token starts.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = self.pos;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let bytes = self.s.get(start..end).unwrap_or_default();
        let lit = String::from_utf8_lossy(bytes).into_owned();
        match literal_token(bytes) {
            Some(tok) => (tok, lit),
            None => (Token::Identifier, lit),
        }
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut buffer: Vec<u8> = Vec::new();
        let mut last: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            buffer.push(ch);
            if let Some(tok) = literal_token(&buffer) {
                last = Some((tok, buffer.len()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, len)) => (
                tok,
                String::from_utf8_lossy(buffer.get(..len).unwrap_or_default()).into_owned(),
            ),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buffer)
                ),
            ),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_id_or_keyword()
        }
    }
}

// ---------------------------------------------------------------------------
// Parser (labels.Parser)
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(s: &str) -> Self {
        let mut lexer = Lexer::new(s);
        let mut items = Vec::new();
        loop {
            let (tok, lit) = lexer.lex();
            let done = tok == Token::EndOfString;
            items.push((tok, lit));
            if done {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn item(&self, i: usize, ctx: Context) -> (Token, String) {
        let (tok, lit) = match self.items.get(i) {
            Some((tok, lit)) => (*tok, lit.clone()),
            None => (Token::EndOfString, String::new()),
        };
        let tok = match (ctx, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => tok,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let out = self.item(self.position, ctx);
        self.position += 1;
        out
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| {
                        SelectorError(format!("unable to parse requirement: {}", e.0))
                    })?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(SelectorError(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => {
                    return Err(SelectorError(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, SelectorError> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return LabelRequirement::new(&key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        LabelRequirement::new(&key, op, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<LabelOp>), SelectorError> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(LabelOp::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(SelectorError(format!(
                "found '{lit}', expected: identifier"
            )));
        }
        if let Some(e) = validate_label_key(&lit, "<nil>") {
            return Err(SelectorError(e));
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && op.is_none() {
            op = Some(LabelOp::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<LabelOp, SelectorError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => LabelOp::In,
            Token::Equals => LabelOp::Equals,
            Token::DoubleEquals => LabelOp::DoubleEquals,
            Token::GreaterThan => LabelOp::GreaterThan,
            Token::LessThan => LabelOp::LessThan,
            Token::NotIn => LabelOp::NotIn,
            Token::NotEquals => LabelOp::NotEquals,
            _ => {
                return Err(SelectorError(format!(
                    "found '{lit}', expected: {BINARY_OPERATORS}"
                )))
            }
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(SelectorError(format!("found '{lit}' expected: '('")));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(SelectorError(format!("found '{lit}', expected: ')'")));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(SelectorError(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(SelectorError(format!(
                                "found '{lit2}', expected: ',' or ')'"
                            )))
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => {
                    return Err(SelectorError(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )))
                }
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(BTreeSet::from([lit]));
        }
        Err(SelectorError(format!(
            "found '{lit}', expected: identifier"
        )))
    }
}

// ---------------------------------------------------------------------------
// LabelSelector
// ---------------------------------------------------------------------------

/// A parsed label selector: the AND of its requirements, sorted by key.
///
/// The empty selector matches everything. A selector built from a JSON
/// `null` (upstream `labels.Nothing()`) matches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every label set (upstream `Everything()`).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches no label set (upstream `Nothing()`).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Builds a selector from requirements, sorted by key like upstream
    /// `Selector.Add` (the sort is stable).
    pub fn from_requirements(mut requirements: Vec<LabelRequirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            nothing: false,
        }
    }

    /// Parses the `labelSelector` string syntax (upstream `labels.Parse`),
    /// e.g. `env in (prod,qa),tier!=db,!legacy,release`.
    ///
    /// Keys and values are validated; errors carry upstream's messages.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let reqs = Parser::new(s).parse()?;
        Ok(Self::from_requirements(reqs))
    }

    /// Converts a `metav1.LabelSelector` JSON value
    /// (`{"matchLabels": {...}, "matchExpressions": [...]}`) like upstream
    /// `LabelSelectorAsSelector`.
    ///
    /// `null` gives [`LabelSelector::nothing`]; an object with neither
    /// labels nor expressions gives [`LabelSelector::everything`].
    /// `matchLabels` entries become `key=value` requirements (checked in key
    /// order) and expressions accept the operators `In`, `NotIn`, `Exists`
    /// and `DoesNotExist`. A value of the wrong JSON type is reported in the
    /// style of Go's `encoding/json`.
    pub fn from_label_selector_json(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(o) => o,
            other => {
                return Err(SelectorError(format!(
                    "json: cannot unmarshal {} into Go value of type v1.LabelSelector",
                    json_kind(other)
                )))
            }
        };
        let mut labels: Vec<(&String, &str)> = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, val) in m {
                    match val {
                        Value::String(s) => labels.push((k, s)),
                        Value::Null => labels.push((k, "")),
                        other => {
                            return Err(SelectorError(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type string",
                                json_kind(other)
                            )))
                        }
                    }
                }
            }
            Some(other) => {
                return Err(SelectorError(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type map[string]string",
                    json_kind(other)
                )))
            }
        }
        let exprs: &[Value] = match obj.get("matchExpressions") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(SelectorError(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type []v1.LabelSelectorRequirement",
                    json_kind(other)
                )))
            }
        };
        if labels.is_empty() && exprs.is_empty() {
            return Ok(Self::everything());
        }
        labels.sort_by(|a, b| a.0.cmp(b.0));
        let mut reqs = Vec::with_capacity(labels.len() + exprs.len());
        for (k, val) in labels {
            reqs.push(LabelRequirement::new(
                k,
                LabelOp::Equals,
                vec![val.to_string()],
            )?);
        }
        for expr in exprs {
            let (key, operator, values) = decode_expression(expr)?;
            let op = match operator.as_str() {
                "In" => LabelOp::In,
                "NotIn" => LabelOp::NotIn,
                "Exists" => LabelOp::Exists,
                "DoesNotExist" => LabelOp::DoesNotExist,
                other => {
                    return Err(SelectorError(format!(
                        "{} is not a valid pod selector operator",
                        go_quote(other)
                    )))
                }
            };
            reqs.push(LabelRequirement::new(&key, op, values)?);
        }
        Ok(Self::from_requirements(reqs))
    }

    /// Whether the label set seen through `get` (label key to value)
    /// satisfies every requirement.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(&get))
    }

    /// Like [`LabelSelector::matches`] for a JSON `metadata.labels` object.
    /// Entries whose value is not a string are treated as absent.
    pub fn matches_map(&self, labels: &Map<String, Value>) -> bool {
        self.matches(|k| labels.get(k).and_then(Value::as_str))
    }

    /// True when the selector does not restrict anything (no requirements).
    /// [`LabelSelector::nothing`] is not empty.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True only for [`LabelSelector::nothing`].
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// If the selector pins `key` to a single value (`=`, `==` or `in` with
    /// one value on the first requirement for that key), returns it
    /// (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.op, r.values.as_slice()) {
            (LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical form, like upstream `String()`: requirements joined with
    /// `,`, values sorted; empty for the empty and the nothing selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The JSON type of a value as Go's decoding errors name it.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes one `LabelSelectorRequirement` object into key, operator, values.
fn decode_expression(expr: &Value) -> Result<(String, String, Vec<String>), SelectorError> {
    let field_err = |field: &str, v: &Value, ty: &str| {
        SelectorError(format!(
            "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.{field} of type {ty}",
            json_kind(v)
        ))
    };
    let obj = match expr {
        Value::Object(o) => o,
        Value::Null => return Ok((String::new(), String::new(), Vec::new())),
        other => {
            return Err(SelectorError(format!(
                "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type v1.LabelSelectorRequirement",
                json_kind(other)
            )))
        }
    };
    let string_field = |name: &str| -> Result<String, SelectorError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(field_err(name, other, "string")),
        }
    };
    let key = string_field("key")?;
    let operator = string_field("operator")?;
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                other => Err(field_err("values", other, "string")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(field_err("values", other, "[]string")),
    };
    Ok((key, operator, values))
}

// ---------------------------------------------------------------------------
// Field selectors (k8s.io/apimachinery/pkg/fields)
// ---------------------------------------------------------------------------

/// The operator of a field selector requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One `field op value` term of a field selector; `value` is unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name` (taken verbatim, spaces included).
    pub field: String,
    /// The comparison.
    pub op: FieldOp,
    /// The value to compare with, after unescaping `\\`, `\,` and `\=`.
    pub value: String,
}

/// A parsed field selector: the AND of its requirements.
///
/// Requirements are ordered like upstream (terms sorted as written). The
/// empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Escapes a literal value for use in a field selector (upstream
/// `fields.EscapeValue`): `\` becomes `\\`, `,` becomes `\,` and `=`
/// becomes `\=`.
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_field_value`] (upstream `fields.UnescapeValue`).
/// Unknown escapes, a trailing `\` and bare `,` or `=` are errors.
pub fn unescape_field_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
                in_slash = false;
                continue;
            }
            return Err(SelectorError(format!(
                "invalid field selector: invalid escape sequence: \\{c}"
            )));
        }
        match c {
            '\\' => in_slash = true,
            // Go formats the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(SelectorError(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )))
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

/// Splits on commas not preceded by an escaping backslash; the pieces keep
/// their escapes.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(s.get(start..i).unwrap_or_default());
            start = i + 1;
        }
    }
    terms.push(s.get(start..).unwrap_or_default());
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` tried at
/// each position). Returns `(lhs, operator, raw rhs)`.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = term.get(i..).unwrap_or_default();
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((term.get(..i).unwrap_or_default(), op, rhs));
            }
        }
    }
    None
}

impl FieldSelector {
    /// Parses the `fieldSelector` string syntax (upstream
    /// `fields.ParseSelector`): comma-separated `field=value`,
    /// `field==value` or `field!=value` terms, values escaped with `\`.
    ///
    /// Terms with both an empty field and an empty value are dropped, as
    /// upstream does.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(SelectorError(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let value = unescape_field_value(rhs)?;
            if lhs.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: lhs.to_string(),
                op: if op == "!=" {
                    FieldOp::NotEquals
                } else {
                    FieldOp::Equals
                },
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The requirements, in upstream order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether an object, seen through `get` (field path to value), satisfies
    /// every requirement. A field for which `get` returns `None` counts as
    /// the empty string.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = get(&r.field).unwrap_or_default();
            match r.op {
                FieldOp::Equals => actual == r.value,
                FieldOp::NotEquals => actual != r.value,
            }
        })
    }

    /// True when the selector has no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value `field` must equal, if some `=` requirement pins it
    /// (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.op == FieldOp::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form, like upstream `String()`: `field=value` or
    /// `field!=value` terms joined with `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.op {
                FieldOp::Equals => "=",
                FieldOp::NotEquals => "!=",
            };
            write!(f, "{}{}{}", r.field, op, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    }

    fn req(key: &str, op: LabelOp, vals: &[&str]) -> LabelRequirement {
        let mut v: Vec<String> = vals.iter().map(|s| s.to_string()).collect();
        v.sort();
        v.dedup();
        LabelRequirement::new(key, op, v).expect("valid requirement")
    }

    fn parse_err(s: &str) -> String {
        LabelSelector::parse(s).expect_err(s).0
    }

    const KEY_NAME_REGEX_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    // Port of upstream labels TestSelectorParse.
    #[test]
    fn labels_selector_parse() {
        let good = [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ];
        for s in good {
            let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(sel.to_string(), s.replace(' ', ""), "restring of {s:?}");
        }
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(LabelSelector::parse(s).is_err(), "{s} should fail");
        }
    }

    // Port of upstream labels TestDeterministicParse.
    #[test]
    fn labels_deterministic_parse() {
        let a = LabelSelector::parse("x=a,a=x").unwrap();
        let b = LabelSelector::parse("a=x,x=a").unwrap();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), "a=x,x=a");
    }

    fn expect_match(sel: &str, labels: &[(&str, &str)], want: bool) {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches_map(&set(labels)), want, "{sel} vs {labels:?}");
    }

    // Port of upstream labels TestSelectorMatches (and TestEverything).
    #[test]
    fn labels_selector_matches() {
        expect_match("", &[("x", "y")], true);
        expect_match("x=y", &[("x", "y")], true);
        expect_match("x=y,z=w", &[("x", "y"), ("z", "w")], true);
        expect_match("x!=y,z!=w", &[("x", "z"), ("z", "a")], true);
        expect_match("notin=in", &[("notin", "in")], true);
        expect_match("x", &[("x", "z")], true);
        expect_match("!x", &[("y", "z")], true);
        expect_match("x>1", &[("x", "2")], true);
        expect_match("x<1", &[("x", "0")], true);
        expect_match("x=z", &[], false);
        expect_match("x=y", &[("x", "z")], false);
        expect_match("x=y,z=w", &[("x", "w"), ("z", "w")], false);
        expect_match("x!=y,z!=w", &[("x", "z"), ("z", "w")], false);
        expect_match("x", &[("y", "z")], false);
        expect_match("!x", &[("x", "z")], false);
        expect_match("x>1", &[("x", "0")], false);
        expect_match("x<1", &[("x", "2")], false);

        let ls = [("foo", "bar"), ("baz", "blah")];
        expect_match("foo=bar", &ls, true);
        expect_match("baz=blah", &ls, true);
        expect_match("foo=bar,baz=blah", &ls, true);
        expect_match("foo=blah", &ls, false);
        expect_match("baz=bar", &ls, false);
        expect_match("foo=bar,foobar=bar,baz=blah", &ls, false);

        let everything = LabelSelector::everything();
        assert!(everything.is_empty());
        assert!(everything.matches_map(&set(&[("x", "y")])));
        assert!(LabelSelector::parse("").unwrap().is_empty());
    }

    // Port of upstream labels TestLexer.
    #[test]
    fn labels_lexer() {
        let cases = [
            ("", Token::EndOfString),
            (",", Token::Comma),
            ("notin", Token::NotIn),
            ("in", Token::In),
            ("=", Token::Equals),
            ("==", Token::DoubleEquals),
            (">", Token::GreaterThan),
            ("<", Token::LessThan),
            ("!", Token::DoesNotExist),
            ("!=", Token::NotEquals),
            ("(", Token::OpenPar),
            (")", Token::ClosedPar),
            ("~", Token::Identifier),
            ("||", Token::Identifier),
        ];
        for (s, want) in cases {
            let (tok, lit) = Lexer::new(s).lex();
            assert_eq!(tok, want, "{s:?}");
            assert_eq!(lit, s, "{s:?}");
        }
    }

    // Port of upstream labels TestLexerSequence and TestParserLookahead.
    #[test]
    fn labels_lexer_sequence_and_lookahead() {
        use Token::*;
        let cases: Vec<(&str, Vec<Token>)> = vec![
            (
                "key in ( value )",
                vec![Identifier, In, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key notin ( value )",
                vec![Identifier, NotIn, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key in ( value1, value2 )",
                vec![
                    Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
                ],
            ),
            ("key", vec![Identifier]),
            ("!key", vec![DoesNotExist, Identifier]),
            ("()", vec![OpenPar, ClosedPar]),
            ("", vec![]),
            (
                "x in (),y",
                vec![Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
            ),
            (
                "== != (), = notin",
                vec![
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                ],
            ),
            ("key>2", vec![Identifier, GreaterThan, Identifier]),
            ("key<1", vec![Identifier, LessThan, Identifier]),
        ];
        for (s, want) in cases {
            let mut lexer = Lexer::new(s);
            let mut got = Vec::new();
            loop {
                let (tok, _) = lexer.lex();
                if tok == EndOfString {
                    break;
                }
                got.push(tok);
            }
            assert_eq!(got, want, "{s:?}");

            let mut p = Parser::new(s);
            assert_eq!(p.items.len(), want.len() + 1, "{s:?}");
            loop {
                let a = p.lookahead(Context::KeyAndOperator);
                let b = p.consume(Context::KeyAndOperator);
                if a.0 == EndOfString {
                    break;
                }
                assert_eq!(a, b);
            }
        }
    }

    // Port of upstream labels TestRequirementConstructor.
    #[test]
    fn labels_requirement_constructor() {
        use LabelOp::*;
        let cases: Vec<(String, LabelOp, Vec<&str>, bool)> = vec![
            ("x".into(), In, vec![], false),
            ("x".into(), NotIn, vec![], false),
            ("x".into(), In, vec!["foo"], true),
            ("x".into(), NotIn, vec!["foo"], true),
            ("x".into(), Exists, vec![], true),
            ("x".into(), DoesNotExist, vec![], true),
            ("1foo".into(), In, vec!["bar"], true),
            ("1234".into(), In, vec!["bar"], true),
            ("y".into(), GreaterThan, vec!["1"], true),
            ("z".into(), LessThan, vec!["6"], true),
            ("foo".into(), GreaterThan, vec!["bar"], false),
            ("barz".into(), LessThan, vec!["blah"], false),
            ("a".repeat(254), Exists, vec![], false),
        ];
        for (key, op, vals, ok) in cases {
            let vals: Vec<String> = vals.into_iter().map(String::from).collect();
            let got = LabelRequirement::new(&key, op, vals);
            assert_eq!(got.is_ok(), ok, "{key} {op:?}: {got:?}");
        }
    }

    // Port of upstream labels TestToString (the case with a zero-valued
    // Requirement is not representable here and is left out).
    #[test]
    fn labels_to_string() {
        use LabelOp::*;
        let cases = vec![
            (
                vec![
                    req("x", In, &["abc", "def"]),
                    req("y", NotIn, &["jkl"]),
                    req("z", Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", NotIn, &["abc", "def"]),
                    req("y", NotEquals, &["jkl"]),
                    req("z", DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", NotIn, &["abc"]),
                    req("y", In, &["jkl", "mno"]),
                    req("z", NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Equals, &["abc"]),
                    req("y", DoubleEquals, &["jkl"]),
                    req("z", NotEquals, &["a"]),
                    req("z", Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("x", GreaterThan, &["2"]),
                    req("y", LessThan, &["8"]),
                    req("z", Exists, &[]),
                ],
                "x>2,y<8,z",
            ),
        ];
        for (reqs, want) in cases {
            let sel = LabelSelector::from_requirements(reqs);
            assert_eq!(sel.to_string(), want);
        }
        // Values print sorted without changing the stored order.
        let r = LabelRequirement::new("k", In, vec!["b".into(), "a".into()]).unwrap();
        assert_eq!(r.to_string(), "k in (a,b)");
        assert_eq!(r.values(), ["b".to_string(), "a".to_string()]);
    }

    // Port of upstream labels TestRequirementSelectorMatching (minus the
    // zero-valued Requirement case).
    #[test]
    fn labels_requirement_selector_matching() {
        use LabelOp::*;
        let cases = vec![
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![req("x", In, &["foo"]), req("y", NotIn, &["alpha"])],
                true,
            ),
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![req("x", In, &["foo"]), req("y", In, &["alpha"])],
                false,
            ),
            (
                set(&[("y", "")]),
                vec![req("x", NotIn, &[""]), req("y", Exists, &[])],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![req("x", DoesNotExist, &[]), req("y", Exists, &[])],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![req("x", NotIn, &[""]), req("y", DoesNotExist, &[])],
                false,
            ),
            (set(&[("y", "baz")]), vec![req("x", In, &[""])], false),
            (
                set(&[("z", "2")]),
                vec![req("z", GreaterThan, &["1"])],
                true,
            ),
            (
                set(&[("z", "v2")]),
                vec![req("z", GreaterThan, &["1"])],
                false,
            ),
        ];
        for (labels, reqs, want) in cases {
            let sel = LabelSelector::from_requirements(reqs);
            assert_eq!(sel.matches_map(&labels), want, "{sel} vs {labels:?}");
        }
    }

    // Port of upstream labels TestSetSelectorParser.
    #[test]
    fn labels_set_selector_parser() {
        use LabelOp::*;
        type Case = (&'static str, Option<Vec<LabelRequirement>>, bool);
        let cases: Vec<Case> = vec![
            ("", Some(vec![]), true),
            ("\rx", Some(vec![req("x", Exists, &[])]), true),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                Some(vec![req(
                    "this-is-a-dns.domain.com/key-with-dash",
                    Exists,
                    &[],
                )]),
                true,
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                Some(vec![req(
                    "this-is-another-dns.domain.com/key-with-dash",
                    In,
                    &["so", "what"],
                )]),
                true,
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                Some(vec![req(
                    "0.1.2.domain/99",
                    NotIn,
                    &["10.10.100.1", "tick.tack.clock"],
                )]),
                true,
            ),
            (
                "foo  in\t (abc)",
                Some(vec![req("foo", In, &["abc"])]),
                true,
            ),
            (
                "x notin\n (abc)",
                Some(vec![req("x", NotIn, &["abc"])]),
                true,
            ),
            (
                "x  notin\t\t\t(abc,def)",
                Some(vec![req("x", NotIn, &["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,def)",
                Some(vec![req("x", In, &["abc", "def"])]),
                true,
            ),
            ("x in (abc,)", Some(vec![req("x", In, &["abc", ""])]), true),
            ("x in ()", Some(vec![req("x", In, &[""])]), true),
            (
                "x notin (abc,,def),bar,z in (),w",
                Some(vec![
                    req("bar", Exists, &[]),
                    req("w", Exists, &[]),
                    req("x", NotIn, &["abc", "", "def"]),
                    req("z", In, &[""]),
                ]),
                true,
            ),
            ("x,y in (a)", None, true),
            ("x=a", Some(vec![req("x", Equals, &["a"])]), true),
            ("x>1", Some(vec![req("x", GreaterThan, &["1"])]), true),
            ("x<7", Some(vec![req("x", LessThan, &["7"])]), true),
            (
                "x=a,y!=b",
                Some(vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"])]),
                true,
            ),
            (
                "x=a,y!=b,z in (h,i,j)",
                Some(vec![
                    req("x", Equals, &["a"]),
                    req("y", NotEquals, &["b"]),
                    req("z", In, &["h", "i", "j"]),
                ]),
                true,
            ),
            ("x=a||y=b", None, false),
            ("x,,y", None, false),
            (",x,y", None, false),
            ("x nott in (y)", None, false),
            ("x notin ( )", Some(vec![req("x", NotIn, &[""])]), true),
            (
                "x notin (, a)",
                Some(vec![req("x", NotIn, &["", "a"])]),
                true,
            ),
            ("a in (xyz),", None, false),
            ("a in (xyz)b notin ()", None, false),
            ("a ", Some(vec![req("a", Exists, &[])]), true),
            (
                "a in (x,y,notin, z,in)",
                Some(vec![req("a", In, &["in", "notin", "x", "y", "z"])]),
                true,
            ),
            ("a in (xyz abc)", None, false),
            ("a notin(", None, false),
            ("a (", None, false),
            ("(", None, false),
        ];
        for (input, want, valid) in cases {
            let got = LabelSelector::parse(input);
            assert_eq!(got.is_ok(), valid, "{input:?}: {got:?}");
            if let (Ok(sel), Some(want)) = (got, want) {
                assert_eq!(sel.requirements(), want.as_slice(), "{input:?}");
            }
        }
    }

    // Port of upstream labels TestRequiresExactMatch.
    #[test]
    fn labels_requires_exact_match() {
        use LabelOp::*;
        let one = |reqs| LabelSelector::from_requirements(reqs);
        assert_eq!(
            one(vec![req("key", In, &["value"])]).requires_exact_match("key"),
            Some("value")
        );
        assert_eq!(
            one(vec![req("key", In, &["value", "value2"])]).requires_exact_match("key"),
            None
        );
        assert_eq!(
            one(vec![
                req("key", In, &["value", "value1"]),
                req("key2", In, &["value2"])
            ])
            .requires_exact_match("key2"),
            Some("value2")
        );
        assert_eq!(
            one(vec![req("key", Equals, &["value"])]).requires_exact_match("key"),
            Some("value")
        );
        assert_eq!(
            one(vec![req("key", DoubleEquals, &["value"])]).requires_exact_match("key"),
            Some("value")
        );
        assert_eq!(
            one(vec![req("key", NotEquals, &["value"])]).requires_exact_match("key"),
            None
        );
    }

    // Exact upstream error messages for the string syntax.
    #[test]
    fn labels_parse_error_messages() {
        let cases = [
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
            (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
            ("(", "found '(', expected: !, identifier, or 'end of string'"),
            ("a in (xyz),", "found '', expected: identifier after ','"),
            ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
            ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
            ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
            ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
            ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
            ("a in b", "unable to parse requirement: found 'b' expected: '('"),
            ("a in (b,", "unable to parse requirement: found '', expected: ',', or identifier"),
            ("a in (b,=", "unable to parse requirement: found '=', expected: ',', or identifier"),
            ("a=(", "unable to parse requirement: found '(', expected: identifier"),
            ("!", "unable to parse requirement: found '', expected: identifier"),
            ("!!a", "unable to parse requirement: found '!', expected: identifier"),
            ("a,", "found '', expected: identifier after ','"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_err(input), want, "{input:?}");
        }
    }

    // Key and value validation messages, as produced through Parse.
    #[test]
    fn labels_parse_validation_messages() {
        assert_eq!(
            parse_err("-a"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"-a\": {KEY_NAME_REGEX_MSG}"
            )
        );
        assert_eq!(
            parse_err("a/b/c=d"),
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert_eq!(
            parse_err("Example.com/a"),
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            parse_err("/a"),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
        );
        assert_eq!(
            parse_err("a/"),
            format!("unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; {KEY_NAME_REGEX_MSG}")
        );
        let long = "a".repeat(64);
        assert_eq!(
            parse_err(&long),
            format!("unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 bytes")
        );
        assert_eq!(
            parse_err(&format!("x={long}")),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes")
        );
        let long_bad = format!("{long}-");
        assert_eq!(
            parse_err(&format!("x={long_bad}")),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"{long_bad}\": must be no more than 63 bytes; {VALUE_REGEX_MSG}")
        );
        assert_eq!(
            parse_err("x in (a,-b,c-)"),
            format!("unable to parse requirement: [values[0][x]: Invalid value: \"-b\": {VALUE_REGEX_MSG}, values[2][x]: Invalid value: \"c-\": {VALUE_REGEX_MSG}]")
        );
        assert_eq!(
            parse_err("x>-"),
            format!("unable to parse requirement: [values[0]: Invalid value: \"-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-\": {VALUE_REGEX_MSG}]")
        );
        // Non-printable characters are quoted like Go's %q.
        assert_eq!(
            parse_err("a\u{1}b"),
            format!("unable to parse requirement: <nil>: Invalid value: \"a\\x01b\": {KEY_NAME_REGEX_MSG}")
        );
        assert_eq!(
            parse_err("é"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"é\": {KEY_NAME_REGEX_MSG}"
            )
        );
        assert_eq!(
            parse_err("a\u{a0}b"),
            format!("unable to parse requirement: <nil>: Invalid value: \"a\\u00a0b\": {KEY_NAME_REGEX_MSG}")
        );
        // Valid limits.
        let key = format!("{}/{}", "a".repeat(253), "b".repeat(63));
        assert!(LabelSelector::parse(&format!("{key}={}", "c".repeat(63))).is_ok());
    }

    // Port of upstream meta/v1 TestLabelSelectorAsSelector.
    #[test]
    fn label_selector_as_selector() {
        let ml = json!({"foo": "bar"});
        let me = json!([{"key": "baz", "operator": "In", "values": ["qux", "norf"]}]);
        let cases: Vec<(Value, Option<&str>)> = vec![
            (json!({}), Some("")),
            (json!({"matchLabels": ml}), Some("foo=bar")),
            (json!({"matchExpressions": me}), Some("baz in (norf,qux)")),
            (
                json!({"matchLabels": ml, "matchExpressions": me}),
                Some("baz in (norf,qux),foo=bar"),
            ),
            (
                json!({"matchExpressions": [{"key": "baz", "operator": "Exists", "values": ["qux", "norf"]}]}),
                None,
            ),
            (
                json!({"matchExpressions": [{"key": "baz", "operator": "In", "values": []}]}),
                None,
            ),
            (
                json!({"matchExpressions": [{"key": "baz", "operator": "Gt", "values": ["1"]}]}),
                None,
            ),
        ];
        for (input, want) in cases {
            let got = LabelSelector::from_label_selector_json(&input);
            match want {
                Some(s) => assert_eq!(got.expect("ok").to_string(), s, "{input}"),
                None => assert!(got.is_err(), "{input}"),
            }
        }
        let nothing = LabelSelector::from_label_selector_json(&Value::Null).unwrap();
        assert!(nothing.matches_nothing());
        assert!(!nothing.is_empty());
        assert!(!nothing.matches_map(&set(&[("any", "label")])));
        assert_eq!(nothing.to_string(), "");
        let everything = LabelSelector::from_label_selector_json(&json!({})).unwrap();
        assert!(everything.is_empty());
        assert!(everything.matches_map(&set(&[("any", "label")])));
    }

    #[test]
    fn label_selector_json_matching_and_errors() {
        let sel = LabelSelector::from_label_selector_json(&json!({
            "matchLabels": {"app": "web", "tier": "frontend"},
            "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "team", "operator": "Exists", "values": null},
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,!canary,env notin (dev),team,tier=frontend"
        );
        assert!(sel.matches_map(&set(&[("app", "web"), ("tier", "frontend"), ("team", "a")])));
        assert!(!sel.matches_map(&set(&[
            ("app", "web"),
            ("tier", "frontend"),
            ("team", "a"),
            ("env", "dev")
        ])));
        assert!(!sel.matches_map(&set(&[
            ("app", "web"),
            ("tier", "frontend"),
            ("team", "a"),
            ("canary", "")
        ])));

        let err = |v: Value| LabelSelector::from_label_selector_json(&v).unwrap_err().0;
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
            "\"Foo\" is not a valid pod selector operator"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a"}]})),
            "\"\" is not a valid pod selector operator"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]})),
            "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "-a", "operator": "In", "values": ["-"]}]})),
            format!("[key: Invalid value: \"-a\": {KEY_NAME_REGEX_MSG}, values[0][-a]: Invalid value: \"-\": {VALUE_REGEX_MSG}]")
        );
        assert_eq!(
            err(json!({"matchLabels": {"a": "b c"}})),
            format!("values[0][a]: Invalid value: \"b c\": {VALUE_REGEX_MSG}")
        );
        assert_eq!(
            err(json!({"matchLabels": {"": "x"}})),
            format!("key: Invalid value: \"\": name part must be non-empty; {KEY_NAME_REGEX_MSG}")
        );
        assert_eq!(
            err(json!({"matchLabels": {"a": 1}})),
            "json: cannot unmarshal number into Go struct field LabelSelector.matchLabels of type string"
        );
        assert_eq!(
            err(json!({"matchExpressions": {}})),
            "json: cannot unmarshal object into Go struct field LabelSelector.matchExpressions of type []v1.LabelSelectorRequirement"
        );
        assert_eq!(
            err(json!([])),
            "json: cannot unmarshal array into Go value of type v1.LabelSelector"
        );
        assert!(
            LabelSelector::from_label_selector_json(&json!({"matchExpressions": ["x"]})).is_err()
        );
        assert!(LabelSelector::from_label_selector_json(
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})
        )
        .is_err());
        assert!(LabelSelector::from_label_selector_json(
            &json!({"matchExpressions": [{"key": 5}]})
        )
        .is_err());
    }

    #[test]
    fn labels_matches_with_closure_and_non_string_values() {
        let sel = LabelSelector::parse("a=1,b").unwrap();
        assert!(sel.matches(|k| match k {
            "a" => Some("1"),
            "b" => Some(""),
            _ => None,
        }));
        let mut labels = set(&[("a", "1")]);
        labels.insert("b".into(), json!(5));
        assert!(!sel.matches_map(&labels));
        assert!(LabelSelector::parse("x>9223372036854775806")
            .unwrap()
            .matches(|_| Some("9223372036854775807")));
        assert!(!LabelSelector::parse("x<1")
            .unwrap()
            .matches(|_| Some("99999999999999999999")));
    }

    // Odd inputs never panic and behave like upstream's byte-level lexer.
    #[test]
    fn labels_robustness() {
        let inputs: Vec<String> = vec![
            "((((((".into(),
            "))))".into(),
            "a in ((b))".into(),
            "a in (b))".into(),
            "a in (b,(c)".into(),
            "!!!!!".into(),
            "!=!=!=".into(),
            "<<>>".into(),
            "a in".into(),
            "a notin".into(),
            "a=".into(),
            "a==".into(),
            "a!=".into(),
            "a>".into(),
            "ключ=значение".into(),
            "日本=語".into(),
            "🦀 in (🦀)".into(),
            "a\u{0}b".into(),
            "a,\u{0}b".into(),
            "\u{0}".into(),
            "a=b\u{0} c".into(),
            "\t\r\n".into(),
            ",".into(),
            ",,,".into(),
            "a in (,,,)".into(),
            "x".repeat(1 << 20),
            format!("a in ({})", "v,".repeat(100_000)),
            "(".repeat(100_000),
            format!(
                "x in ({})",
                (0..50_000)
                    .map(|i| format!("-{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "a,".repeat(50_000),
            "é=é".into(),
            "a=\u{202e}".into(),
        ];
        for s in &inputs {
            let _ = LabelSelector::parse(s).map(|sel| sel.to_string());
            let _ = FieldSelector::parse(s).map(|sel| sel.to_string());
        }
        // NUL ends the input where a token starts.
        assert_eq!(
            parse_err("a, \u{0}b"),
            "found '', expected: identifier after ','"
        );
        // ...but a NUL right after an operator or inside a word only splits.
        assert_eq!(LabelSelector::parse("a,\u{0}b").unwrap().to_string(), "a,b");
        assert_eq!(
            parse_err("a\u{0}b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            LabelSelector::parse("\u{0}garbage").unwrap().to_string(),
            ""
        );
        assert_eq!(
            LabelSelector::parse("a in (,,,)").unwrap().to_string(),
            "a in ()"
        );
        assert_eq!(
            LabelSelector::parse(&format!("a in ({})", "v,".repeat(1000)))
                .unwrap()
                .to_string(),
            "a in (,v)"
        );
    }

    #[test]
    fn go_quote_matches_strconv_quote() {
        assert_eq!(go_quote(""), "\"\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(
            go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
            "\"\\a\\b\\f\\n\\r\\t\\v\""
        );
        assert_eq!(go_quote("\u{0}\u{7f}"), "\"\\x00\\x7f\"");
        assert_eq!(go_quote("\u{85}"), "\"\\u0085\"");
        assert_eq!(go_quote("日本 🦀"), "\"日本 🦀\"");
        assert_eq!(go_quote("\u{feff}\u{10ffff}"), "\"\\ufeff\\U0010ffff\"");
    }

    // Port of upstream fields TestSplitTerms.
    #[test]
    fn fields_split_terms() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("a", vec!["a"]),
            ("a=avalue", vec!["a=avalue"]),
            ("a=avalue,b=bvalue", vec!["a=avalue", "b=bvalue"]),
            (
                "a=avalue,b==bvalue,c!=cvalue",
                vec!["a=avalue", "b==bvalue", "c!=cvalue"],
            ),
            ("", vec![]),
            ("a=a,", vec!["a=a", ""]),
            (",a=a", vec!["", "a=a"]),
            (r"k=\,,k2=v2", vec![r"k=\,", "k2=v2"]),
            (r"k=\\,k2=v2", vec![r"k=\\", "k2=v2"]),
            (r"k=\\\,,k2=v2", vec![r"k=\\\,", "k2=v2"]),
            (r"k=\a\b\", vec![r"k=\a\b\"]),
            (r"k=\", vec![r"k=\"]),
            ("함=수,목=록", vec!["함=수", "목=록"]),
        ];
        for (input, want) in cases {
            assert_eq!(split_terms(input), want, "{input:?}");
        }
    }

    // Port of upstream fields TestSplitTerm.
    #[test]
    fn fields_split_term() {
        let cases = [
            ("a=value", Some(("a", "=", "value"))),
            ("b==value", Some(("b", "==", "value"))),
            ("c!=value", Some(("c", "!=", "value"))),
            ("", None),
            ("a", None),
            (r"k=\,", Some(("k", "=", r"\,"))),
            (r"k=\=", Some(("k", "=", r"\="))),
            (r"k=\\\a\b\=\,\", Some(("k", "=", r"\\\a\b\=\,\"))),
            ("함=수", Some(("함", "=", "수"))),
        ];
        for (input, want) in cases {
            assert_eq!(split_term(input), want, "{input:?}");
        }
    }

    // Port of upstream fields TestEscapeValue.
    #[test]
    fn fields_escape_value() {
        let cases = [
            ("", ""),
            ("a", "a"),
            ("=", r"\="),
            (",", r"\,"),
            (r"\", r"\\"),
            (r"\=\,\", r"\\\=\\\,\\"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_field_value(raw), escaped);
            assert_eq!(unescape_field_value(escaped).unwrap(), raw);
        }
        for bad in [r"\", r"\\\", r"\a"] {
            let e = unescape_field_value(bad).unwrap_err();
            assert!(e.0.contains("invalid escape sequence"), "{bad}: {e}");
        }
        assert_eq!(
            unescape_field_value(r"\a").unwrap_err().0,
            r"invalid field selector: invalid escape sequence: \a"
        );
        assert_eq!(
            unescape_field_value("a\\").unwrap_err().0,
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            unescape_field_value("a=b").unwrap_err().0,
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            unescape_field_value("a,b").unwrap_err().0,
            "invalid field selector: unescaped character in value: 44"
        );
    }

    // Port of upstream fields TestSelectorParse and TestDeterministicParse.
    #[test]
    fn fields_selector_parse() {
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            let sel = FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(sel.to_string(), s);
        }
        for s in [
            "x=a||y=b",
            "x==a==b",
            "x=a,b",
            "x in (a)",
            "x in (a,b,c)",
            "x",
        ] {
            assert!(FieldSelector::parse(s).is_err(), "{s}");
        }
        let a = FieldSelector::parse("x=a,a=x").unwrap();
        let b = FieldSelector::parse("a=x,x=a").unwrap();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), "a=x,x=a");
    }

    #[test]
    fn fields_error_messages_and_structure() {
        let err = |s: &str| FieldSelector::parse(s).unwrap_err().0;
        assert_eq!(
            err("x=a,b"),
            "invalid selector: 'x=a,b'; can't understand 'b'"
        );
        assert_eq!(err("x"), "invalid selector: 'x'; can't understand 'x'");
        assert_eq!(
            err("x in (a)"),
            "invalid selector: 'x in (a)'; can't understand 'x in (a)'"
        );
        assert_eq!(
            err("x==a==b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            err(r"x=a\b"),
            r"invalid field selector: invalid escape sequence: \b"
        );

        let sel = FieldSelector::parse("metadata.name==foo,status.phase!=Running,spec.x=").unwrap();
        assert_eq!(
            sel.requirements(),
            [
                FieldRequirement {
                    field: "metadata.name".into(),
                    op: FieldOp::Equals,
                    value: "foo".into()
                },
                FieldRequirement {
                    field: "spec.x".into(),
                    op: FieldOp::Equals,
                    value: "".into()
                },
                FieldRequirement {
                    field: "status.phase".into(),
                    op: FieldOp::NotEquals,
                    value: "Running".into()
                },
            ]
        );
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("foo"));
        assert_eq!(sel.requires_exact_match("status.phase"), None);
        assert_eq!(
            sel.to_string(),
            "metadata.name=foo,spec.x=,status.phase!=Running"
        );

        // Terms with an empty field and value are dropped, like upstream.
        assert!(FieldSelector::parse("=").unwrap().is_empty());
        assert!(FieldSelector::parse("!=,,").unwrap().is_empty());
        assert!(FieldSelector::parse(",,,").unwrap().is_empty());
        assert!(!FieldSelector::parse("=x").unwrap().is_empty());
        // Spaces are kept verbatim.
        let sel = FieldSelector::parse("a = b").unwrap();
        assert_eq!(sel.requirements()[0].field, "a ");
        assert_eq!(sel.requirements()[0].value, " b");
    }

    // Port of upstream fields TestSelectorMatches.
    #[test]
    fn fields_selector_matches() {
        fn check(sel: &str, fields: &[(&str, &str)], want: bool) {
            let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            let got = s.matches(|f| {
                fields
                    .iter()
                    .find(|(k, _)| *k == f)
                    .map(|(_, v)| v.to_string())
            });
            assert_eq!(got, want, "{sel} vs {fields:?}");
        }
        check("", &[("x", "y")], true);
        check("x=y", &[("x", "y")], true);
        check("x=y,z=w", &[("x", "y"), ("z", "w")], true);
        check("x!=y,z!=w", &[("x", "z"), ("z", "a")], true);
        check("notin=in", &[("notin", "in")], true);
        check("x=y", &[("x", "z")], false);
        check("x=y,z=w", &[("x", "w"), ("z", "w")], false);
        check("x!=y,z!=w", &[("x", "z"), ("z", "w")], false);

        let fs = [("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")];
        check("foo=bar", &fs, true);
        check("baz=blah", &fs, true);
        check("foo=bar,baz=blah", &fs, true);
        check(r"foo=bar,baz=blah,complex=\=value\\\,\\", &fs, true);
        check("foo=blah", &fs, false);
        check("baz=bar", &fs, false);
        check("foo=bar,foobar=bar,baz=blah", &fs, false);
        // A missing field counts as "".
        check("missing=", &[], true);
        check("missing!=", &[], false);
        check("missing!=x", &[], true);
    }
}
