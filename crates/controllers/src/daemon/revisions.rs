//! A DaemonSet's ControllerRevisions, after upstream's `constructHistory`,
//! `controlledHistories`, `dedupCurHistories`, `snapshot`, `getPatch`, `Match` and
//! `cleanupHistory` (`pkg/controller/daemon/update.go`). The DaemonSet controller does
//! not use `pkg/controller/history`: its revisions are named `<ds>-<ComputeHash of the
//! template and collisionCount>`, labelled with the template's labels and
//! `controller-revision-hash`, annotated with the DaemonSet's annotations (so
//! `kubernetes.io/change-cause` reaches `kubectl rollout history`), and hold the
//! strategic merge patch `{"spec":{"template":{...,"$patch":"replace"}}}` that
//! `kubectl rollout undo` sends back to the DaemonSet.

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{json, Value};

use super::util::CONTROLLER_REVISION_HASH_LABEL;
use crate::deployment::util::hash::compute_hash;

/// Upstream `getPatch`: the DaemonSet's template as the strategic merge patch that
/// restores it, encoded as Go's `encoding/json` encodes a map (keys sorted, compact,
/// HTML characters escaped), so that kubectl's byte comparison agrees.
pub fn get_patch(ds: &DaemonSet) -> String {
    apimachinery::gofmt::json(&patch_value(ds))
}

/// The patch of [`get_patch`] as a JSON value.
pub fn patch_value(ds: &DaemonSet) -> Value {
    let full = serde_json::to_value(ds).unwrap_or(Value::Null);
    let mut template = full
        .get("spec")
        .and_then(|s| s.get("template"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Value::Object(m) = &mut template {
        m.insert("$patch".to_string(), Value::String("replace".to_string()));
    }
    json!({"spec": {"template": template}})
}

/// Upstream `Match`: whether the revision holds the DaemonSet's current template.
pub fn matches(ds: &DaemonSet, cr: &ControllerRevision) -> bool {
    apimachinery::gofmt::json(&cr.data.0) == get_patch(ds)
}

/// The hash of the DaemonSet's current template (upstream `ComputeHash` with the
/// collision count).
pub fn template_hash(ds: &DaemonSet) -> String {
    let collision = ds.status.as_ref().and_then(|s| s.collision_count);
    compute_hash(&ds.spec.template, collision)
}

/// Upstream `snapshot` without the create: the revision `revision` of the
/// DaemonSet's current template.
pub fn new_revision(ds: &DaemonSet, revision: i64) -> ControllerRevision {
    let hash = template_hash(ds);
    let mut labels = ds
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash.clone());
    let name = format!("{}-{hash}", ds.metadata.name.as_deref().unwrap_or(""));
    ControllerRevision {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
                ds,
            )]),
            ..Default::default()
        },
        data: RawExtension(patch_value(ds)),
        revision: Some(revision),
    }
}

/// The `controller-revision-hash` label of a revision (empty when it has none).
pub fn revision_hash(cr: &ControllerRevision) -> &str {
    cr.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
        .map(String::as_str)
        .unwrap_or("")
}

/// Upstream `maxRevision`: the highest revision number (0 for none).
pub fn max_revision<R: std::borrow::Borrow<ControllerRevision>>(revisions: &[R]) -> i64 {
    revisions
        .iter()
        .map(|r| r.borrow().revision.unwrap_or(0))
        .max()
        .unwrap_or(0)
        .max(0)
}

/// Upstream `dedupCurHistories`' choice: the revision to keep among several equal to
/// the current template (the highest revision; the last one on a tie).
pub fn keep_of<R: std::borrow::Borrow<ControllerRevision>>(revisions: &[R]) -> Option<usize> {
    let mut keep: Option<usize> = None;
    for (i, r) in revisions.iter().enumerate() {
        if keep.is_none_or(|k| {
            r.borrow().revision.unwrap_or(0) >= revisions[k].borrow().revision.unwrap_or(0)
        }) {
            keep = Some(i);
        }
    }
    keep
}

