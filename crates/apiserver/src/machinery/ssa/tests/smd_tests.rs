//! Ports of upstream `merge/*_test.go` tables (leaf, key, set, nested,
//! multiple appliers), with the schemas rewritten as OpenAPI JSON and the
//! expected sets written as FieldsV1.

use super::harness::State;
use crate::machinery::ssa::schema::Schema;
use serde_json::{json, Value};

fn leaf_schema() -> Value {
    json!({"type": "object", "properties": {
        "numeric": {"type": "number"}, "string": {"type": "string"}, "bool": {"type": "boolean"}}})
}

fn assoc_schema() -> Value {
    json!({"type": "object", "properties": {"list": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "number"}}}}}})
}

fn set_schema() -> Value {
    json!({"type": "object", "properties": {"list": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}})
}

pub fn nested_schema() -> Value {
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({"type": "object", "properties": {
        "listOfLists": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": set}}},
        "listOfMaps": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": map}}},
        "mapOfLists": {"type": "object", "additionalProperties": set},
        "mapOfMaps": {"type": "object", "additionalProperties": map},
        "struct": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "number"}}}
    }})
}

macro_rules! with_schema {
    ($root:expr, $s:ident) => {
        let root = $root;
        let resolve = |_: &str| None;
        let $s = Schema::new(&root, &resolve);
    };
}

// -- leaf_test.go ---------------------------------------------------------------

#[test]
fn leaf_apply_twice() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"numeric": 1, "string": "string"}));
    st.apply(
        "default",
        "v1",
        json!({"numeric": 2, "string": "string", "bool": false}),
    );
    st.expect_live(json!({"numeric": 2, "string": "string", "bool": false}));
    st.expect_managers(&[(
        "default",
        "v1",
        json!({"f:numeric": {}, "f:string": {}, "f:bool": {}}),
    )]);
}

#[test]
fn leaf_apply_twice_different_versions() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"numeric": 1, "string": "string"}));
    st.apply(
        "default",
        "v2",
        json!({"numeric": 2, "string": "string", "bool": false}),
    );
    st.expect_managers(&[(
        "default",
        "v2",
        json!({"f:numeric": {}, "f:string": {}, "f:bool": {}}),
    )]);
}

#[test]
fn leaf_apply_update_apply_no_conflict() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"numeric": 1, "string": "string"}));
    st.update(
        "controller",
        "v2",
        json!({"numeric": 1, "string": "string", "bool": true}),
    );
    st.apply("default", "v1", json!({"numeric": 2, "string": "string"}));
    st.expect_live(json!({"numeric": 2, "string": "string", "bool": true}));
    st.expect_managers(&[
        ("default", "v1", json!({"f:numeric": {}, "f:string": {}})),
        ("controller", "v2", json!({"f:bool": {}})),
    ]);
}

#[test]
fn leaf_apply_update_apply_with_conflict() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"numeric": 1, "string": "string"}));
    st.update(
        "controller",
        "v1",
        json!({"numeric": 1, "string": "controller string", "bool": true}),
    );
    st.apply_conflicts(
        "default",
        "v1",
        json!({"numeric": 2, "string": "user string"}),
        &[("controller", ".string")],
    );
    st.force_apply(
        "default",
        "v1",
        json!({"numeric": 2, "string": "user string"}),
    );
    st.expect_live(json!({"numeric": 2, "string": "user string", "bool": true}));
    st.expect_managers(&[
        ("default", "v1", json!({"f:numeric": {}, "f:string": {}})),
        ("controller", "v1", json!({"f:bool": {}})),
    ]);
}

#[test]
fn leaf_apply_twice_remove() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "default",
        "v1",
        json!({"numeric": 1, "string": "string", "bool": false}),
    );
    st.apply("default", "v1", json!({"string": "new string"}));
    st.expect_live(json!({"string": "new string"}));
    st.expect_managers(&[("default", "v1", json!({"f:string": {}}))]);
}

#[test]
fn leaf_update_apply_update_same_value_no_conflict() {
    // An applier agreeing with the current value does not conflict.
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.update(
        "controller",
        "v1",
        json!({"numeric": 1, "string": "string"}),
    );
    st.apply("default", "v1", json!({"numeric": 1}));
    st.expect_managers(&[
        ("default", "v1", json!({"f:numeric": {}})),
        ("controller", "v1", json!({"f:numeric": {}, "f:string": {}})),
    ]);
}

