//! Lexer and recursive-descent parser for the CEL subset used by CRD validation rules.
//!
//! Errors are rendered like cel-go's `common.Errors.ToDisplayString()`:
//! `ERROR: <input>:LINE:COL: message` followed by the source line and a caret.

use std::rc::Rc;

/// Maximum nesting depth of the parser (cel-go's default `maxRecursionDepth` is 250).
const MAX_DEPTH: usize = 250;
/// Extra depth charged per nested primary (parenthesis, list, map, call).
const GROUP_WEIGHT: usize = 3;

/// A literal constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
}

/// Comprehension macro kinds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    MapFilter,
    Filter,
    SortBy,
}

/// Two-variable comprehension kinds (`all(i, v, p)`, `transformList`, ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Macro2 {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

/// Parsed expression node; `pos` is the byte offset used for error locations.
#[derive(Debug, Clone)]
pub struct Expr {
    pub pos: usize,
    pub kind: Kind,
}

/// Expression kinds.
#[derive(Debug, Clone)]
pub enum Kind {
    Lit(Lit),
    Ident(String),
    /// `operand.field`; `optional` for `operand.?field`.
    Select(Box<Expr>, String, bool),
    /// `has(operand.field)`.
    Has(Box<Expr>, String),
    /// `operand[index]`; `optional` for `operand[?index]`.
    Index(Box<Expr>, Box<Expr>, bool),
    /// Function call; `target` for receiver-style calls.
    Call(Option<Box<Expr>>, String, Vec<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `range.macro(var, a[, b])`.
    Comp(Macro, Box<Expr>, String, Box<Expr>, Option<Box<Expr>>),
    /// `range.macro(k, v, args...)` (two-variable comprehensions).
    Comp2(Macro2, Box<Expr>, String, String, Vec<Expr>),
    /// `cel.bind(var, init, body)`.
    Bind(String, Box<Expr>, Box<Expr>),
    /// Object construction `Type.name{field: value, ?optField: optValue}` (the message
    /// syntax admission policies use: `Object{spec: Object.spec{replicas: 3}}`,
    /// `JSONPatch{op: "add", ...}`); the bool marks optional fields. The type name is
    /// kept for diagnostics: the value is an untyped object.
    #[allow(dead_code)]
    Struct(String, Vec<(String, Expr, bool)>),
}

/// The dotted name of an identifier or of a chain of plain selections (`a.b.c`).
pub fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        Kind::Ident(n) => Some(n.clone()),
        Kind::Select(op, f, false) => qualified_name(op).map(|q| format!("{q}.{f}")),
        _ => None,
    }
}

/// A compile issue at a byte offset.
#[derive(Debug, Clone)]
pub struct Issue {
    pub pos: usize,
    pub msg: String,
}

/// Renders issues like cel-go `Issues.String()`.
pub fn render_issues(src: &str, issues: &[Issue]) -> String {
    let mut out = Vec::new();
    for i in issues {
        let (line, col) = line_col(src, i.pos);
        let text = src.lines().nth(line - 1).unwrap_or("");
        let mut s = format!("ERROR: <input>:{line}:{}: {}", col + 1, i.msg);
        s.push_str("\n | ");
        s.push_str(&text.replace('\t', " "));
        s.push_str("\n | ");
        for c in text.chars().take(col) {
            s.push(if c.is_ascii() { '.' } else { '\u{ff0e}' });
        }
        s.push('^');
        out.push(s);
    }
    out.join("\n")
}

fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 0;
    for (i, c) in src.char_indices() {
        if i >= pos {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Lit(Lit),
    Op(&'static str),
    Eof,
}

const OPS: [&str; 28] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",",
    "(", ")", "[", "]", "{", "}", "=", "&", "|", "^",
];

/// Reserved words that may not be identifiers.
pub(crate) const RESERVED: [&str; 17] = [
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, Issue> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        // string / bytes literals with optional r/b prefixes
        let mut j = i;
        while j < b.len() && j - i < 2 && matches!(b[j], b'r' | b'R' | b'b' | b'B') {
            j += 1;
        }
        if j < b.len() && (b[j] == b'\'' || b[j] == b'"') {
            let prefix = &src[i..j];
            let pl = prefix.to_ascii_lowercase();
            if pl.is_empty() || pl == "r" || pl == "b" || pl == "rb" || pl == "br" {
                let raw = pl.contains('r');
                let bytes = pl.contains('b');
                let (val, end) =
                    lex_string(src, j, raw, bytes).map_err(|m| Issue { pos: start, msg: m })?;
                out.push((Tok::Lit(val), start));
                i = end;
                continue;
            }
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let w = &src[i..j];
            let t = match w {
                "true" => Tok::Lit(Lit::Bool(true)),
                "false" => Tok::Lit(Lit::Bool(false)),
                "null" => Tok::Lit(Lit::Null),
                "in" => Tok::Op("in"),
                _ => Tok::Ident(w.to_string()),
            };
            out.push((t, start));
            i = j;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (t, end) = lex_number(src, i).map_err(|m| Issue { pos: start, msg: m })?;
            out.push((t, start));
            i = end;
            continue;
        }
        let mut found = None;
        for op in OPS {
            if src[i..].starts_with(op) {
                found = Some(op);
                break;
            }
        }
        match found {
            Some(op) => {
                out.push((Tok::Op(op), start));
                i += op.len();
            }
            None => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(Issue {
                    pos: start,
                    msg: format!("Syntax error: token recognition error at: '{ch}'"),
                });
            }
        }
    }
    out.push((Tok::Eof, src.len()));
    Ok(out)
}

fn lex_number(src: &str, i: usize) -> Result<(Tok, usize), String> {
    let b = src.as_bytes();
    let mut j = i;
    if src[i..].starts_with("0x") || src[i..].starts_with("0X") {
        j += 2;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        let digits = &src[i + 2..j];
        if j < b.len() && (b[j] == b'u' || b[j] == b'U') {
            let v =
                u64::from_str_radix(digits, 16).map_err(|_| "invalid uint literal".to_string())?;
            return Ok((Tok::Lit(Lit::Uint(v)), j + 1));
        }
        let v = u64::from_str_radix(digits, 16).map_err(|_| "invalid int literal".to_string())?;
        return Ok((Tok::Lit(int_or_marker(v)), j));
    }
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    let mut float = false;
    if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
        float = true;
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
    }
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            float = true;
            j = k;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
    }
    let text = &src[i..j];
    if float {
        let v: f64 = text
            .parse()
            .map_err(|_| "invalid double literal".to_string())?;
        return Ok((Tok::Lit(Lit::Double(v)), j));
    }
    if j < b.len() && (b[j] == b'u' || b[j] == b'U') {
        let v: u64 = text
            .parse()
            .map_err(|_| "invalid uint literal".to_string())?;
        return Ok((Tok::Lit(Lit::Uint(v)), j + 1));
    }
    let v: u64 = text
        .parse()
        .map_err(|_| "invalid int literal".to_string())?;
    Ok((Tok::Lit(int_or_marker(v)), j))
}

/// Int literals above i64::MAX are only valid as the operand of unary minus
/// (`-9223372036854775808`); they are carried as `Uint` with a marker bit pattern.
fn int_or_marker(v: u64) -> Lit {
    if v <= i64::MAX as u64 {
        Lit::Int(v as i64)
    } else {
        // handled in unary minus; elsewhere reported as invalid
        Lit::Str(Rc::from(format!("\u{0}bigint:{v}")))
    }
}

