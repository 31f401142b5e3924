//! Field errors (`k8s.io/apimachinery/pkg/util/validation/field`): what validation
//! reports about one field, with upstream's message texts, and the list that becomes an
//! `Invalid` [`Status`](crate::status::ApiError).
//!
//! A [`Cause`] renders its bad value as upstream's `field.Error.ErrorBody` does: a Go
//! `string` with `%q`, numbers and booleans with `%v`, anything else as
//! `encoding/json`, and nothing for `field.OmitValueType`.
//!
//! ```
//! use coxswain_apimachinery::field::{self, Bad, ErrorList};
//! let mut errs = ErrorList::default();
//! errs.invalid("spec.replicas", Bad::Int(-1), "must be greater than or equal to 0");
//! errs.required("spec.template", "");
//! let e = errs.into_status("apps", "Deployment", "web").unwrap_err();
//! assert_eq!(
//!     e.message,
//!     "Deployment.apps \"web\" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template: Required value]"
//! );
//! assert_eq!(field::child("spec", "replicas"), "spec.replicas");
//! ```

use serde_json::Value;

use crate::gofmt;
pub use crate::status::Cause;
use crate::status::{ApiError, ApiResult};

/// `field.ErrorTypeInvalid`.
pub const INVALID: &str = "FieldValueInvalid";
/// `field.ErrorTypeRequired`.
pub const REQUIRED: &str = "FieldValueRequired";
/// `field.ErrorTypeNotSupported`.
pub const NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// `field.ErrorTypeDuplicate`.
pub const DUPLICATE: &str = "FieldValueDuplicate";
/// `field.ErrorTypeTooLong`.
pub const TOO_LONG: &str = "FieldValueTooLong";
/// `field.ErrorTypeForbidden`.
pub const FORBIDDEN: &str = "FieldValueForbidden";
/// `field.ErrorTypeNotFound`.
pub const NOT_FOUND: &str = "FieldValueNotFound";
/// `field.ErrorTypeTooMany`.
pub const TOO_MANY: &str = "FieldValueTooMany";
/// `field.ErrorTypeTypeInvalid`.
pub const TYPE_INVALID: &str = "FieldValueTypeInvalid";
/// `field.ErrorTypeInternal`.
pub const INTERNAL: &str = "InternalError";

/// `apimachineryvalidation.FieldImmutableErrorMsg`.
pub const IMMUTABLE: &str = "field is immutable";
/// `validation.InclusiveRangeError` / `ValidateNonnegativeField`'s message.
pub const NEGATIVE: &str = "must be greater than or equal to 0";

/// The bad value of an error, rendered as upstream's `ErrorBody` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Bad {
    /// A plain Go `string`: `%q`.
    Str(String),
    /// A Go integer: `%v`.
    Int(i64),
    /// A Go float: `%v`.
    Float(f64),
    /// A Go bool: `%v`.
    Bool(bool),
    /// A Go struct, slice or typed string: `encoding/json` with keys as given.
    Json(Value),
    /// A Go value of unstructured shape (`interface{}` from JSON): strings `%q`,
    /// numbers and booleans `%v`, `nil` as the string `"null"`, maps as JSON with
    /// sorted keys.
    Unstructured(Value),
    /// `field.OmitValueType{}`: no value is shown.
    Omit,
}

impl Bad {
    /// A plain Go string.
    pub fn str(v: &str) -> Bad {
        Bad::Str(v.to_string())
    }

    /// A typed Go string (`core.Protocol`, ...), which `ErrorBody` renders through
    /// `encoding/json`.
    pub fn typed(v: &str) -> Bad {
        Bad::Json(Value::String(v.to_string()))
    }

    fn render(&self) -> Option<String> {
        match self {
            Bad::Omit => None,
            Bad::Str(s) => Some(gofmt::quote(s)),
            Bad::Int(i) => Some(i.to_string()),
            Bad::Float(f) => Some(gofmt::float_v(*f)),
            Bad::Bool(b) => Some(b.to_string()),
            Bad::Json(v) => Some(gofmt::json_ordered(v)),
            Bad::Unstructured(v) => Some(match v {
                // a nil bad value is rendered as the string "null"
                Value::Null => gofmt::quote("null"),
                Value::String(s) => gofmt::quote(s),
                Value::Number(n) => gofmt::num_v(n),
                Value::Bool(b) => b.to_string(),
                v => gofmt::json(v),
            }),
        }
    }
}

