//! More ports of upstream `merge/*_test.go`: nested types, deduced types,
//! preserve-unknown-fields, dangling items, ignored (reset) fields and
//! schema changes.

use super::harness::State;
use super::smd_tests::nested_schema;
use crate::machinery::ssa::fieldpath::{field_path, Set};
use crate::machinery::ssa::schema::Schema;
use serde_json::{json, Value};

fn run(root: Value, f: impl FnOnce(&mut State)) {
    let resolve = |_: &str| None;
    let s = Schema::new(&root, &resolve);
    let mut st = State::new(&s);
    f(&mut st);
}

// -- nested_test.go -------------------------------------------------------------

#[test]
fn nested_list_of_lists_change_value() {
    run(nested_schema(), |st| {
        st.apply(
            "default",
            "v1",
            json!({"listOfLists": [{"name": "a", "value": ["b", "c"]}]}),
        );
        st.apply(
            "default",
            "v1",
            json!({"listOfLists": [{"name": "a", "value": ["b", "c", "d"]}]}),
        );
        st.expect_live(json!({"listOfLists": [{"name": "a", "value": ["b", "c", "d"]}]}));
        st.expect_managers(&[(
            "default",
            "v1",
            json!({"f:listOfLists": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {"v:\"b\"": {}, "v:\"c\"": {}, "v:\"d\"": {}}}}}),
        )]);
    });
}

#[test]
fn nested_list_of_maps_change_key_and_value() {
    run(nested_schema(), |st| {
        st.apply(
            "default",
            "v1",
            json!({"listOfMaps": [{"name": "a", "value": {"b": "x", "c": "y"}}]}),
        );
        st.apply(
            "default",
            "v1",
            json!({"listOfMaps": [{"name": "a", "value": {"b": "x", "d": "z"}}]}),
        );
        st.expect_live(json!({"listOfMaps": [{"name": "a", "value": {"b": "x", "d": "z"}}]}));
        st.expect_managers(&[(
            "default",
            "v1",
            json!({"f:listOfMaps": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {"f:b": {}, "f:d": {}}}}}),
        )]);
    });
}

#[test]
fn nested_map_of_lists_change_key_and_value() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"mapOfLists": {"a": ["b"]}}));
        st.apply("default", "v1", json!({"mapOfLists": {"b": ["a", "c"]}}));
        st.expect_live(json!({"mapOfLists": {"b": ["a", "c"]}}));
        st.expect_managers(&[(
            "default",
            "v1",
            json!({"f:mapOfLists": {"f:b": {".": {}, "v:\"a\"": {}, "v:\"c\"": {}}}}),
        )]);
    });
}

#[test]
fn nested_map_of_maps_change_value() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"mapOfMaps": {"b": {"c": "d"}}}));
        st.apply("default", "v1", json!({"mapOfMaps": {"b": {"c": "e"}}}));
        st.expect_live(json!({"mapOfMaps": {"b": {"c": "e"}}}));
        st.expect_managers(&[(
            "default",
            "v1",
            json!({"f:mapOfMaps": {"f:b": {".": {}, "f:c": {}}}}),
        )]);
    });
}

#[test]
fn nested_struct_apply_remove_all() {
    run(nested_schema(), |st| {
        st.apply(
            "default",
            "v1",
            json!({"struct": {"name": "a", "value": 1}}),
        );
        st.apply("default", "v1", Value::Null);
        st.expect_live(Value::Null);
        st.expect_managers(&[]);
    });
}

#[test]
fn nested_struct_apply_remove_dangling() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"struct": {"name": "a"}}));
        st.apply("default", "v1", json!({"struct": null}));
        st.expect_live(json!({"struct": null}));
        st.expect_managers(&[("default", "v1", json!({"f:struct": {}}))]);
    });
}

#[test]
fn nested_struct_apply_update_remove_all() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"struct": {"name": "a"}}));
        st.update(
            "controller",
            "v1",
            json!({"struct": {"name": "a", "value": 1}}),
        );
        st.apply("default", "v1", Value::Null);
        st.expect_live(json!({"struct": {"value": 1}}));
        st.expect_managers(&[("controller", "v1", json!({"f:struct": {"f:value": {}}}))]);
    });
}

#[test]
fn nested_struct_apply_update_dict_dangling() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"struct": {"name": "a"}}));
        st.update(
            "controller",
            "v1",
            json!({"struct": {"name": "a", "value": 1}}),
        );
        st.apply("default", "v1", json!({"struct": {}}));
        st.expect_live(json!({"struct": {"value": 1}}));
    });
}

