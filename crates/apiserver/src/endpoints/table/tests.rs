//! Printers against what a real kube-apiserver 1.36 answered
//! (`tests/fixtures/kube-apiserver-1.36/tables`): column definitions exactly, and the
//! cells of the recorded objects (`objects/`), ages aside.

use serde_json::{json, Value};

use super::*;
use crate::registry::catalog::Catalog;

use crate::reference::fixture;

/// Table fixture, its resource, and the object fixtures of its rows.
const TABLES: &[(&str, &str, &str, &[&str])] = &[
    (
        "configmaps",
        "",
        "configmaps",
        &["configmap", "generatename"],
    ),
    ("cronjobs", "batch", "cronjobs", &["cronjob"]),
    ("daemonsets", "apps", "daemonsets", &["daemonset"]),
    ("deployments", "apps", "deployments", &["deployment"]),
    ("events", "", "events", &[]),
    ("jobs", "batch", "jobs", &["job"]),
    ("leases", "coordination.k8s.io", "leases", &["lease"]),
    ("namespaces", "", "namespaces", &["namespace"]),
    ("nodes", "", "nodes", &[]),
    (
        "poddisruptionbudgets",
        "policy",
        "poddisruptionbudgets",
        &["pdb"],
    ),
    ("pods", "", "pods", &["pod"]),
    ("replicasets", "apps", "replicasets", &["replicaset"]),
    ("services", "", "services", &["service"]),
    ("statefulsets", "apps", "statefulsets", &["statefulset"]),
];

fn def(group: &str, plural: &str) -> &'static ResourceDef {
    let c = Catalog::builtin();
    let version = c.versions(group)[0];
    c.lookup(group, version, plural)
        .unwrap_or_else(|| panic!("{group}/{plural} not in the catalogue"))
}

#[test]
fn column_definitions_match_kube_apiserver() {
    for (file, group, plural, _) in TABLES {
        let want = fixture(&format!("tables/{file}.json"));
        let got = Tabulator::new(def(group, plural), TableOptions::default()).columns();
        let want = &want["columnDefinitions"];
        let (got, want) = (
            got.as_array().expect("array"),
            want.as_array().expect("array"),
        );
        assert_eq!(got.len(), want.len(), "{file}: number of columns");
        for (g, w) in got.iter().zip(want) {
            for key in ["name", "type", "format", "priority", "description"] {
                assert_eq!(g[key], w[key], "{file}: column {} {key}", w["name"]);
            }
        }
    }
}

