//! Tests: ports of upstream structured-merge-diff and kube-apiserver
//! field manager test tables.

mod fieldmanager_tests;
mod fieldpath_tests;
mod harness;
mod smd_tests;
mod smd_tests2;

#[test]
fn apply_records_the_applied_fields() {
    use crate::machinery::ssa::{fieldmanager, Schema};
    use serde_json::json;
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}});
    let resolve = |_: &str| None;
    let schema = Schema::new(&root, &resolve);
    let op = fieldmanager::Operation {
        manager: "kubectl",
        api_version: "example.com/v1",
        kind: "Foo",
        subresource: None,
        time: "2024-01-01T00:00:00Z",
        reset: None,
        empty: None,
    };
    let config = json!({"apiVersion": "example.com/v1", "kind": "Foo",
        "metadata": {"name": "a"}, "spec": {"replicas": 1}});
    let applied = fieldmanager::apply(&schema, None, &config, &op, false).unwrap();
    assert_eq!(
        applied.managed_fields[0]["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
}