#[test]
fn nested_struct_apply_update_took_over() {
    run(nested_schema(), |st| {
        st.apply("default", "v1", json!({"struct": {"name": "a"}}));
        st.update(
            "controller",
            "v1",
            json!({"struct": {"name": "b", "value": 1}}),
        );
        st.apply("default", "v1", json!({"struct": null}));
        st.expect_live(json!({"struct": {"name": "b", "value": 1}}));
    });
}

// -- multiple_appliers_test.go (dangling sub-items) -------------------------------------

#[test]
fn remove_one_keep_one_with_two_sub_items() {
    run(nested_schema(), |st| {
        st.apply(
            "apply-one",
            "v1",
            json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
        );
        st.apply(
            "apply-two",
            "v2",
            json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
        );
        st.apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]}));
        st.expect_live(json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d"]}]}));
        st.expect_managers(&[
            ("apply-one", "v3", json!({"f:listOfLists": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}})),
            ("apply-two", "v2", json!({"f:listOfLists": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:value": {"v:\"d\"": {}}}}})),
        ]);
    });
}

#[test]
fn remove_one_keep_one_with_dangling_subitem() {
    run(nested_schema(), |st| {
        st.apply(
            "apply-one",
            "v1",
            json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
        );
        st.apply(
            "apply-two",
            "v2",
            json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
        );
        st.update(
            "controller",
            "v2",
            json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c", "d", "e"]}]}),
        );
        st.apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]}));
        st.expect_live(json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d", "e"]}]}));
        st.expect_managers(&[
            ("apply-one", "v3", json!({"f:listOfLists": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}})),
            ("apply-two", "v2", json!({"f:listOfLists": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:value": {"v:\"d\"": {}}}}})),
            ("controller", "v2", json!({"f:listOfLists": {"k:{\"name\":\"b\"}": {"f:value": {"v:\"e\"": {}}}}})),
        ]);
    });
}

#[test]
fn unset_scalar_shared_with_updater() {
    // An updater's field survives the applier dropping it.
    run(
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
        |st| {
            st.apply("apply-one", "v1", json!({"a": "x", "b": "y"}));
            // An update that changes nothing takes no ownership: b is pruned.
            st.update("controller", "v1", json!({"a": "x", "b": "y"}));
            st.apply("apply-one", "v1", json!({"a": "x"}));
            st.expect_live(json!({"a": "x"}));
            st.apply("apply-one", "v1", json!({"a": "x", "b": "y"}));
            st.update("controller", "v1", json!({"a": "x", "b": "z"}));
            st.apply("apply-one", "v1", json!({"a": "x"}));
            st.expect_live(json!({"a": "x", "b": "z"}));
            st.expect_managers(&[
                ("apply-one", "v1", json!({"f:a": {}})),
                ("controller", "v1", json!({"f:b": {}})),
            ]);
        },
    );
}

#[test]
fn unset_scalar_shared_with_applier() {
    run(
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        |st| {
            st.apply("apply-one", "v1", json!({"a": "x"}));
            st.apply("apply-two", "v1", json!({"a": "x"}));
            st.apply("apply-one", "v1", json!({}));
            st.expect_live(json!({"a": "x"}));
            st.expect_managers(&[("apply-two", "v1", json!({"f:a": {}}))]);
            // Removing everything leaves nothing (upstream yields a null object).
            st.apply("apply-two", "v1", json!({}));
            st.expect_live(Value::Null);
            st.expect_managers(&[]);
        },
    );
}

// -- deduced_test.go / preserve_unknown_test.go ----------------------------------------

#[test]
fn deduced_leaf_apply_update_apply_with_conflict() {
    run(json!({}), |st| {
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
    });
}

#[test]
fn deduced_list_is_atomic() {
    run(json!({}), |st| {
        st.apply("default", "v1", json!({"list": ["a", "c"]}));
        st.apply("default", "v1", json!({"list": ["a", "d", "c", "b"]}));
        st.expect_live(json!({"list": ["a", "d", "c", "b"]}));
        st.expect_managers(&[("default", "v1", json!({"f:list": {}}))]);
        st.update(
            "controller",
            "v1",
            json!({"list": ["a", "d", "c", "b", "e"]}),
        );
        st.apply_conflicts(
            "default",
            "v1",
            json!({"list": ["a"]}),
            &[("controller", ".list")],
        );
    });
}