#[test]
fn cells_match_kube_apiserver() {
    for (file, group, plural, objects) in TABLES {
        let table = fixture(&format!("tables/{file}.json"));
        let age_col = table["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .position(|c| c["name"] == "Age");
        let t = Tabulator::new(def(group, plural), TableOptions::default());
        for object in *objects {
            let mut obj = fixture(&format!("objects/{object}.json"));
            let name = obj["metadata"]["name"].clone();
            let want = table["rows"]
                .as_array()
                .expect("rows")
                .iter()
                .find(|r| r["object"]["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("{file}: no row for {name}"));
            if *object == "namespace" {
                // recorded after the namespace was deleted
                obj["metadata"]["deletionTimestamp"] = json!("2026-11-29T09:59:50Z");
                obj["status"]["phase"] = json!("Terminating");
            }
            let row = t.row(&obj).expect("row");
            let mut got = row["cells"].as_array().expect("cells").clone();
            let mut want_cells = want["cells"].as_array().expect("cells").clone();
            if let Some(i) = age_col {
                got.remove(i);
                want_cells.remove(i);
            }
            assert_eq!(got, want_cells, "{file}: cells of {name}");
            assert_eq!(
                row["object"]["metadata"], obj["metadata"],
                "{file}: metadata"
            );
            assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
            assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
        }
    }
}

#[test]
fn default_table_for_kinds_without_printer() {
    let t = Tabulator::new(
        def("rbac.authorization.k8s.io", "roles"),
        TableOptions::default(),
    );
    let cols = t.columns();
    assert_eq!(cols[0]["name"], "Name");
    assert_eq!(cols[0]["format"], "name");
    assert_eq!(cols[1]["name"], "Created At");
    assert_eq!(cols[1]["type"], "date");
    assert_eq!(
        cols[1]["description"],
        fixture("tables/pods.json")["columnDefinitions"][4]["description"]
    );
    let row = t
        .row(&json!({"metadata": {"name": "r", "creationTimestamp": "2026-11-29T09:59:48Z"}}))
        .expect("row");
    assert_eq!(row["cells"], json!(["r", "2026-11-29T09:59:48Z"]));
    for (plural, group) in [
        ("limitranges", ""),
        ("clusterroles", "rbac.authorization.k8s.io"),
    ] {
        assert!(def(group, plural).strategy.printer().is_none(), "{plural}");
    }
}

#[test]
fn every_catalogue_kind_has_described_columns() {
    for d in Catalog::builtin().resources() {
        let t = Tabulator::new(d, TableOptions::default());
        for c in t.columns().as_array().expect("columns") {
            // upstream describes a RuntimeClass's handler with ObjectMeta's (absent)
            // `handler` documentation: an empty text
            if (d.plural, c["name"].as_str()) == ("runtimeclasses", Some("Handler")) {
                continue;
            }
            assert!(
                !c["description"].as_str().unwrap_or_default().is_empty(),
                "{}/{}: column {} has no description",
                d.group,
                d.plural,
                c["name"]
            );
        }
    }
}

#[test]
fn include_object_forms() {
    let pods = def("", "pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n", "resourceVersion": "7"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}});
    let row = |include, version| {
        Tabulator::new(pods, TableOptions { version, include })
            .row(&pod)
            .expect("row")
    };
    assert_eq!(row(IncludeObject::Object, MetaVersion::V1)["object"], pod);
    assert_eq!(
        row(IncludeObject::None, MetaVersion::V1)["object"],
        Value::Null
    );
    let partial = row(IncludeObject::Metadata, MetaVersion::V1beta1)["object"].clone();
    assert_eq!(
        partial,
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1", "metadata": pod["metadata"]})
    );
    // the initial-events-end bookmark keeps its metadata even with includeObject=None
    let mut bookmark = json!({"metadata": {"resourceVersion": "9", "annotations": {"k8s.io/initial-events-end": "true"}}});
    let t = Tabulator::new(
        pods,
        TableOptions {
            version: MetaVersion::V1,
            include: IncludeObject::None,
        },
    );
    assert_eq!(
        t.row(&bookmark).expect("row")["object"]["metadata"],
        bookmark["metadata"]
    );
    bookmark["metadata"]["annotations"] = json!({});
    assert_eq!(t.row(&bookmark).expect("row")["object"], Value::Null);
}

#[test]
fn tables_and_headers() {
    let t = Tabulator::new(def("", "configmaps"), TableOptions::default());
    let cm = json!({"metadata": {"name": "c", "resourceVersion": "12"}, "data": {"a": "1"}});
    let one = t.object_table(&cm, true).expect("table");
    assert_eq!(one["kind"], "Table");
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(one["metadata"], json!({"resourceVersion": "12"}));
    assert_eq!(one["columnDefinitions"][1]["name"], "Data");
    assert_eq!(one["rows"][0]["cells"][1], 1);
    let later = t.object_table(&cm, false).expect("table");
    assert_eq!(later["columnDefinitions"], Value::Null);

    // AGE is computed at printing time
    let created = json!({"metadata": {"name": "c", "creationTimestamp": "2026-11-29T09:00:00Z"}});
    let at = |now: &str| {
        Tabulator::new(def("", "configmaps"), TableOptions::default())
            .at(apimachinery::time::parse_time(now).expect("time"))
            .row(&created)
            .expect("row")["cells"][2]
            .clone()
    };
    assert_eq!(at("2026-11-29T09:00:45Z"), "45s");
    assert_eq!(at("2026-11-29T12:30:00Z"), "3h30m");
    assert_eq!(at("2026-12-02T10:00:00Z"), "3d1h");
}

#[test]
fn include_object_query() {
    let parse = |q: &str| TableOptions::default().with_query(&Query::parse(Some(q)));
    assert_eq!(parse("").expect("ok").include, IncludeObject::Metadata);
    assert_eq!(
        parse("includeObject=None").expect("ok").include,
        IncludeObject::None
    );
    assert_eq!(
        parse("includeObject=Object").expect("ok").include,
        IncludeObject::Object
    );
    let e = parse("includeObject=Everything").expect_err("bad value");
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"
    );
}

#[test]
fn scale_table() {
    let t = Tabulator::scale(def("apps", "deployments"), TableOptions::default());
    let cols = t.columns();
    assert_eq!(cols[0]["format"], "");
    assert_eq!(
        cols.as_array()
            .expect("columns")
            .iter()
            .map(|c| c["name"].clone())
            .collect::<Vec<_>>(),
        vec![
            json!("Name"),
            json!("Desired"),
            json!("Available"),
            json!("Age")
        ]
    );
    let scale = fixture("objects/deployment-scale.json");
    let row = t.row(&scale).expect("row");
    assert_eq!(
        row["cells"].as_array().expect("cells")[..3],
        [json!("web"), json!(2), json!(0)]
    );
}