impl From<Value> for Bad {
    fn from(v: Value) -> Self {
        Bad::Unstructured(v)
    }
}
impl From<&str> for Bad {
    fn from(v: &str) -> Self {
        Bad::Str(v.to_string())
    }
}
impl From<String> for Bad {
    fn from(v: String) -> Self {
        Bad::Str(v)
    }
}
impl From<i64> for Bad {
    fn from(v: i64) -> Self {
        Bad::Int(v)
    }
}
impl From<bool> for Bad {
    fn from(v: bool) -> Self {
        Bad::Bool(v)
    }
}

/// The message prefix of an error type (`Invalid value`, `Required value`, ...).
fn prefix(reason: &str) -> &'static str {
    match reason {
        INVALID | TYPE_INVALID => "Invalid value",
        REQUIRED => "Required value",
        NOT_SUPPORTED => "Unsupported value",
        DUPLICATE => "Duplicate value",
        TOO_LONG => "Too long",
        FORBIDDEN => "Forbidden",
        NOT_FOUND => "Not found",
        TOO_MANY => "Too many",
        _ => "Internal error",
    }
}

/// A field error: `reason` at `field`, its bad value and detail rendered as upstream
/// (`Required`, `Forbidden` and `TooLong` never show the value).
pub fn error(reason: &'static str, field: &str, bad: Bad, detail: &str) -> Cause {
    let p = prefix(reason);
    let shown = match reason {
        REQUIRED | FORBIDDEN | TOO_LONG => None,
        _ => bad.render(),
    };
    let mut message = match shown {
        Some(v) => format!("{p}: {v}"),
        None => p.to_string(),
    };
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(detail);
    }
    Cause {
        reason: reason.into(),
        message,
        field: field.to_string(),
    }
}

/// `field.Invalid`.
pub fn invalid(field: &str, bad: impl Into<Bad>, detail: &str) -> Cause {
    error(INVALID, field, bad.into(), detail)
}

/// `field.TypeInvalid`.
pub fn type_invalid(field: &str, bad: impl Into<Bad>, detail: &str) -> Cause {
    error(TYPE_INVALID, field, bad.into(), detail)
}

/// `field.Required`.
pub fn required(field: &str, detail: &str) -> Cause {
    error(REQUIRED, field, Bad::Omit, detail)
}

/// `field.Forbidden`.
pub fn forbidden(field: &str, detail: &str) -> Cause {
    error(FORBIDDEN, field, Bad::Omit, detail)
}

/// `field.Duplicate`.
pub fn duplicate(field: &str, bad: impl Into<Bad>) -> Cause {
    error(DUPLICATE, field, bad.into(), "")
}

/// `field.NotFound`.
pub fn not_found(field: &str, bad: impl Into<Bad>) -> Cause {
    error(NOT_FOUND, field, bad.into(), "")
}

/// `field.NotSupported`: the valid values listed, quoted.
pub fn not_supported<S: AsRef<str>>(field: &str, bad: impl Into<Bad>, valid: &[S]) -> Cause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let q: Vec<String> = valid.iter().map(|v| gofmt::quote(v.as_ref())).collect();
        format!("supported values: {}", q.join(", "))
    };
    error(NOT_SUPPORTED, field, bad.into(), &detail)
}

/// `field.TooLong` (in bytes; a negative `max` says only that the value is too long).
pub fn too_long(field: &str, max: i64) -> Cause {
    let detail = if max >= 0 {
        format!(
            "may not be more than {max} {}",
            if max == 1 { "byte" } else { "bytes" }
        )
    } else {
        "value is too long".to_string()
    };
    error(TOO_LONG, field, Bad::Omit, &detail)
}

/// `field.TooMany` (a negative `actual` omits the value, a negative `max` the limit).
pub fn too_many(field: &str, actual: i64, max: i64) -> Cause {
    let detail = if max >= 0 {
        format!(
            "must have at most {max} {}",
            if max == 1 { "item" } else { "items" }
        )
    } else {
        "has too many items".to_string()
    };
    let bad = if actual >= 0 {
        Bad::Int(actual)
    } else {
        Bad::Omit
    };
    error(TOO_MANY, field, bad, &detail)
}

/// `field.Path.Child` on a rendered path (an empty parent is the root).
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `field.Path.Index`.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `field.Path.Key`.
pub fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}

/// `field.ErrorList`: errors in the order validation found them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorList(pub Vec<Cause>);

impl ErrorList {
    /// Append one error.
    pub fn push(&mut self, c: Cause) {
        self.0.push(c);
    }

