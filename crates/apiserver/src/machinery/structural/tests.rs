//! Tests ported from apiextensions' validation_test.go, pruning/defaulting algorithm
//! tests and listtype validation tests.

use crate::machinery::structural::{default, prune, validate};
use serde_json::{json, Value};

fn errs(schema: &Value, obj: &Value) -> Vec<String> {
    let mut v: Vec<String> = validate(schema, obj)
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    v.sort();
    v
}

fn check(schema: Value, obj: Value, expected: &[&str]) {
    let mut exp: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    exp.sort();
    assert_eq!(errs(&schema, &obj), exp, "object {obj}");
}

fn field(s: Value) -> Value {
    json!({"type": "object", "properties": {"field": s}})
}

#[test]
fn not_nullable() {
    let s = field(json!({"type": "object"}));
    assert!(errs(&s, &json!({})).is_empty());
    check(
        s.clone(),
        json!({"field": "foo"}),
        &[r#"field: Invalid value: "string": field in body must be of type object: "string""#],
    );
    check(
        s.clone(),
        json!({"field": 42}),
        &[r#"field: Invalid value: "integer": field in body must be of type object: "integer""#],
    );
    check(
        s.clone(),
        json!({"field": 1.2}),
        &[r#"field: Invalid value: "number": field in body must be of type object: "number""#],
    );
    check(
        s.clone(),
        json!({"field": []}),
        &[r#"field: Invalid value: "array": field in body must be of type object: "array""#],
    );
    check(
        s,
        json!({"field": null}),
        &[r#"field: Invalid value: "null": field in body must be of type object: "null""#],
    );
}

#[test]
fn nullable() {
    let s = field(json!({"type": "object", "nullable": true}));
    assert!(errs(&s, &json!({"field": null})).is_empty());
    check(
        s,
        json!({"field": true}),
        &[r#"field: Invalid value: "boolean": field in body must be of type object: "boolean""#],
    );
    let untyped = field(json!({"nullable": true}));
    for v in [
        json!(null),
        json!("foo"),
        json!(42),
        json!(true),
        json!(1.2),
        json!([]),
    ] {
        assert!(errs(&untyped, &json!({ "field": v })).is_empty());
    }
}

#[test]
fn int_or_string() {
    let s = field(json!({"x-kubernetes-int-or-string": true}));
    assert!(errs(&s, &json!({"field": 42})).is_empty());
    assert!(errs(&s, &json!({"field": "foo"})).is_empty());
    check(
        s.clone(),
        json!({"field": null}),
        &[r#"field: Invalid value: "null": field in body must be of type integer,string: "null""#],
    );
    check(
        s.clone(),
        json!({"field": 1.2}),
        &[
            r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
        ],
    );
    check(
        s,
        json!({"field": {}}),
        &[
            r#"field: Invalid value: "object": field in body must be of type integer,string: "object""#,
        ],
    );
}

#[test]
fn int_or_string_with_any_of() {
    let s = field(
        json!({"nullable": true, "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
    );
    assert!(errs(&s, &json!({"field": null})).is_empty());
    assert!(errs(&s, &json!({"field": 42})).is_empty());
    check(
        s.clone(),
        json!({"field": true}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
            r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
        ],
    );
    check(
        s,
        json!({"field": 1.2}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
            r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
            r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in field"#,
        ],
    );
}

#[test]
fn int_or_string_with_all_of() {
    let s = field(
        json!({"nullable": true, "x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]}),
    );
    check(
        s,
        json!({"field": []}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "array": field in body must be of type integer,string: "array""#,
            r#"field: Invalid value: "array": field in body must be of type integer: "array""#,
        ],
    );
}

#[test]
fn invalid_regex() {
    let s = field(json!({"type": "string", "pattern": "+"}));
    let e = errs(&s, &json!({"field": "foo"}));
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: error parsing regexp: "), "{}", e[0]);
}

#[test]
fn required_and_enum() {
    let s = json!({"type": "object", "required": ["field"], "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}});
    check(s.clone(), json!({"test": "a"}), &["field: Required value"]);
    check(s, json!({"field": {}}), &["field.nested: Required value"]);
    let s = json!({"type": "object", "properties": {"field": {"type": "object", "required": ["nestedint", "nestedstring"], "properties": {
        "nestedint": {"type": "integer", "enum": [1, 2]}, "nestedstring": {"type": "string", "enum": ["a", "b"]}}}}});
    check(
        s.clone(),
        json!({"field": {}}),
        &[
            "field.nestedint: Required value",
            "field.nestedstring: Required value",
        ],
    );
    check(
        s,
        json!({"field": {"nestedint": "x", "nestedstring": true}}),
        &[
            r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
            r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
            r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
            r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
        ],
    );
}

#[test]
fn sizes() {
    check(
        json!({"type": "object", "properties": {"fieldX": {"type": "object", "maxProperties": 2}}}),
        json!({"fieldX": {"a": true, "b": true, "c": true}}),
        &["fieldX: Too many: 3: must have at most 2 items"],
    );
    check(
        json!({"type": "object", "properties": {"fieldX": {"type": "array", "maxItems": 2}}}),
        json!({"fieldX": ["a", "b", "c"]}),
        &["fieldX: Too many: 3: must have at most 2 items"],
    );
    check(
        json!({"type": "object", "properties": {"fieldX": {"type": "string", "maxLength": 2}}}),
        json!({"fieldX": "abc"}),
        &["fieldX: Too long: may not be more than 2 bytes"],
    );
    check(
        json!({"type": "object", "properties": {"f": {"type": "string", "minLength": 2}}}),
        json!({"f": "é"}),
        &[r#"f: Invalid value: "é": f in body should be at least 2 chars long"#],
    );
    assert!(errs(
        &json!({"type": "object", "properties": {"f": {"type": "string", "maxLength": 1}}}),
        &json!({"f": "é"})
    )
    .is_empty());
    check(
        json!({"type": "object", "properties": {"f": {"type": "array", "minItems": 2, "items": {"type": "string"}}}}),
        json!({"f": ["a"]}),
        &["f: Invalid value: 1: f in body should have at least 2 items"],
    );
    check(
        json!({"type": "object", "properties": {"f": {"type": "object", "minProperties": 1}}}),
        json!({"f": {}}),
        &["f: Invalid value: 0: f in body should have at least 1 properties"],
    );
}

#[test]
fn numbers() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
        "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5}}}}});
    check(
        s.clone(),
        json!({"spec": {"replicas": "string"}}),
        &[
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
        ],
    );
    check(s.clone(), json!({"spec": {"replicas": 0}}), &["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]);
    check(s.clone(), json!({"spec": {"replicas": 12}}), &["spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 10"]);
    check(
        s.clone(),
        json!({"spec": {"replicas": 3}}),
        &["spec.replicas: Invalid value: 3: spec.replicas in body should be a multiple of 2"],
    );
    assert!(errs(&s, &json!({"spec": {"replicas": 4.0}})).is_empty());
    check(
        s.clone(),
        json!({"spec": {"ratio": 1.5}}),
        &["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"],
    );
    check(
        json!({"type": "object", "properties": {"i": {"type": "integer", "format": "int32"}}}),
        json!({"i": 2147483648i64}),
        &[
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in i"#,
        ],
    );
}

#[test]
fn formats_and_patterns() {
    let s = json!({"type": "object", "properties": {
        "t": {"type": "string", "format": "date-time"},
        "n": {"type": "string", "format": "k8s-short-name"},
        "u": {"type": "string", "format": "unknown-format"},
        "p": {"type": "string", "pattern": "^\\d+$"}}});
    check(
        s.clone(),
        json!({"t": "yesterday"}),
        &[r#"t: Invalid value: "yesterday": t in body must be of type date-time: "yesterday""#],
    );
    check(
        s.clone(),
        json!({"n": "a-"}),
        &[r#"n: Invalid value: "a-": n in body must be of type k8s-short-name: "a-""#],
    );
    assert!(errs(
        &s,
        &json!({"u": "anything", "t": "2024-01-01T00:00:00Z", "p": "123"})
    )
    .is_empty());
    check(
        s,
        json!({"p": "١٢"}),
        &[r#"p: Invalid value: "١٢": p in body should match '^\d+$'"#],
    );
}

#[test]
fn additional_properties_and_unique() {
    let s = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}},
        "u": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}});
    check(
        s.clone(),
        json!({"m": {"a": 1, "b": "x"}}),
        &[r#"m.b: Invalid value: "string": m.b in body must be of type integer: "string""#],
    );
    check(
        s,
        json!({"u": [1, 2, 1]}),
        &[r#"u: Invalid value: "": u in body shouldn't contain duplicates"#],
    );
    check(
        json!({"type": "object", "additionalProperties": false}),
        json!({"x": 1}),
        &[r#"<nil>: Invalid value: "x": .x in body is a forbidden property"#],
    );
}

#[test]
fn one_of_and_not() {
    let s = field(
        json!({"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}], "not": {"enum": [5]}}),
    );
    check(
        s.clone(),
        json!({"field": 3}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
        ],
    );
    check(s, json!({"field": -1}), &[]);
    let s = field(json!({"type": "integer", "not": {"enum": [5]}}));
    check(
        s,
        json!({"field": 5}),
        &[r#"<nil>: Invalid value: "": "field" must not validate the schema (not)"#],
    );
}

#[test]
fn root_errors_have_nil_path() {
    check(
        json!({"type": "object", "minProperties": 5}),
        json!({"a": 1}),
        &["<nil>: Invalid value: 1:  in body should have at least 5 properties"],
    );
}

#[test]
fn embedded_resources() {
    let s = json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}});
    check(
        s.clone(),
        json!({"template": {}}),
        &[
            "template.apiVersion: Required value",
            "template.kind: Required value",
        ],
    );
    check(
        s.clone(),
        json!({"template": {"apiVersion": "a/b/c", "kind": "Foo_", "metadata": {"name": "a/b"}}}),
        &[
            r#"template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            r#"template.kind: Invalid value: "Foo_": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            r#"template.metadata.name: Invalid value: "a/b": may not contain '/'"#,
        ],
    );
    check(
        s,
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}}),
        &[
            r#"template.metadata: Invalid value: {"name":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"#,
        ],
    );
}

#[test]
fn list_types() {
    let s = json!({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"], "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}}});
    check(
        s.clone(),
        json!({"set": ["a", "b", "a", "a"]}),
        &[r#"set[2]: Duplicate value: "a""#],
    );
    check(
        s.clone(),
        json!({"map": [{"name": "x"}, {"name": "x"}, {}, {}]}),
        &[
            r#"map[1]: Duplicate value: {"name":"x"}"#,
            "map[3]: Duplicate value: {}",
        ],
    );
    check(
        s.clone(),
        json!({"map2": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]}),
        &[r#"map2[2]: Duplicate value: {"a":"x","b":1}"#],
    );
    check(
        s,
        json!({"map": ["x", {"name": "y"}]}),
        &[
            r#"map[0]: Invalid value: "string": map[0] in body must be of type object: "string""#,
            r#"map[0]: Invalid value: "x": must be an object for an array of list-type map"#,
        ],
    );
}

#[test]
fn malformed_input_never_panics() {
    for schema in [
        json!(null),
        json!(1),
        json!({"type": 5, "properties": []}),
        json!({"properties": {"a": 1}, "items": [], "enum": {}, "pattern": "("}),
    ] {
        for obj in [json!(null), json!({"a": [1, {"b": null}]}), json!("x")] {
            let _ = validate(&schema, &obj);
            let mut o = obj.clone();
            default(&schema, &mut o);
            let _ = prune(&schema, &mut o);
        }
    }
}

// ---- defaulting ----

#[test]
fn defaulting() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "string", "default": "A"},
        "b": {"type": "object", "default": {}, "properties": {"c": {"type": "integer", "default": 1}}},
        "n": {"type": "string", "default": "N"},
        "nn": {"type": "string", "nullable": true, "default": "NN"},
        "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string", "default": "X"}}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"y": {"type": "integer", "default": 2}}}}}});
    let mut o = json!({"n": null, "nn": null, "list": [{}, {"x": "set"}], "m": {"k": {}}});
    default(&s, &mut o);
    assert_eq!(
        o,
        json!({"a": "A", "b": {"c": 1}, "n": "N", "nn": null, "list": [{"x": "X"}, {"x": "set"}], "m": {"k": {"y": 2}}})
    );
    // nulls of non-nullable items get the items default
    let s = json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "default": "d"}}}});
    let mut o = json!({"l": ["a", null]});
    default(&s, &mut o);
    assert_eq!(o, json!({"l": ["a", "d"]}));
}

