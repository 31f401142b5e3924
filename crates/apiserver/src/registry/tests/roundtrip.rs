//! The Go round trip of every served built-in kind through the catalogue: the tables it
//! follows know every kind, and what they add (the fields Go never omits) is known to
//! the kind's schema, so a round-tripped object is never pruned or warned about.

use serde_json::json;

use crate::registry::catalog::{definitions, Catalog};
use crate::registry::rest::{go_roundtrip, Mode};

#[test]
fn every_built_in_kind_round_trips_into_its_own_schema() {
    for def in Catalog::builtin().resources() {
        if def.custom.is_some() || def.kind == "CustomResourceDefinition" {
            continue;
        }
        let mut v = json!({"metadata": {"name": "x"}});
        assert!(
            go_roundtrip(def, &mut v, Mode::Storage),
            "{} {}: no Go type in the tables",
            def.group,
            def.kind
        );
        let unknown = definitions().prune_unknown(&def.definition(), &mut v);
        assert!(
            unknown.is_empty(),
            "{} {}: the round trip adds fields the schema does not know: {unknown:?}",
            def.group,
            def.kind
        );
    }
}

/// What a real kube-apiserver 1.36 answered is a fixed point of the round trip: nothing
/// is added, dropped or changed (the tables are newer than 1.36; this catches a field
/// they would write that 1.36 does not).
#[test]
fn recorded_answers_are_fixed_points() {
    for file in [
        "configmap",
        "cronjob",
        "daemonset",
        "deployment",
        "deployment-scale",
        "job",
        "lease",
        "namespace",
        "pdb",
        "pod",
        "replicaset",
        "service",
        "statefulset",
    ] {
        let want = crate::reference::fixture(&format!("objects/{file}.json"));
        let av = want["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let kind = want["kind"].as_str().unwrap_or_default();
        let mut got = want.clone();
        let known = match Catalog::builtin().by_kind(group, version, kind) {
            Some(def) => go_roundtrip(def, &mut got, Mode::Storage),
            None => {
                crate::machinery::protobuf::roundtrip::normalise(av, kind, &mut got, Mode::Storage)
            }
        };
        assert!(known, "{file}");
        assert_eq!(got, want, "{file}");
    }
}
