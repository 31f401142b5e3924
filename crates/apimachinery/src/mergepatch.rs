//! JSON merge patches (RFC 7386): the difference between two documents as a patch, and
//! "semantically equal" as apimachinery's `equality.Semantic` sees built-in objects.
//!
//! [`diff`] is what `jsonpatch.CreateMergePatch` gives controller-runtime's `MergeFrom`:
//! members added or changed are set, members removed are `null`, objects are compared
//! member by member, anything else (arrays included) is replaced whole.

use serde_json::{Map, Value};

/// The merge patch that turns `from` into `to`; an empty object when they are equal.
pub fn diff(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => Value::Object(diff_objects(a, b)),
        _ => to.clone(),
    }
}

fn diff_objects(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, old) in a {
        match b.get(k) {
            None => {
                out.insert(k.clone(), Value::Null);
            }
            Some(new) if new == old => {}
            Some(new @ Value::Object(nb)) => match old {
                Value::Object(na) => {
                    let d = diff_objects(na, nb);
                    if !d.is_empty() {
                        out.insert(k.clone(), Value::Object(d));
                    }
                }
                _ => {
                    out.insert(k.clone(), new.clone());
                }
            },
            Some(new) => {
                out.insert(k.clone(), new.clone());
            }
        }
    }
    for (k, new) in b {
        if !a.contains_key(k) {
            out.insert(k.clone(), new.clone());
        }
    }
    out
}

/// Whether two documents are equal once absent, `null`, empty lists and empty maps are
/// taken as the same and quantities are compared by value (`"1000m"` equals `"1"`), as
/// apimachinery's `equality.Semantic.DeepEqual` compares built-in objects.
pub fn semantic_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            for k in keys {
                let (va, vb) = (x.get(k), y.get(k));
                let ea = va.is_none_or(is_empty);
                let eb = vb.is_none_or(is_empty);
                match (va, vb) {
                    _ if ea && eb => {}
                    (Some(va), Some(vb)) if semantic_eq(va, vb) => {}
                    _ => return false,
                }
            }
            true
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(p, q))
        }
        (Value::String(x), Value::String(y)) => x == y || same_quantity(x, y),
        _ => a == b || (is_empty(a) && is_empty(b)),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn same_quantity(a: &str, b: &str) -> bool {
    let starts_like_number =
        |s: &str| s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '+' || c == '-');
    if !starts_like_number(a) || !starts_like_number(b) {
        return false;
    }
    match (crate::quantity::parse(a), crate::quantity::parse(b)) {
        (Some(x), Some(y)) => x.nanos() == y.nanos(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Cases of evanphx/json-patch's `CreateMergePatch` tests.
    #[test]
    fn diff_gives_the_merge_patch() {
        let cases = [
            (json!({"a": 1}), json!({"a": 1}), json!({})),
            (json!({"a": 1}), json!({"a": 2}), json!({"a": 2})),
            (json!({"a": 1, "b": 2}), json!({"a": 1}), json!({"b": null})),
            (
                json!({"a": 1}),
                json!({"a": 1, "b": {"c": 1}}),
                json!({"b": {"c": 1}}),
            ),
            (
                json!({"a": {"b": 1, "c": 2}}),
                json!({"a": {"b": 1, "c": 3}}),
                json!({"a": {"c": 3}}),
            ),
            (json!({"a": [1, 2]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!({"a": {"b": 1}}), json!({"a": 5}), json!({"a": 5})),
            (
                json!({"a": 5}),
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1}}),
            ),
            (json!({"a": null}), json!({}), json!({"a": null})),
        ];
        for (from, to, want) in cases {
            assert_eq!(diff(&from, &to), want, "{from} -> {to}");
            // applying the patch gives the target
            let mut doc = from.clone();
            json_merge(&mut doc, &want);
            let expect_nulls_dropped = {
                let mut t = to.clone();
                json_merge(&mut t, &json!({}));
                t
            };
            assert!(semantic_eq(&doc, &expect_nulls_dropped), "{from} + {want}");
        }
    }

    fn json_merge(doc: &mut Value, patch: &Value) {
        let Value::Object(p) = patch else {
            *doc = patch.clone();
            return;
        };
        if !doc.is_object() {
            *doc = json!({});
        }
        let Value::Object(d) = doc else { return };
        for (k, v) in p {
            if v.is_null() {
                d.remove(k);
            } else {
                json_merge(d.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }

    #[test]
    fn semantic_equality_ignores_empty_and_reads_quantities() {
        assert!(semantic_eq(&json!({"a": [], "b": {}}), &json!({})));
        assert!(semantic_eq(&json!({"a": null}), &json!({"a": []})));
        assert!(!semantic_eq(&json!({"a": [1]}), &json!({})));
        assert!(semantic_eq(
            &json!({"cpu": "1000m", "memory": "1Gi"}),
            &json!({"cpu": "1", "memory": "1024Mi"})
        ));
        assert!(!semantic_eq(&json!({"cpu": "1"}), &json!({"cpu": "2"})));
        assert!(!semantic_eq(&json!({"name": "a"}), &json!({"name": "b"})));
        assert!(!semantic_eq(&json!({"x": 0}), &json!({})));
        assert!(semantic_eq(&json!([{"a": []}]), &json!([{}])));
    }
}