// ---- pruning ----

#[test]
fn pruning() {
    let s = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}, "arr": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"inner": {"type": "object", "properties": {"z": {"type": "string"}}}}},
            "any": {"type": "object", "allOf": [{"properties": {"q": {}}}]}}}}});
    let mut o = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "foo": 1},
        "spec": {"a": "1", "b": 2, "arr": [{"k": "v", "x": 1}], "free": {"anything": 1, "inner": {"z": "1", "drop": 1}}, "any": {"q": 1}}, "extra": true});
    let paths = prune(&s, &mut o);
    assert_eq!(
        paths,
        vec![
            "extra",
            "spec.any.q",
            "spec.arr[0].x",
            "spec.b",
            "spec.free.inner.drop"
        ]
    );
    assert_eq!(
        o,
        json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "foo": 1},
        "spec": {"a": "1", "arr": [{"k": "v"}], "free": {"anything": 1, "inner": {"z": "1"}}, "any": {}}})
    );
}

#[test]
fn pruning_preserves_order_and_nulls() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "z": {"type": "string"}, "a": {"type": "string"}, "n": {"type": "string", "nullable": true}, "d": {"type": "string", "default": "x"}}}}});
    let mut o = json!({"spec": {"z": null, "x": 1, "a": "1", "n": null, "d": null}});
    assert_eq!(prune(&s, &mut o), vec!["spec.x"]);
    let keys: Vec<&String> = o["spec"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, vec!["a", "n", "d"]);
}

