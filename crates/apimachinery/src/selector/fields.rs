//! Field selectors (`k8s.io/apimachinery/pkg/fields`): the `fieldSelector` syntax and
//! matching.

use std::fmt;

use super::SelectorError;

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
pub(super) fn split_terms(s: &str) -> Vec<&str> {
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
pub(super) fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
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