#[test]
fn deduced_nested_maps_are_granular() {
    run(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        |st| {
            st.apply("default", "v1", json!({"a": {"b": {"c": 1}}, "x": {}}));
            st.expect_managers(&[(
                "default",
                "v1",
                json!({"f:a": {".": {}, "f:b": {".": {}, "f:c": {}}}, "f:x": {}}),
            )]);
            st.update(
                "controller",
                "v1",
                json!({"a": {"b": {"c": 1, "d": 2}}, "x": {}}),
            );
            st.apply("default", "v1", json!({"a": {"b": {"c": 3}}}));
            st.expect_live(json!({"a": {"b": {"c": 3, "d": 2}}}));
        },
    );
}

#[test]
fn preserve_unknown_fields() {
    run(
        json!({"type": "object", "properties": {"num": {"type": "number"}}, "additionalProperties": {"type": "string"}}),
        |st| {
            st.apply("default", "v1", json!({"num": 5, "unknown": "value"}));
            st.apply("default", "v1", json!({"num": 6, "unknown": "new"}));
            st.expect_live(json!({"num": 6, "unknown": "new"}));
            st.expect_managers(&[("default", "v1", json!({"f:num": {}, "f:unknown": {}}))]);
        },
    );
}

#[test]
fn atomic_map_and_list_are_leaves() {
    let root = json!({"type": "object", "properties": {
        "m": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "l": {"type": "array", "items": {"type": "string"}}}});
    run(root, |st| {
        st.apply("one", "v1", json!({"m": {"a": "x"}, "l": ["a"]}));
        st.expect_managers(&[("one", "v1", json!({"f:l": {}, "f:m": {}}))]);
        st.apply_conflicts("two", "v1", json!({"m": {"b": "y"}}), &[("one", ".m")]);
        st.force_apply("two", "v1", json!({"m": {"b": "y"}}));
        st.expect_live(json!({"m": {"b": "y"}, "l": ["a"]}));
    });
}

// -- ignore_test.go (reset fields) --------------------------------------------------------

#[test]
fn ignored_fields_are_not_owned() {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
        "status": {"type": "object", "properties": {"b": {"type": "string"}}}}});
    let resolve = |_: &str| None;
    let s = Schema::new(&root, &resolve);
    let ignore = Set::from_paths(&[field_path(&["status"])]);
    let mut st = State::new(&s);
    st.up.ignore = Some(&ignore);
    st.apply(
        "one",
        "v1",
        json!({"spec": {"a": "x"}, "status": {"b": "y"}}),
    );
    st.expect_managers(&[("one", "v1", json!({"f:spec": {"f:a": {}}}))]);
    st.update(
        "controller",
        "v1",
        json!({"spec": {"a": "x"}, "status": {"b": "z"}}),
    );
    st.expect_managers(&[("one", "v1", json!({"f:spec": {"f:a": {}}}))]);
}

// -- schema_change_test.go --------------------------------------------------------------------

#[test]
fn schema_change_granular_to_atomic() {
    let granular = json!({"type": "object", "properties": {"struct": {"type": "object", "properties": {
        "name": {"type": "string"}, "value": {"type": "number"}}}}});
    let mut atomic = granular.clone();
    atomic["properties"]["struct"]["x-kubernetes-map-type"] = json!("atomic");
    let resolve = |_: &str| None;
    let s1 = Schema::new(&granular, &resolve);
    let s2 = Schema::new(&atomic, &resolve);
    let mut st = State::new(&s1);
    st.apply("one", "v1", json!({"struct": {"name": "a"}}));
    st.update(
        "controller",
        "v1",
        json!({"struct": {"name": "a", "value": 1}}),
    );
    let (live, managers) = (st.live.clone(), st.managers.clone());
    let mut st2 = State::new(&s2);
    st2.live = live;
    st2.managers = managers;
    // The controller's `.struct.value` became ownership of the atomic `.struct`.
    st2.apply_conflicts(
        "one",
        "v1",
        json!({"struct": {"name": "b"}}),
        &[("controller", ".struct")],
    );
    st2.force_apply("one", "v1", json!({"struct": {"name": "b"}}));
    st2.expect_live(json!({"struct": {"name": "b"}}));
    st2.expect_managers(&[("one", "v1", json!({"f:struct": {}}))]);
}
