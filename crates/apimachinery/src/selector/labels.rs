//! Label requirements, the `labelSelector` syntax (`labels.Lexer`, `labels.Parser`) and
//! [`LabelSelector`], also built from `metav1.LabelSelector` objects.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::{Map, Value};

use super::{aggregate, field_invalid, go_quote, BadValue, SelectorError};
use crate::gofmt::json_kind;
use crate::names::{is_label_value as label_value_errors, is_qualified_name as label_key_errors};

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
pub(super) enum Token {
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
pub(super) struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(s: &'a str) -> Self {
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

    pub(super) fn lex(&mut self) -> (Token, String) {
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
pub(super) enum Context {
    KeyAndOperator,
    Values,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

pub(super) struct Parser {
    pub(super) items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    pub(super) fn new(s: &str) -> Self {
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

    pub(super) fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    pub(super) fn consume(&mut self, ctx: Context) -> (Token, String) {
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
            let op = meta_operator(&operator, "pod")?;
            reqs.push(LabelRequirement::new(&key, op, values)?);
        }
        Ok(Self::from_requirements(reqs))
    }

    /// Converts a typed `metav1.LabelSelector` like upstream
    /// `LabelSelectorAsSelector` (an empty selector matches everything; the
    /// caller decides what an absent selector means).
    pub fn from_meta(sel: &meta::LabelSelector) -> Result<Self, SelectorError> {
        let labels = sel.match_labels.iter().flatten();
        let exprs = sel.match_expressions.iter().flatten();
        let mut reqs = Vec::new();
        // a BTreeMap iterates in key order, as upstream sorts matchLabels
        for (k, v) in labels {
            reqs.push(LabelRequirement::new(k, LabelOp::Equals, vec![v.clone()])?);
        }
        for e in exprs {
            let op = meta_operator(&e.operator, "label")?;
            reqs.push(LabelRequirement::new(
                &e.key,
                op,
                e.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(Self::from_requirements(reqs))
    }

    /// A selector requiring each `key=value` (upstream `SelectorFromSet`; keys and
    /// values are taken as given, not validated).
    pub fn from_match_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::from_requirements(
            labels
                .into_iter()
                .map(|(k, v)| LabelRequirement {
                    key: k.to_string(),
                    op: LabelOp::Equals,
                    values: vec![v.to_string()],
                })
                .collect(),
        )
    }

    /// Whether a typed label map satisfies every requirement.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches(|k| labels.get(k).map(String::as_str))
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

/// The operator of a `LabelSelectorRequirement`; `what` names the selector in the error
/// (upstream says "pod selector" when converting JSON, "label selector" otherwise).
fn meta_operator(operator: &str, what: &str) -> Result<LabelOp, SelectorError> {
    match operator {
        "In" => Ok(LabelOp::In),
        "NotIn" => Ok(LabelOp::NotIn),
        "Exists" => Ok(LabelOp::Exists),
        "DoesNotExist" => Ok(LabelOp::DoesNotExist),
        other => Err(SelectorError(format!(
            "{} is not a valid {what} selector operator",
            go_quote(other)
        ))),
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
