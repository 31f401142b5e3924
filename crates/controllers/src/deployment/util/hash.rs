//! Pod templates: semantic equality ignoring `pod-template-hash`, the hash itself
//! (upstream `controller.ComputeHash` and apimachinery's `rand.SafeEncodeString`), and
//! finding a Deployment's new and old ReplicaSets by template.

use std::borrow::Borrow;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::Serialize;
use serde_json::Value;

use super::*;

/// A value as JSON with nulls, empty strings, empty objects and empty arrays removed, so
/// that `None` and empty compare equal (as apimachinery's semantic equality does for nil
/// and empty maps and slices).
pub fn semantic_value<T: Serialize>(v: &T) -> Value {
    fn prune(v: &mut Value) -> bool {
        match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Object(m) => {
                m.retain(|_, x| !prune(x));
                m.is_empty()
            }
            Value::Array(a) => {
                for x in a.iter_mut() {
                    prune(x);
                }
                a.is_empty()
            }
            _ => false,
        }
    }
    let mut value = serde_json::to_value(v).unwrap_or(Value::Null);
    if prune(&mut value) {
        Value::Null
    } else {
        value
    }
}

fn without_hash(t: &PodTemplateSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: meta_without_hash(t),
        spec: t.spec.clone(),
    }
}

/// Whether two pod templates are semantically equal, ignoring `pod-template-hash`.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    TemplateMatcher::new(b).matches(a)
}

fn meta_without_hash(
    t: &PodTemplateSpec,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
    let mut meta = t.metadata.clone()?;
    if let Some(l) = meta.labels.as_mut() {
        l.remove(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY);
    }
    Some(meta)
}

/// One pod template compared with many ([`equal_ignore_hash`] against each): equal
/// values are equal semantically too, so most comparisons end with a typed `==`; only
/// unequal ones build the semantic JSON, this template's once.
pub struct TemplateMatcher<'a> {
    template: &'a PodTemplateSpec,
    meta: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    semantic: std::cell::OnceCell<Value>,
}

impl<'a> TemplateMatcher<'a> {
    /// A matcher of `template`.
    pub fn new(template: &'a PodTemplateSpec) -> Self {
        TemplateMatcher {
            template,
            meta: meta_without_hash(template),
            semantic: std::cell::OnceCell::new(),
        }
    }

    /// Whether `other` equals the template semantically, ignoring `pod-template-hash`.
    pub fn matches(&self, other: &PodTemplateSpec) -> bool {
        if other.spec == self.template.spec && meta_without_hash(other) == self.meta {
            return true;
        }
        let mine = self.semantic.get_or_init(|| {
            semantic_value(&PodTemplateSpec {
                metadata: self.meta.clone(),
                spec: self.template.spec.clone(),
            })
        });
        semantic_value(&without_hash(other)) == *mine
    }
}

const SAFE_ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// apimachinery's `rand.SafeEncodeString`: each character mapped into an alphabet without
/// vowels (no bad words) nor confusable characters.
pub fn safe_encode_string(s: &str) -> String {
    s.chars()
        .map(|c| SAFE_ALPHANUMS[(c as usize) % SAFE_ALPHANUMS.len()] as char)
        .collect()
}

/// The `pod-template-hash` of a template and collision count: FNV-1a (32 bit) over the
/// template's semantic JSON and, when set, the collision count (8 bytes, little endian),
/// its decimal value safe-encoded (upstream `controller.ComputeHash`; the values differ
/// from upstream's, which hashes Go's printed form of the struct).
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    let bytes = serde_json::to_vec(&semantic_value(template)).unwrap_or_default();
    let mut h = OFFSET;
    let mut feed = |b: u8| {
        h ^= u32::from(b);
        h = h.wrapping_mul(PRIME);
    };
    for b in bytes {
        feed(b);
    }
    if let Some(c) = collision_count {
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&(c as u32).to_le_bytes());
        for b in buf {
            feed(b);
        }
    }
    safe_encode_string(&h.to_string())
}

/// The new ReplicaSet: the oldest whose template equals the Deployment's.
pub fn find_new_replica_set<'a, T: Borrow<ReplicaSet>>(
    d: &Deployment,
    rss: &'a [T],
) -> Option<&'a T> {
    let matcher = TemplateMatcher::new(&d.spec.template);
    let empty = PodTemplateSpec::default();
    let mut sorted: Vec<&T> = rss.iter().collect();
    sorted.sort_by(|a, b| cmp_creation((*a).borrow(), (*b).borrow()));
    sorted.into_iter().find(|rs| {
        let rs: &ReplicaSet = (*rs).borrow();
        matcher.matches(rs.spec.template.as_ref().unwrap_or(&empty))
    })
}