#[test]
fn pruning_embedded() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}}}}});
    let mut o = json!({"spec": {"template": {"apiVersion": "v1", "kind": 5, "metadata": {"name": "a", "labels": {"x": "y"}, "bogus": 1, "generation": "bad"}, "spec": {"x": 1}, "other": 1}}});
    let paths = prune(&s, &mut o);
    assert_eq!(
        paths,
        vec![
            "spec.template.other",
            "spec.template.spec.x",
            "spec.template.metadata.bogus"
        ]
    );
    assert_eq!(
        o,
        json!({"spec": {"template": {"apiVersion": "v1", "metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {}}}})
    );
}

/// CRDValidationRatcheting (upstream `ratcheting_test.go`'s cases): on update, errors
/// of values unchanged from the old object are dropped; values correlate by property
/// and by the keys of list-type map lists, not by the items of sets or atomic lists.
#[test]
fn ratcheting_of_unchanged_values() {
    let schema = json!({"type": "object", "properties": {
        "small": {"type": "integer", "maximum": 5},
        "name": {"type": "string", "maxLength": 3},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 2}}}});
    let run = |new: Value, old: Option<Value>| -> Vec<String> {
        crate::machinery::structural::validate_update(&schema, &new, old.as_ref())
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    };
    let old = json!({"small": 9, "name": "toolong", "ports": [{"name": "a", "port": 500}],
        "tags": ["long"], "labels": {"x": "long"}});
    // a create reports everything
    assert_eq!(run(old.clone(), None).len(), 5);
    // unchanged invalid values are ratcheted, except the atomic list's item
    let same = run(old.clone(), Some(old.clone()));
    assert!(same.is_empty(), "{same:?}");
    // a list-map item moved in the list still correlates by its key; an unrelated
    // valid change elsewhere does not matter
    let mut moved = old.clone();
    moved["ports"] = json!([{"name": "b", "port": 1}, {"name": "a", "port": 500}]);
    assert_eq!(run(moved, Some(old.clone())), Vec::<String>::new());
    // changed values are checked again
    let mut changed = old.clone();
    changed["small"] = json!(8);
    changed["ports"] = json!([{"name": "a", "port": 501}]);
    changed["labels"] = json!({"x": "long", "y": "long"});
    assert_eq!(
        run(changed, Some(old.clone())),
        vec![
            "small: Invalid value: 8: small in body should be less than or equal to 5",
            "ports[0].port: Invalid value: 501: ports[0].port in body should be less than or equal to 100",
            "labels.y: Too long: may not be more than 2 bytes",
        ]
    );
    // items of atomic lists do not correlate: a changed list checks every item
    let mut tags = old.clone();
    tags["tags"] = json!(["long", "ok"]);
    assert_eq!(
        run(tags, Some(old)),
        vec!["tags[0]: Too long: may not be more than 2 bytes"]
    );
}
