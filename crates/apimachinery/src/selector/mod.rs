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
//!
//! ```
//! use coxswain_apimachinery::selector::{FieldSelector, LabelSelector};
//! let s = LabelSelector::parse("env in (prod,qa),!legacy").unwrap();
//! assert!(s.matches(|k| (k == "env").then_some("qa")));
//! let f = FieldSelector::parse("spec.nodeName=n1").unwrap();
//! assert_eq!(f.requires_exact_match("spec.nodeName"), Some("n1"));
//! ```

mod fields;
mod labels;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::gofmt::quote as go_quote;

pub use fields::{
    escape_field_value, unescape_field_value, FieldOp, FieldRequirement, FieldSelector,
};
pub use labels::{LabelOp, LabelRequirement, LabelSelector};

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
