//! CRD validation tests (cases modelled on apiextensions' validation_test.go).

use super::validation::{structural_errors, validate_crd};
use serde_json::{json, Value};

fn crd(schema: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "conversion": {"strategy": "None"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]},
        "status": {"storedVersions": ["v1"]}})
}

fn errs(c: &Value, old: Option<&Value>) -> Vec<String> {
    validate_crd(c, old)
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect()
}

#[test]
fn valid_crd() {
    let c = crd(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1}}}}}),
    );
    assert_eq!(errs(&c, None), Vec::<String>::new());
}

#[test]
fn names_and_group() {
    let mut c = crd(json!({"type": "object"}));
    c["metadata"]["name"] = json!("bars.example.com");
    c["spec"]["group"] = json!("example");
    c["spec"]["names"]["plural"] = json!("Foos");
    c["spec"]["names"]["listKind"] = json!("Foo");
    let e = errs(&c, None);
    assert!(e.contains(&r#"metadata.name: Invalid value: "bars.example.com": must be spec.names.plural+"."+spec.group"#.to_string()), "{e:?}");
    assert!(
        e.contains(
            &r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#
                .to_string()
        ),
        "{e:?}"
    );
    assert!(e.contains(&r#"spec.names.plural: Invalid value: "Foos": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#.to_string()), "{e:?}");
    assert!(
        e.contains(
            &r#"spec.names.listKind: Invalid value: "Foo": kind and listKind may not be the same"#
                .to_string()
        ),
        "{e:?}"
    );
}

#[test]
fn versions_and_scope() {
    let mut c = crd(json!({"type": "object"}));
    c["spec"]["scope"] = json!("Global");
    c["spec"]["versions"][0]["storage"] = json!(false);
    let e = errs(&c, None);
    assert!(e.contains(&r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#.to_string()), "{e:?}");
    assert!(
        e.iter()
            .any(|x| x.starts_with("spec.versions: Invalid value: [")
                && x.ends_with("must have exactly one version marked as storage version")),
        "{e:?}"
    );
}

#[test]
fn missing_schema() {
    let mut c = crd(json!({"type": "object"}));
    c["spec"]["versions"][0]
        .as_object_mut()
        .map(|m| m.remove("schema"));
    assert_eq!(
        errs(&c, None),
        vec!["spec.versions[0].schema.openAPIV3Schema: Required value"]
    );
}

#[test]
fn structural_schema_errors() {
    let c = crd(
        json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}, "anyOf": [{"type": "string", "properties": {"b": {}}}]}}}),
    );
    let e = errs(&c, None);
    assert_eq!(e, vec![
        "spec.validation.openAPIV3Schema.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
        "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
    ]);
    assert!(structural_errors(
        &json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        "x"
    )
    .is_empty());
    // completeness is checked for the root's value validations
    let e = structural_errors(
        &json!({"type": "object", "properties": {"a": {"type": "string"}}, "oneOf": [{"properties": {"b": {}}}]}),
        "r",
    );
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].message,
        "Required value: because it is defined in r.oneOf[0].properties[b]"
    );
    assert_eq!(e[0].field, "r.properties[b]");
    let e = structural_errors(
        &json!({"type": "array", "additionalProperties": {"type": "string"}}),
        "s",
    );
    let texts: Vec<String> = e
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    assert_eq!(
        texts,
        vec![
            "s.additionalProperties: Forbidden: must not be used at the root",
            "s.items: Required value: must be specified",
            r#"s.type: Invalid value: "array": must be object at the root"#,
        ]
    );
}

#[test]
fn metadata_and_defaults() {
    let c = crd(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        "spec": {"type": "object", "properties": {"r": {"type": "integer", "default": "x"}, "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "1", "b": 2}}}}}}));
    let e = errs(&c, None);
    assert_eq!(e, vec![
        "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
    ]);
    let c = crd(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"r": {"type": "integer", "default": "x"}, "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "1", "b": 2}}}}}}));
    let e = errs(&c, None);
    assert_eq!(
        e,
        vec![
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[r].default: Invalid value: "string":  in body must be of type integer: "string""#,
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[o].default: Invalid value: {"a":"1","b":2}: must not have unknown fields"#,
        ]
    );
}

#[test]
fn list_map_rules() {
    let c = crd(
        json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "missing"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "s": {"type": "string", "x-kubernetes-list-map-keys": ["a"]}, "u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
    );
    let e = errs(&c, None);
    assert_eq!(e, vec![
        r#"spec.validation.openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: Invalid value: ["name","missing"]: entries must all be names of item properties"#,
        "spec.validation.openAPIV3Schema.properties[l].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        "spec.validation.openAPIV3Schema.properties[s].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
        "spec.validation.openAPIV3Schema.properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
    ]);
}

#[test]
fn subresources_columns_conversion() {
    let mut c = crd(json!({"type": "object"}));
    c["spec"]["versions"][0]["subresources"] = json!({"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas"}});
    c["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Age", "type": "time", "jsonPath": ""}]);
    c["spec"]["conversion"] =
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"]}});
    let e = errs(&c, None);
    assert_eq!(e, vec![
        r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec"#,
        r#"spec.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be a simple json path starting with ."#,
        r#"spec.additionalPrinterColumns[0].type: Invalid value: "time": must be one of boolean,date,integer,number,string"#,
        "spec.additionalPrinterColumns[0].JSONPath: Required value",
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
        r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1"#,
    ]);
}

#[test]
fn status_subresource_root() {
    let mut c = crd(json!({"type": "object", "description": "x", "additionalProperties": false}));
    c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    let e = errs(&c, None);
    assert!(e.iter().any(|x| x.starts_with("spec.validation.openAPIV3Schema: Invalid value: {") && x.ends_with("fields are allowed at the root of the schema if the status subresource is enabled")), "{e:?}");
}

#[test]
fn update_rules() {
    let old = {
        let mut o = crd(json!({"type": "object"}));
        o["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
        o
    };
    let mut c = crd(json!({"type": "object"}));
    c["spec"]["scope"] = json!("Cluster");
    c["spec"]["group"] = json!("other.com");
    c["spec"]["versions"] = json!([{"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]);
    let e = errs(&c, Some(&old));
    assert!(
        e.contains(&r#"spec.scope: Invalid value: "Cluster": field is immutable"#.to_string()),
        "{e:?}"
    );
    assert!(
        e.contains(&r#"spec.group: Invalid value: "other.com": field is immutable"#.to_string()),
        "{e:?}"
    );
    assert!(
        e.contains(
            &r#"status.storedVersions: Invalid value: ["v1"]: must have the storage version v2"#
                .to_string()
        ),
        "{e:?}"
    );
    assert!(e.contains(&r#"status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"#.to_string()), "{e:?}");
}

#[test]
fn malformed_crds_never_panic() {
    for c in [
        json!(null),
        json!({"spec": 1}),
        json!({"spec": {"versions": [1, {"schema": {"openAPIV3Schema": 5}}], "names": []}}),
        json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {"default": {"x": 1}, "items": 3}}}}}]}}),
    ] {
        let _ = validate_crd(&c, None);
        let _ = validate_crd(&c, Some(&c));
    }
}