#[test]
fn leaf_update_remove_empty_set() {
    with_schema!(leaf_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"string": "string"}));
    st.update("controller", "v1", json!({"string": "new string"}));
    st.expect_managers(&[("controller", "v1", json!({"f:string": {}}))]);
}

// -- key_test.go / multiple_appliers_test.go (associative lists) --------------------

#[test]
fn key_removing_obsolete_applied_structs() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "default",
        "v1",
        json!({"list": [{"name": "a", "value": 1}]}),
    );
    st.apply(
        "default",
        "v1",
        json!({"list": [{"name": "b", "value": 2}]}),
    );
    st.expect_live(json!({"list": [{"name": "b", "value": 2}]}));
    st.expect_managers(&[(
        "default",
        "v1",
        json!({"f:list": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:value": {}}}}),
    )]);
}

#[test]
fn multiple_appliers_remove_one() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "apply-one",
        "v1",
        json!({"list": [{"name": "a"}, {"name": "b"}]}),
    );
    st.apply("apply-two", "v2", json!({"list": [{"name": "c"}]}));
    st.apply("apply-one", "v3", json!({"list": [{"name": "a"}]}));
    st.expect_live(json!({"list": [{"name": "a"}, {"name": "c"}]}));
    st.expect_managers(&[
        (
            "apply-one",
            "v3",
            json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}),
        ),
        (
            "apply-two",
            "v2",
            json!({"f:list": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}}}}),
        ),
    ]);
}

#[test]
fn multiple_appliers_same_value_no_conflict() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "apply-one",
        "v1",
        json!({"list": [{"name": "a", "value": 0}]}),
    );
    st.apply(
        "apply-two",
        "v2",
        json!({"list": [{"name": "a", "value": 0}]}),
    );
    let set = json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {}}}});
    st.expect_live(json!({"list": [{"name": "a", "value": 0}]}));
    st.expect_managers(&[("apply-one", "v1", set.clone()), ("apply-two", "v2", set)]);
}

#[test]
fn multiple_appliers_change_value_yes_conflict() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "apply-one",
        "v1",
        json!({"list": [{"name": "a", "value": 0}]}),
    );
    st.apply_conflicts(
        "apply-two",
        "v2",
        json!({"list": [{"name": "a", "value": 1}]}),
        &[("apply-one", r#".list[name="a"].value"#)],
    );
    st.expect_live(json!({"list": [{"name": "a", "value": 0}]}));
    st.expect_managers(&[(
        "apply-one",
        "v1",
        json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {}}}}),
    )]);
}

#[test]
fn multiple_appliers_remove_one_keep_one() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "apply-one",
        "v1",
        json!({"list": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
    );
    st.apply(
        "apply-two",
        "v2",
        json!({"list": [{"name": "c"}, {"name": "d"}]}),
    );
    st.apply("apply-one", "v3", json!({"list": [{"name": "a"}]}));
    st.expect_live(json!({"list": [{"name": "a"}, {"name": "c"}, {"name": "d"}]}));
    st.expect_managers(&[
        ("apply-one", "v3", json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}})),
        ("apply-two", "v2", json!({"f:list": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}}, "k:{\"name\":\"d\"}": {".": {}, "f:name": {}}}})),
    ]);
}

#[test]
fn list_map_merge_keeps_live_order_then_appends() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    st.apply(
        "one",
        "v1",
        json!({"list": [{"name": "a", "value": 1}, {"name": "b", "value": 2}]}),
    );
    st.apply(
        "two",
        "v1",
        json!({"list": [{"name": "c", "value": 3}, {"name": "a", "value": 1}]}),
    );
    st.expect_live(json!({"list": [{"name": "c", "value": 3}, {"name": "a", "value": 1}, {"name": "b", "value": 2}]}));
    st.apply("three", "v1", json!({"list": [{"name": "z"}]}));
    st.expect_live(json!({"list": [{"name": "c", "value": 3}, {"name": "a", "value": 1}, {"name": "b", "value": 2}, {"name": "z"}]}));
}