    /// Append errors.
    pub fn extend(&mut self, cs: impl IntoIterator<Item = Cause>) {
        self.0.extend(cs);
    }

    /// Whether no error was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many errors were found.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `field.Invalid`.
    pub fn invalid(&mut self, field: &str, bad: impl Into<Bad>, detail: &str) {
        self.push(invalid(field, bad, detail));
    }

    /// `field.Required`.
    pub fn required(&mut self, field: &str, detail: &str) {
        self.push(required(field, detail));
    }

    /// `field.Forbidden`.
    pub fn forbidden(&mut self, field: &str, detail: &str) {
        self.push(forbidden(field, detail));
    }

    /// `field.Duplicate`.
    pub fn duplicate(&mut self, field: &str, bad: impl Into<Bad>) {
        self.push(duplicate(field, bad));
    }

    /// `field.NotFound`.
    pub fn not_found(&mut self, field: &str, bad: impl Into<Bad>) {
        self.push(not_found(field, bad));
    }

    /// `field.TooLong` in bytes.
    pub fn too_long(&mut self, field: &str, max: usize) {
        self.push(too_long(field, i64::try_from(max).unwrap_or(i64::MAX)));
    }

    /// `field.TooMany`.
    pub fn too_many(&mut self, field: &str, actual: i64, max: i64) {
        self.push(too_many(field, actual, max));
    }

    /// `field.NotSupported`.
    pub fn not_supported<S: AsRef<str>>(&mut self, field: &str, bad: impl Into<Bad>, valid: &[S]) {
        self.push(not_supported(field, bad, valid));
    }

    /// `ValidateNonnegativeField`.
    pub fn nonnegative(&mut self, field: &str, value: Option<i64>) {
        if let Some(v) = value.filter(|v| *v < 0) {
            self.invalid(field, Bad::Int(v), NEGATIVE);
        }
    }

    /// `field.Invalid(path, value, msg)` for each message of a name or label check.
    pub fn each(&mut self, field: &str, value: &str, msgs: Vec<String>) {
        for m in msgs {
            self.invalid(field, Bad::str(value), &m);
        }
    }

    /// `Ok` when empty, else the `Invalid` Status of `kind.group "name"`.
    pub fn into_status(self, group: &str, kind: &str, name: &str) -> ApiResult<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(group, kind, name, self.0))
        }
    }
}

impl IntoIterator for ErrorList {
    type Item = Cause;
    type IntoIter = std::vec::IntoIter<Cause>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl From<Vec<Cause>> for ErrorList {
    fn from(v: Vec<Cause>) -> Self {
        ErrorList(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Messages after apimachinery's field/errors_test.go TestErrorBody.
    #[test]
    fn bodies_render_as_upstream() {
        assert_eq!(
            invalid("f", "x", "bad").message,
            "Invalid value: \"x\": bad"
        );
        assert_eq!(invalid("f", 5i64, "").message, "Invalid value: 5");
        assert_eq!(
            invalid("f", Bad::Float(0.5), "d").message,
            "Invalid value: 0.5: d"
        );
        assert_eq!(
            invalid("f", json!(null), "d").message,
            "Invalid value: \"null\": d"
        );
        assert_eq!(
            invalid("f", json!({"b": 1, "a": [true]}), "d").message,
            "Invalid value: {\"a\":[true],\"b\":1}: d"
        );
        assert_eq!(
            invalid("f", Bad::Json(json!({"b": 1, "a": 2})), "").message,
            "Invalid value: {\"b\":1,\"a\":2}"
        );
        assert_eq!(
            invalid("f", Bad::typed("TCP"), "").message,
            "Invalid value: \"TCP\""
        );
        assert_eq!(required("f", "").message, "Required value");
        assert_eq!(forbidden("f", "nope").message, "Forbidden: nope");
        assert_eq!(
            too_long("f", 1).message,
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            too_many("f", 3, 2).message,
            "Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            not_supported("f", "x", &["a", "b"]).message,
            "Unsupported value: \"x\": supported values: \"a\", \"b\""
        );
        assert_eq!(duplicate("f", "x").reason, DUPLICATE);
    }

    #[test]
    fn lists_become_invalid_status() {
        let mut errs = ErrorList::default();
        assert!(errs.clone().into_status("", "Pod", "p").is_ok());
        errs.nonnegative("spec.x", Some(-2));
        errs.nonnegative("spec.y", Some(2));
        let e = errs.into_status("", "Pod", "p").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: spec.x: Invalid value: -2: must be greater than or equal to 0"
        );
    }
}