/// Upstream `cleanupHistory`'s choice: of the `old` revisions, which to delete so that
/// at most `limit` remain, oldest first, never one whose hash a pod still carries.
pub fn revisions_to_delete<'a>(
    old: &'a [ControllerRevision],
    limit: i32,
    live_hashes: &std::collections::HashSet<String>,
) -> Vec<&'a ControllerRevision> {
    let mut to_kill = old.len() as i64 - i64::from(limit);
    if to_kill <= 0 {
        return Vec::new();
    }
    let mut sorted: Vec<&ControllerRevision> = old.iter().collect();
    sorted.sort_by_key(|r| r.revision.unwrap_or(0));
    let mut out = Vec::new();
    for r in sorted {
        if to_kill <= 0 {
            break;
        }
        if live_hashes.contains(revision_hash(r)) {
            continue;
        }
        out.push(r);
        to_kill -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DaemonSetSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use std::collections::{BTreeMap, HashSet};

    fn ds(image: &str) -> DaemonSet {
        DaemonSet {
            metadata: ObjectMeta {
                name: Some("ds".into()),
                namespace: Some("default".into()),
                uid: Some("uid-ds".into()),
                annotations: Some(BTreeMap::from([(
                    "kubernetes.io/change-cause".to_string(),
                    "first <one> & only".to_string(),
                )])),
                ..Default::default()
            },
            spec: DaemonSetSpec {
                selector: LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "x".into())])),
                    ..Default::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(BTreeMap::from([("app".into(), "x".into())])),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "c".into(),
                            image: Some(image.into()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                },
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn patch_is_go_encoded_and_sorted() {
        let mut d = ds("img<1>");
        assert_eq!(
            get_patch(&d),
            r#"{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"image":"img\u003c1\u003e","name":"c"}]}}}}"#
        );
        let cr = new_revision(&d, 1);
        assert!(matches(&d, &cr));
        assert_eq!(
            cr.metadata.name.as_deref(),
            Some(&*format!("ds-{}", template_hash(&d)))
        );
        assert_eq!(revision_hash(&cr), template_hash(&d));
        assert_eq!(
            cr.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/change-cause"))
                .map(String::as_str),
            Some("first <one> & only")
        );
        d.spec.template.spec.as_mut().unwrap().containers[0].image = Some("other".into());
        assert!(!matches(&d, &cr));
        // a collision count changes the hash (and so the name), not the data
        let before = template_hash(&d);
        d.status = Some(k8s_openapi::api::apps::v1::DaemonSetStatus {
            collision_count: Some(1),
            ..Default::default()
        });
        assert_ne!(template_hash(&d), before);
    }

    fn rev(hash: &str, revision: i64) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(format!("ds-{hash}")),
                labels: Some(BTreeMap::from([(
                    CONTROLLER_REVISION_HASH_LABEL.to_string(),
                    hash.to_string(),
                )])),
                ..Default::default()
            },
            data: RawExtension(Value::Null),
            revision: Some(revision),
        }
    }

    #[test]
    fn cleanup_keeps_the_limit_newest_and_live_ones() {
        let old = vec![rev("a", 3), rev("b", 1), rev("c", 2), rev("d", 4)];
        let live: HashSet<String> = ["b".to_string()].into();
        let names = |v: Vec<&ControllerRevision>| {
            v.iter()
                .map(|r| revision_hash(r).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(revisions_to_delete(&old, 2, &live)), ["c", "a"]);
        assert_eq!(
            names(revisions_to_delete(&old, 4, &live)),
            Vec::<String>::new()
        );
        assert_eq!(names(revisions_to_delete(&old, 0, &live)), ["c", "a", "d"]);
        assert_eq!(max_revision(&old), 4);
        assert_eq!(max_revision::<ControllerRevision>(&[]), 0);
        assert_eq!(keep_of(&[rev("x", 2), rev("y", 5), rev("z", 5)]), Some(2));
    }
}