#[test]
fn list_map_duplicate_keys_and_missing_keys_are_errors() {
    with_schema!(assoc_schema(), s);
    let mut st = State::new(&s);
    let e = st
        .try_apply(
            "one",
            "v1",
            json!({"list": [{"name": "a"}, {"name": "a"}]}),
            false,
        )
        .unwrap_err();
    assert_eq!(
        e,
        crate::machinery::ssa::manager::UpdateError::Invalid(
            r#"failed to merge config: .list: duplicate entries for key [name="a"]"#.into()
        )
    );
    let e = st
        .try_apply("one", "v1", json!({"list": [{"value": 1}]}), false)
        .unwrap_err();
    assert_eq!(
        e,
        crate::machinery::ssa::manager::UpdateError::Invalid(
            r#"failed to merge config: .list: element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn't have default values for any key fields)"#.into()
        )
    );
}

#[test]
fn list_map_key_defaults() {
    // default_keys_test.go: missing key fields use the schema default.
    let root = json!({"type": "object", "properties": {"containerPorts": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
        "items": {"type": "object", "properties": {
            "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": {"type": "string"}}}}}});
    let resolve = |_: &str| None;
    let s = Schema::new(&root, &resolve);
    let mut st = State::new(&s);
    st.apply(
        "default",
        "v1",
        json!({"containerPorts": [{"port": 80, "name": "foo"}]}),
    );
    st.apply(
        "other",
        "v1",
        json!({"containerPorts": [{"port": 80, "protocol": "TCP", "name": "foo"}]}),
    );
    st.expect_managers(&[
        ("default", "v1", json!({"f:containerPorts": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}}}})),
        ("other", "v1", json!({"f:containerPorts": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}}})),
    ]);
    st.expect_live(json!({"containerPorts": [{"port": 80, "protocol": "TCP", "name": "foo"}]}));
}

// -- set_test.go -----------------------------------------------------------------

#[test]
fn set_apply_twice() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "c"]}));
    st.apply("default", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.expect_live(json!({"list": ["a", "b", "c", "d"]}));
    st.expect_managers(&[(
        "default",
        "v1",
        json!({"f:list": {"v:\"a\"": {}, "v:\"b\"": {}, "v:\"c\"": {}, "v:\"d\"": {}}}),
    )]);
}

#[test]
fn set_apply_update_apply_no_overlap() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "c"]}));
    st.update("controller", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.apply(
        "default",
        "v1",
        json!({"list": ["a", "aprime", "c", "cprime"]}),
    );
    st.expect_live(json!({"list": ["a", "b", "aprime", "c", "d", "cprime"]}));
    st.expect_managers(&[
        ("default", "v1", json!({"f:list": {"v:\"a\"": {}, "v:\"aprime\"": {}, "v:\"c\"": {}, "v:\"cprime\"": {}}})),
        ("controller", "v1", json!({"f:list": {"v:\"b\"": {}, "v:\"d\"": {}}})),
    ]);
}

#[test]
fn set_apply_update_apply_with_overlap() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "c"]}));
    st.update("controller", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.apply("default", "v1", json!({"list": ["a", "b", "c"]}));
    st.expect_live(json!({"list": ["a", "b", "c", "d"]}));
    st.expect_managers(&[
        (
            "default",
            "v1",
            json!({"f:list": {"v:\"a\"": {}, "v:\"b\"": {}, "v:\"c\"": {}}}),
        ),
        (
            "controller",
            "v1",
            json!({"f:list": {"v:\"b\"": {}, "v:\"d\"": {}}}),
        ),
    ]);
}

#[test]
fn set_apply_twice_reorder() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.apply("default", "v1", json!({"list": ["a", "d", "c", "b"]}));
    st.expect_live(json!({"list": ["a", "d", "c", "b"]}));
}

#[test]
fn set_apply_update_apply_reorder() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.update("controller", "v1", json!({"list": ["a", "d", "c", "b"]}));
    st.apply("default", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.expect_live(json!({"list": ["a", "b", "c", "d"]}));
    st.expect_managers(&[(
        "default",
        "v1",
        json!({"f:list": {"v:\"a\"": {}, "v:\"b\"": {}, "v:\"c\"": {}, "v:\"d\"": {}}}),
    )]);
}

#[test]
fn set_apply_twice_remove() {
    with_schema!(set_schema(), s);
    let mut st = State::new(&s);
    st.apply("default", "v1", json!({"list": ["a", "b", "c", "d"]}));
    st.apply("default", "v1", json!({"list": ["a", "c", "e"]}));
    st.expect_live(json!({"list": ["a", "c", "e"]}));
    st.expect_managers(&[(
        "default",
        "v1",
        json!({"f:list": {"v:\"a\"": {}, "v:\"c\"": {}, "v:\"e\"": {}}}),
    )]);
}