fn lex_string(src: &str, q: usize, raw: bool, bytes: bool) -> Result<(Lit, usize), String> {
    let b = src.as_bytes();
    let quote = b[q];
    let triple = b.len() >= q + 3 && b[q + 1] == quote && b[q + 2] == quote;
    let mut i = if triple { q + 3 } else { q + 1 };
    let mut out: Vec<u8> = Vec::new();
    loop {
        if i >= b.len() {
            return Err("Syntax error: token recognition error at: unterminated string".into());
        }
        if triple {
            if b[i] == quote && b.get(i + 1) == Some(&quote) && b.get(i + 2) == Some(&quote) {
                i += 3;
                break;
            }
        } else if b[i] == quote {
            i += 1;
            break;
        } else if b[i] == b'\n' || b[i] == b'\r' {
            return Err("Syntax error: token recognition error at: unterminated string".into());
        }
        if b[i] == b'\\' && !raw {
            i += 1;
            let c = *b.get(i).ok_or("invalid escape")?;
            i += 1;
            match c {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'v' => out.push(11),
                b'\\' | b'\'' | b'"' | b'`' | b'?' => out.push(c),
                b'x' | b'X' | b'u' | b'U' => {
                    let n = match c {
                        b'x' | b'X' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let h = src.get(i..i + n).ok_or("invalid escape sequence")?;
                    let v = u32::from_str_radix(h, 16).map_err(|_| "invalid escape sequence")?;
                    i += n;
                    push_code(&mut out, v, bytes && n == 2)?;
                }
                b'0'..=b'3' => {
                    let h = src.get(i - 1..i + 2).ok_or("invalid escape sequence")?;
                    let v = u32::from_str_radix(h, 8).map_err(|_| "invalid escape sequence")?;
                    i += 2;
                    push_code(&mut out, v, bytes)?;
                }
                _ => return Err("Syntax error: invalid escape sequence".into()),
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    if bytes {
        Ok((Lit::Bytes(Rc::from(out)), i))
    } else {
        let s =
            String::from_utf8(out).map_err(|_| "invalid utf-8 in string literal".to_string())?;
        Ok((Lit::Str(Rc::from(s)), i))
    }
}

fn push_code(out: &mut Vec<u8>, v: u32, raw_byte: bool) -> Result<(), String> {
    if raw_byte {
        out.push(v as u8);
        return Ok(());
    }
    let c = char::from_u32(v).ok_or("invalid unicode code point")?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(())
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    i: usize,
    depth: usize,
}

type PResult = Result<Expr, Issue>;

/// Parses a CEL expression.
pub fn parse(src: &str) -> Result<Expr, Issue> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
    };
    let e = p.expr()?;
    if p.peek() != &Tok::Eof {
        return Err(p.unexpected("<EOF>"));
    }
    Ok(e)
}

fn tok_text(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => s.clone(),
        Tok::Op(o) => (*o).to_string(),
        Tok::Eof => "<EOF>".to_string(),
        Tok::Lit(Lit::Bool(b)) => b.to_string(),
        Tok::Lit(Lit::Null) => "null".to_string(),
        Tok::Lit(Lit::Int(i)) => i.to_string(),
        Tok::Lit(Lit::Uint(u)) => format!("{u}u"),
        Tok::Lit(Lit::Double(d)) => d.to_string(),
        Tok::Lit(Lit::Str(_)) | Tok::Lit(Lit::Bytes(_)) => "string".to_string(),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.i.min(self.toks.len() - 1)].0
    }
    fn pos(&self) -> usize {
        self.toks[self.i.min(self.toks.len() - 1)].1
    }
    fn bump(&mut self) -> (Tok, usize) {
        let t = self.toks[self.i.min(self.toks.len() - 1)].clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }
    fn unexpected(&self, expecting: &str) -> Issue {
        let t = self.peek();
        let msg = if *t == Tok::Eof {
            format!("Syntax error: mismatched input '<EOF>' expecting {expecting}")
        } else {
            format!(
                "Syntax error: mismatched input '{}' expecting {expecting}",
                tok_text(t)
            )
        };
        Issue {
            pos: self.pos(),
            msg,
        }
    }
    fn expect(&mut self, op: &'static str) -> Result<(), Issue> {
        if self.is_op(op) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{op}'")))
        }
    }
    fn enter(&mut self) -> Result<(), Issue> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Issue {
                pos: self.pos(),
                msg: "expression recursion limit exceeded: max recursion depth exceeded".into(),
            });
        }
        Ok(())
    }

    fn chain_check(&self, chain: usize) -> Result<(), Issue> {
        if self.depth + chain > MAX_DEPTH {
            return Err(Issue {
                pos: self.pos(),
                msg: "expression recursion limit exceeded: max recursion depth exceeded".into(),
            });
        }
        Ok(())
    }

    fn expr(&mut self) -> PResult {
        self.enter()?;
        let c = self.or()?;
        let r = if self.is_op("?") {
            let pos = self.pos();
            self.bump();
            let a = self.or()?;
            self.expect(":")?;
            let b = self.expr()?;
            Ok(Expr {
                pos,
                kind: Kind::Cond(Box::new(c), Box::new(a), Box::new(b)),
            })
        } else {
            Ok(c)
        };
        self.depth -= 1;
        r
    }
    fn or(&mut self) -> PResult {
        self.logical("||", Self::and, Kind::Or)
    }
    fn and(&mut self) -> PResult {
        self.logical("&&", Self::rel, Kind::And)
    }
    /// A left-associative chain of `op` over operands parsed by `next`.
    fn logical(
        &mut self,
        op: &str,
        next: fn(&mut Self) -> PResult,
        node: fn(Box<Expr>, Box<Expr>) -> Kind,
    ) -> PResult {
        let mut chain = 0;
        let mut l = next(self)?;
        while self.is_op(op) {
            let pos = self.pos();
            self.bump();
            chain += 1;
            self.chain_check(chain)?;
            let r = next(self)?;
            l = Expr {
                pos,
                kind: node(Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn rel(&mut self) -> PResult {
        let mut chain = 0;
        let mut l = self.add()?;
        while let Tok::Op(o @ ("==" | "!=" | "<" | "<=" | ">" | ">=" | "in")) = self.peek() {
            let op = *o;
            let pos = self.pos();
            self.bump();
            chain += 1;
            self.chain_check(chain)?;
            let r = self.add()?;
            l = Expr {
                pos,
                kind: Kind::Bin(op, Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn add(&mut self) -> PResult {
        let mut chain = 0;
        let mut l = self.mul()?;
        while let Tok::Op(o @ ("+" | "-")) = self.peek() {
            let op = *o;
            let pos = self.pos();
            self.bump();
            chain += 1;
            self.chain_check(chain)?;
            let r = self.mul()?;
            l = Expr {
                pos,
                kind: Kind::Bin(op, Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn mul(&mut self) -> PResult {
        let mut chain = 0;
        let mut l = self.unary()?;
        while let Tok::Op(o @ ("*" | "/" | "%")) = self.peek() {
            let op = *o;
            let pos = self.pos();
            self.bump();
            chain += 1;
            self.chain_check(chain)?;
            let r = self.unary()?;
            l = Expr {
                pos,
                kind: Kind::Bin(op, Box::new(l), Box::new(r)),
            };
        }
        Ok(l)
    }
    fn unary(&mut self) -> PResult {
        self.enter()?;
        let r = if self.is_op("!") {
            let pos = self.pos();
            self.bump();
            let e = self.unary()?;
            Ok(Expr {
                pos,
                kind: Kind::Not(Box::new(e)),
            })
        } else if self.is_op("-") {
            let pos = self.pos();
            self.bump();
            // negative literals
            match self.peek().clone() {
                Tok::Lit(Lit::Int(v)) => {
                    self.bump();
                    self.member(Expr {
                        pos,
                        kind: Kind::Lit(Lit::Int(-v)),
                    })
                }
                Tok::Lit(Lit::Str(s)) if s.starts_with("\u{0}bigint:") => {
                    self.bump();
                    if &*s == "\u{0}bigint:9223372036854775808" {
                        self.member(Expr {
                            pos,
                            kind: Kind::Lit(Lit::Int(i64::MIN)),
                        })
                    } else {
                        Err(Issue {
                            pos,
                            msg: "invalid int literal".into(),
                        })
                    }
                }
                Tok::Lit(Lit::Double(d)) => {
                    self.bump();
                    self.member(Expr {
                        pos,
                        kind: Kind::Lit(Lit::Double(-d)),
                    })
                }
                _ => {
                    let e = self.unary()?;
                    Ok(Expr {
                        pos,
                        kind: Kind::Neg(Box::new(e)),
                    })
                }
            }
        } else {
            let p = self.primary()?;
            self.member(p)
        };
        self.depth -= 1;
        r
    }
    fn member(&mut self, mut e: Expr) -> PResult {
        let mut chain = 0;
        loop {
            chain += 1;
            self.chain_check(chain)?;
            if self.is_op(".") {
                let pos = self.pos();
                self.bump();
                let optional = if self.is_op("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let name = match self.bump() {
                    (Tok::Ident(n), _) => n,
                    (t, p) => {
                        return Err(Issue {
                            pos: p,
                            msg: format!(
                                "Syntax error: mismatched input '{}' expecting IDENTIFIER",
                                tok_text(&t)
                            ),
                        })
                    }
                };
                if !optional && self.is_op("(") {
                    let ppos = self.pos();
                    self.bump();
                    let args = self.args(")")?;
                    e = make_member_call(ppos, e, name, args)?;
                } else {
                    e = Expr {
                        pos,
                        kind: Kind::Select(Box::new(e), name, optional),
                    };
                }
            } else if self.is_op("[") {
                let pos = self.pos();
                self.bump();
                let optional = if self.is_op("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                self.depth += GROUP_WEIGHT;
                let idx = self.expr();
                self.depth -= GROUP_WEIGHT;
                let idx = idx?;
                self.expect("]")?;
                e = Expr {
                    pos,
                    kind: Kind::Index(Box::new(e), Box::new(idx), optional),
                };
            } else if self.is_op("{") && qualified_name(&e).is_some() {
                let pos = self.pos();
                self.bump();
                let name = qualified_name(&e).unwrap_or_default();
                e = Expr {
                    pos,
                    kind: Kind::Struct(name, self.struct_fields()?),
                };
            } else {
                return Ok(e);
            }
        }
    }
    /// The field initializers of an object construction, after its `{`.
    fn struct_fields(&mut self) -> Result<Vec<(String, Expr, bool)>, Issue> {
        self.depth += GROUP_WEIGHT;
        let r = self.struct_fields_inner();
        self.depth -= GROUP_WEIGHT;
        r
    }

    fn struct_fields_inner(&mut self) -> Result<Vec<(String, Expr, bool)>, Issue> {
        let mut out = Vec::new();
        loop {
            if self.is_op("}") {
                self.bump();
                return Ok(out);
            }
            let optional = if self.is_op("?") {
                self.bump();
                true
            } else {
                false
            };
            let name = match self.bump() {
                (Tok::Ident(n), _) => n,
                (t, p) => {
                    return Err(Issue {
                        pos: p,
                        msg: format!(
                            "Syntax error: mismatched input '{}' expecting IDENTIFIER",
                            tok_text(&t)
                        ),
                    })
                }
            };
            self.expect(":")?;
            let v = self.expr()?;
            out.push((name, v, optional));
            if self.is_op(",") {
                self.bump();
                continue;
            }
            self.expect("}")?;
            return Ok(out);
        }
    }
    fn args(&mut self, close: &'static str) -> Result<Vec<Expr>, Issue> {
        self.depth += GROUP_WEIGHT;
        let r = self.args_inner(close);
        self.depth -= GROUP_WEIGHT;
        r
    }

    fn args_inner(&mut self, close: &'static str) -> Result<Vec<Expr>, Issue> {
        let mut v = Vec::new();
        if self.is_op(close) {
            self.bump();
            return Ok(v);
        }
        loop {
            v.push(self.expr()?);
            if self.is_op(",") {
                self.bump();
                if self.is_op(close) {
                    self.bump();
                    return Ok(v);
                }
                continue;
            }
            self.expect(close)?;
            return Ok(v);
        }
    }
    fn primary(&mut self) -> PResult {
        // Nested groups cost several stack frames each (expr..unary..primary);
        // weight them so that deep nesting is rejected before the stack runs out.
        self.depth += GROUP_WEIGHT;
        let r = self.primary_inner();
        self.depth -= GROUP_WEIGHT;
        r
    }

    fn primary_inner(&mut self) -> PResult {
        let pos = self.pos();
        if self.depth > MAX_DEPTH {
            return Err(Issue {
                pos,
                msg: "expression recursion limit exceeded: max recursion depth exceeded".into(),
            });
        }
        match self.peek().clone() {
            Tok::Lit(Lit::Str(s)) if s.starts_with("\u{0}bigint:") => Err(Issue { pos, msg: "invalid int literal".into() }),
            Tok::Lit(l) => {
                self.bump();
                Ok(Expr { pos, kind: Kind::Lit(l) })
            }
            Tok::Ident(name) => {
                self.bump();
                if RESERVED.contains(&name.as_str()) {
                    return Err(Issue { pos, msg: format!("reserved identifier: {name}") });
                }
                if self.is_op("(") {
                    let ppos = self.pos();
                    self.bump();
                    let args = self.args(")")?;
                    return make_global_call(ppos, name, args);
                }
                Ok(Expr { pos, kind: Kind::Ident(name) })
            }
            Tok::Op(".") => {
                self.bump();
                match self.bump() {
                    (Tok::Ident(n), _) => Ok(Expr { pos, kind: Kind::Ident(n) }),
                    _ => Err(Issue { pos, msg: "Syntax error: mismatched input expecting IDENTIFIER".into() }),
                }
            }
            Tok::Op("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Op("[") => {
                self.bump();
                let items = self.args("]")?;
                Ok(Expr { pos, kind: Kind::List(items) })
            }
            Tok::Op("{") => {
                self.bump();
                let mut entries = Vec::new();
                if self.is_op("}") {
                    self.bump();
                    return Ok(Expr { pos, kind: Kind::Map(entries) });
                }
                loop {
                    let k = self.expr()?;
                    self.expect(":")?;
                    let v = self.expr()?;
                    entries.push((k, v));
                    if self.is_op(",") {
                        self.bump();
                        if self.is_op("}") {
                            self.bump();
                            break;
                        }
                        continue;
                    }
                    self.expect("}")?;
                    break;
                }
                Ok(Expr { pos, kind: Kind::Map(entries) })
            }
            _ => Err(self.unexpected("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}")),
        }
    }
}

fn make_global_call(pos: usize, name: String, mut args: Vec<Expr>) -> PResult {
    if name == "has" && args.len() == 1 {
        let a = args.pop().unwrap_or(Expr {
            pos,
            kind: Kind::Lit(Lit::Null),
        });
        return match a.kind {
            Kind::Select(op, f, false) => Ok(Expr {
                pos,
                kind: Kind::Has(op, f),
            }),
            _ => Err(Issue {
                pos: a.pos,
                msg: "invalid argument to has() macro".into(),
            }),
        };
    }
    Ok(Expr {
        pos,
        kind: Kind::Call(None, name, args),
    })
}

fn make_member_call(pos: usize, target: Expr, name: String, mut args: Vec<Expr>) -> PResult {
    let mac = match (name.as_str(), args.len()) {
        ("all", 2) => Some(Macro::All),
        ("exists", 2) => Some(Macro::Exists),
        ("exists_one", 2) | ("existsOne", 2) => Some(Macro::ExistsOne),
        ("map", 2) => Some(Macro::Map),
        ("map", 3) => Some(Macro::MapFilter),
        ("filter", 2) => Some(Macro::Filter),
        ("sortBy", 2) => Some(Macro::SortBy),
        _ => None,
    };
    let mac2 = match (name.as_str(), args.len()) {
        ("all", 3) => Some(Macro2::All),
        ("exists", 3) => Some(Macro2::Exists),
        ("existsOne", 3) | ("exists_one", 3) => Some(Macro2::ExistsOne),
        ("transformList", 3 | 4) => Some(Macro2::TransformList),
        ("transformMap", 3 | 4) => Some(Macro2::TransformMap),
        ("transformMapEntry", 3 | 4) => Some(Macro2::TransformMapEntry),
        _ => None,
    };
    if let Some(m) = mac2 {
        let mut names = Vec::new();
        for a in &args[..2] {
            match &a.kind {
                Kind::Ident(v) => names.push(v.clone()),
                _ => {
                    return Err(Issue {
                        pos: a.pos,
                        msg: "argument must be a simple name".into(),
                    })
                }
            }
        }
        let rest = args.split_off(2);
        let v2 = names.pop().unwrap_or_default();
        let v1 = names.pop().unwrap_or_default();
        return Ok(Expr {
            pos,
            kind: Kind::Comp2(m, Box::new(target), v1, v2, rest),
        });
    }
    if let Some(m) = mac {
        let var = match &args[0].kind {
            Kind::Ident(v) => v.clone(),
            _ => {
                return Err(Issue {
                    pos: args[0].pos,
                    msg: "argument must be a simple name".into(),
                })
            }
        };
        let extra = if args.len() == 3 {
            args.pop().map(Box::new)
        } else {
            None
        };
        let body = args.pop().unwrap_or(Expr {
            pos,
            kind: Kind::Lit(Lit::Null),
        });
        return Ok(Expr {
            pos,
            kind: Kind::Comp(m, Box::new(target), var, Box::new(body), extra),
        });
    }
    if name == "bind" && args.len() == 3 && matches!(&target.kind, Kind::Ident(n) if n == "cel") {
        let var = match &args[0].kind {
            Kind::Ident(v) => v.clone(),
            _ => {
                return Err(Issue {
                    pos: args[0].pos,
                    msg: "cel.bind() variable name must be a simple identifier".into(),
                })
            }
        };
        let body = args.pop().unwrap_or(Expr {
            pos,
            kind: Kind::Lit(Lit::Null),
        });
        let init = args.pop().unwrap_or(Expr {
            pos,
            kind: Kind::Lit(Lit::Null),
        });
        return Ok(Expr {
            pos,
            kind: Kind::Bind(var, Box::new(init), Box::new(body)),
        });
    }
    // namespaced global functions: optional.of(x), math.greatest(...), ip.isCanonical(s)
    if let Kind::Ident(ns) = &target.kind {
        if matches!(
            ns.as_str(),
            "optional" | "math" | "strings" | "lists" | "sets" | "ip" | "jsonpatch"
        ) && !RESERVED.contains(&ns.as_str())
        {
            return Ok(Expr {
                pos,
                kind: Kind::Call(None, format!("{ns}.{name}"), args),
            });
        }
    }
    Ok(Expr {
        pos,
        kind: Kind::Call(Some(Box::new(target)), name, args),
    })
}