/// The old ReplicaSets: (those with replicas, all), the new one excluded.
pub fn find_old_replica_sets<'a, T: Borrow<ReplicaSet>>(
    d: &Deployment,
    rss: &'a [T],
) -> (Vec<&'a T>, Vec<&'a T>) {
    let new = find_new_replica_set(d, rss).map(|n| n.borrow());
    let new_uid = new.and_then(|n| n.metadata.uid.clone());
    let new_name = new.map(|n| name(&n.metadata).to_string());
    let mut required = Vec::new();
    let mut all = Vec::new();
    for rs in rss {
        let r = rs.borrow();
        let is_new = match (&new_uid, &r.metadata.uid) {
            (Some(a), Some(b)) => a == b,
            _ => new_name.as_deref() == Some(name(&r.metadata)),
        };
        if is_new {
            continue;
        }
        all.push(rs);
        if rs_replicas(r) != 0 {
            required.push(rs);
        }
    }
    (required, all)
}

/// Put a ReplicaSet's template into the Deployment (without `pod-template-hash`).
pub fn set_from_replica_set_template(d: &mut Deployment, t: &PodTemplateSpec) {
    d.spec.template = without_hash(t);
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn set_image(d: &mut Deployment, container_name: &str) {
        if let Some(s) = d.spec.template.spec.as_mut() {
            s.containers[0].name = container_name.into();
        }
    }

    // Ported from upstream TestFindNewReplicaSet.
    #[test]
    fn find_new_replica_set_table() {
        let d = generate_deployment("nginx");
        let mut new_rs = generate_rs(&d, "new");
        new_rs
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), "hash".into());
        new_rs.metadata.creation_timestamp = Some(at(60));
        let mut new_dup = generate_rs(&d, "new-dup");
        new_dup
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(
                DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(),
                "different-hash".into(),
            );
        new_dup.metadata.creation_timestamp = Some(at(0));
        let mut old_d = generate_deployment("nginx");
        set_image(&mut old_d, "nginx-old-1");
        let old_rs = generate_rs(&old_d, "old");

        let got = |rss: Vec<ReplicaSet>| {
            find_new_replica_set(&d, &rss).map(|r| name(&r.metadata).to_string())
        };
        assert_eq!(
            got(vec![new_rs.clone(), old_rs.clone()]).as_deref(),
            Some("new"),
            "same template, different hash value"
        );
        assert_eq!(
            got(vec![new_rs, old_rs.clone(), new_dup]).as_deref(),
            Some("new-dup"),
            "the oldest of several"
        );
        assert_eq!(got(vec![old_rs]), None);
    }

    // Ported from upstream TestFindOldReplicaSets.
    #[test]
    fn find_old_replica_sets_table() {
        let d = generate_deployment("nginx");
        let mut new_rs = generate_rs(&d, "new");
        set_rs_replicas(&mut new_rs, 1);
        new_rs.metadata.creation_timestamp = Some(at(60));
        let mut new_dup = generate_rs(&d, "new-dup");
        new_dup.metadata.creation_timestamp = Some(at(0));
        let mut old_d = generate_deployment("nginx");
        set_image(&mut old_d, "nginx-old-1");
        let mut old_rs = generate_rs(&old_d, "old");
        old_rs.metadata.creation_timestamp = Some(at(-60));

        let names = |v: Vec<&ReplicaSet>| {
            let mut n: Vec<String> = v
                .into_iter()
                .map(|r| name(&r.metadata).to_string())
                .collect();
            n.sort();
            n
        };
        // (case, ReplicaSets, expected old ones, expected old ones with replicas)
        type Case<'a> = (&'a str, Vec<ReplicaSet>, Vec<&'a str>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            ("Get old ReplicaSets", vec![new_rs.clone(), old_rs.clone()], vec!["old"], vec![]),
            ("Get old ReplicaSets with no new ReplicaSet", vec![old_rs.clone()], vec!["old"], vec![]),
            (
                "Get old ReplicaSets with two new ReplicaSets, only the oldest new ReplicaSet is seen as new ReplicaSet",
                vec![old_rs.clone(), new_rs.clone(), new_dup],
                vec!["new", "old"],
                vec!["new"],
            ),
            ("Get empty old ReplicaSets", vec![new_rs], vec![], vec![]),
        ];
        for (case, rss, want_all, want_required) in cases {
            let (required, all) = find_old_replica_sets(&d, &rss);
            assert_eq!(names(all), want_all, "{case}");
            assert_eq!(
                names(required),
                want_required,
                "{case}: filtered by spec.replicas"
            );
        }
    }

    fn tmpl(
        name: &str,
        node: &str,
        annotations: &[(&str, &str)],
        lbls: &[(&str, &str)],
    ) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some(name.into()),
                annotations: Some(labels(annotations)),
                labels: Some(labels(lbls)),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
        }
    }

    // Ported from upstream TestEqualIgnoreHash.
    #[test]
    fn equal_ignore_hash_table() {
        let h = DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY;
        let cases = [
            (
                "Same spec, same labels",
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                true,
            ),
            (
                "Same spec, only pod-template-hash label value is different",
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                true,
            ),
            (
                "Same spec, the former doesn't have pod-template-hash label",
                tmpl("foo", "foo-node", &[], &[("something", "else")]),
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                true,
            ),
            (
                "Same spec, the label is different, and the pod-template-hash label value is the same",
                tmpl("foo", "foo-node", &[], &[(h, "value-1")]),
                tmpl(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                false,
            ),
            (
                "Different spec, same labels",
                tmpl(
                    "foo",
                    "foo-node",
                    &[("former", "value")],
                    &[(h, "value-1"), ("something", "else")],
                ),
                tmpl(
                    "foo",
                    "foo-node",
                    &[("latter", "value")],
                    &[(h, "value-1"), ("something", "else")],
                ),
                false,
            ),
            (
                "Different spec, different pod-template-hash label value",
                tmpl(
                    "foo-1",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                tmpl(
                    "foo-2",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                false,
            ),
            (
                "Different spec, the former doesn't have pod-template-hash label",
                tmpl("foo-1", "foo-node-1", &[], &[("something", "else")]),
                tmpl(
                    "foo-2",
                    "foo-node-2",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                false,
            ),
            (
                "Different spec, different labels",
                tmpl("foo", "foo-node-1", &[], &[("something", "else")]),
                tmpl("foo", "foo-node-2", &[], &[("nothing", "else")]),
                false,
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(equal_ignore_hash(&a, &b), want, "{name}");
            assert_eq!(equal_ignore_hash(&b, &a), want, "{name} (reverse order)");
            assert!(
                a.metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref())
                    .is_some(),
                "{name}: labels untouched"
            );
        }
        // nil and empty are the same, semantically
        let mut empty = tmpl("foo", "n", &[], &[]);
        let mut none = empty.clone();
        none.metadata.as_mut().expect("meta").labels = None;
        none.metadata.as_mut().expect("meta").annotations = None;
        assert!(equal_ignore_hash(&empty, &none));
        empty.spec.as_mut().expect("spec").containers = vec![];
        assert!(equal_ignore_hash(&empty, &none));
    }

    // Ported from upstream hash_test.go TestPodTemplateSpecHash: distinct templates get
    // distinct hashes; and the hash is stable, safe-encoded and moved by collisionCount.
    #[test]
    fn pod_template_hash() {
        let mut seen = HashSet::new();
        for i in 0..1000 {
            let mut d = generate_deployment("nginx");
            if let Some(s) = d.spec.template.spec.as_mut() {
                s.containers[0].image = Some(format!("nginx:{i}"));
            }
            let h = compute_hash(&template(&d), None);
            assert!(!h.is_empty() && h.len() <= 10);
            assert!(
                h.bytes()
                    .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
                "{h}"
            );
            assert!(seen.insert(h), "hash collision at {i}");
        }
        let t = template(&generate_deployment("nginx"));
        assert_eq!(
            compute_hash(&t, None),
            compute_hash(&t.clone(), None),
            "stable"
        );
        assert_eq!(compute_hash(&t, Some(0)), compute_hash(&t, Some(0)));
        assert_ne!(compute_hash(&t, None), compute_hash(&t, Some(1)));
        assert_ne!(compute_hash(&t, Some(1)), compute_hash(&t, Some(2)));
        // semantic: absent and empty give the same hash
        let mut empty_labels = t.clone();
        empty_labels.metadata.as_mut().expect("meta").annotations = Some(Default::default());
        assert_eq!(compute_hash(&t, None), compute_hash(&empty_labels, None));
        assert_eq!(safe_encode_string("0123456789").len(), 10);
    }

    #[test]
    fn safe_encoding_matches_upstream() {
        // '0' is 48: 48 % 27 = 21 -> '4'; '9' is 57: 57 % 27 = 3 -> 'f'
        assert_eq!(safe_encode_string("0"), "4");
        assert_eq!(safe_encode_string("9"), "f");
        assert_eq!(safe_encode_string("09"), "4f");
    }
}
