//! The cases of controller-runtime's `controllerutil_test.go` (owner references and
//! finalizers), with an `apps/v1` Deployment as the owner where upstream uses an
//! `extensions/v1beta1` one, and `apps/v1beta2` as "another version of the same group".
//! Upstream's "not a runtime.Object" and "type missing from the scheme" cases cannot be
//! written in Rust (the owner's type carries its kind); the owner without a uid takes
//! their place.

use super::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{PersistentVolume, Pod};

fn dep(name: &str, uid: &str) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.name = Some(name.into());
    d.metadata.uid = Some(uid.into());
    d
}

fn rs() -> ReplicaSet {
    let mut r = ReplicaSet::default();
    r.metadata.name = Some("foo".into());
    r
}

fn r(
    name: &str,
    api_version: &str,
    uid: &str,
    controller: Option<bool>,
    bod: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: "Deployment".into(),
        name: name.into(),
        uid: uid.into(),
        controller,
        block_owner_deletion: bod,
    }
}

fn refs(o: &impl Resource) -> Vec<OwnerReference> {
    o.meta().owner_references.clone().unwrap_or_default()
}

const T: Option<bool> = Some(true);
const F: Option<bool> = Some(false);

#[test]
fn set_owner_reference_cases() {
    // O1: a plain reference, no controller or blockOwnerDeletion
    let mut o = rs();
    set_owner_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", None, None)]);
    // O2: with blockOwnerDeletion
    let mut o = rs();
    set_owner_reference_with(
        &dep("foo", "foo-uid"),
        &mut o,
        &[OwnerRefOption::BlockOwnerDeletion(true)],
    )
    .unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", None, T)]);
    // O3: setting the same reference again changes nothing
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "apps/v1", "foo-uid", None, None)]);
    set_owner_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", None, None)]);
    // O4: another version of the same group is the same owner: replaced, not appended
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "apps/v1beta2", "foo-uid-1", None, None)]);
    set_owner_reference(&dep("foo", "foo-uid-2"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid-2", None, None)]);
    // O5: and removing it leaves none
    remove_owner_reference(&dep("foo", "foo-uid-2"), &mut o).unwrap();
    assert!(refs(&o).is_empty());
}

#[test]
fn remove_and_has_cases() {
    // O6: a controller reference is removed by remove_owner_reference too
    let mut o = rs();
    set_controller_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, T)]);
    remove_owner_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert!(refs(&o).is_empty());
    // O7: nothing to remove
    let mut o = rs();
    assert_eq!(
        remove_owner_reference(&dep("foo", "foo-uid"), &mut o),
        Err(OwnerRefError::NoOwnerReferences {
            kind: "ReplicaSet".into()
        })
    );
    // O10: a reference to another owner stays
    let mut o = rs();
    set_owner_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert!(matches!(
        remove_owner_reference(&dep("bar", "bar-uid-3"), &mut o),
        Err(OwnerRefError::NotOwned { .. })
    ));
    assert_eq!(refs(&o).len(), 1);
    // O11, O12
    let mut c = rs();
    set_controller_reference(&dep("foo", "foo-uid"), &mut c).unwrap();
    assert!(has_controller_reference(&c));
    assert!(!has_controller_reference(&o));
    // O13: no controller reference to remove
    assert_eq!(
        remove_controller_reference(&dep("foo", "foo-uid"), &mut o),
        Err(OwnerRefError::NoControllerReference {
            kind: "ReplicaSet".into()
        })
    );
    // O14: the reference to dep2 is not the controller one
    set_owner_reference(&dep("foo-2", "foo-uid-42"), &mut c).unwrap();
    assert!(matches!(
        remove_controller_reference(&dep("foo-2", "foo-uid-42"), &mut c),
        Err(OwnerRefError::NotController { .. })
    ));
    assert_eq!(refs(&c).len(), 2);
    // O15
    let mut c = rs();
    set_controller_reference(&dep("foo", "foo-uid"), &mut c).unwrap();
    remove_controller_reference(&dep("foo", "foo-uid"), &mut c).unwrap();
    assert!(refs(&c).is_empty());
    // O16, O17
    assert!(has_owner_reference(&refs(&o), &dep("foo", "other-uid")));
    assert!(!has_owner_reference(&refs(&rs()), &dep("foo", "foo-uid")));
}

#[test]
fn set_controller_reference_cases() {
    // C1
    let mut o = rs();
    set_controller_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, T)]);
    // C2/C3 in Rust: an owner that was never read from the server
    let mut o = rs();
    assert_eq!(
        set_controller_reference(&dep("foo", ""), &mut o),
        Err(OwnerRefError::OwnerWithoutUid {
            kind: "Deployment".into(),
            name: "foo".into()
        })
    );
    // C4: already controlled by another Deployment; the object is unchanged
    let mut o = rs();
    o.metadata.namespace = Some("default".into());
    let before = vec![r("bar", "apps/v1", "bar-uid", T, T)];
    o.metadata.owner_references = Some(before.clone());
    let mut owner = dep("foo", "foo-uid");
    owner.metadata.namespace = Some("default".into());
    let err = set_controller_reference(&owner, &mut o).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Object default/foo is already owned by another Deployment controller bar"
    );
    assert_eq!(refs(&o), before);
    // C5: a non-controller reference to the same owner becomes the controller reference
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "apps/v1", "foo-uid", F, T)]);
    set_controller_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, T)]);
    // C6: the same owner in another version of the group is not "another controller"
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "apps/v1beta2", "foo-uid", T, T)]);
    set_controller_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, T)]);
    // C7: across namespaces
    let mut o = rs();
    o.metadata.namespace = Some("namespace1".into());
    let mut owner = dep("foo", "foo-uid");
    owner.metadata.namespace = Some("namespace2".into());
    assert_eq!(
        set_controller_reference(&owner, &mut o).unwrap_err().to_string(),
        "cross-namespace owner references are disallowed, owner's namespace namespace2, obj's namespace namespace1"
    );
    // C8: a namespaced owner of a cluster-scoped object
    let mut pv = PersistentVolume::default();
    pv.metadata.name = Some("pv".into());
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.uid = Some("pod-uid".into());
    assert_eq!(
        set_controller_reference(&pod, &mut pv),
        Err(OwnerRefError::ClusterScopedObject {
            owner_namespace: "default".into()
        })
    );
    // C9: version and controller flag both updated
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "apps/v1beta2", "foo-uid", F, T)]);
    set_controller_reference(&dep("foo", "foo-uid"), &mut o).unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, T)]);
    // C10: blockOwnerDeletion false is kept as false, not dropped
    let mut o = rs();
    set_controller_reference_with(
        &dep("foo", "foo-uid"),
        &mut o,
        &[OwnerRefOption::BlockOwnerDeletion(false)],
    )
    .unwrap();
    assert_eq!(refs(&o), [r("foo", "apps/v1", "foo-uid", T, F)]);
}

#[test]
fn set_controller_reference_derived_cases() {
    // a cluster-scoped owner may own a namespaced object
    let mut node = k8s_openapi::api::core::v1::Node::default();
    node.metadata.name = Some("n1".into());
    node.metadata.uid = Some("node-uid".into());
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("default".into());
    set_controller_reference(&node, &mut pod).unwrap();
    assert_eq!(refs(&pod)[0].api_version, "v1");
    assert!(is_controlled_by(&pod, &node));
    // a second owner that is not the controller is appended
    let mut o = rs();
    set_controller_reference(&dep("a", "a-uid"), &mut o).unwrap();
    set_owner_reference(&dep("b", "b-uid"), &mut o).unwrap();
    assert_eq!(refs(&o).len(), 2);
    assert!(is_controlled_by(&o, &dep("a", "a-uid")));
    assert!(!is_controlled_by(&o, &dep("a", "other-uid")));
    // set_owner_reference over a controller reference drops the controller flag
    set_owner_reference(&dep("a", "a-uid"), &mut o).unwrap();
    assert!(!has_controller_reference(&o));
    // a controller reference whose apiVersion does not parse names no owner: already owned
    let mut o = rs();
    o.metadata.owner_references = Some(vec![r("foo", "a/b/c", "x", T, T)]);
    assert!(matches!(
        set_controller_reference(&dep("foo", "foo-uid"), &mut o),
        Err(OwnerRefError::AlreadyOwned { .. })
    ));
    assert_eq!(
        get_controller_of(&o.metadata).map(|r| r.uid.as_str()),
        Some("x")
    );
}

#[test]
fn refer_same_object_compares_group_kind_and_name() {
    let a = r("foo", "apps/v1", "1", None, None);
    assert!(refer_same_object(&a, &r("foo", "apps/v1beta1", "2", T, T)));
    assert!(!refer_same_object(
        &a,
        &r("bar", "apps/v1", "1", None, None)
    ));
    assert!(!refer_same_object(&a, &r("foo", "v1", "1", None, None)));
    assert!(refer_same_object(
        &r("foo", "v1", "1", None, None),
        &r("foo", "", "1", None, None)
    ));
    assert!(!refer_same_object(
        &r("foo", "a/b/c", "1", None, None),
        &r("foo", "a/b/c", "1", None, None)
    ));
}

#[test]
fn finalizer_cases() {
    const FIN: &str = "foo.bar.baz";
    const FIN1: &str = "foo.bar.baz1";
    let mut d = dep("d", "u");
    // F1, F2
    assert!(add_finalizer(&mut d, FIN));
    assert_eq!(
        d.metadata.finalizers.as_deref(),
        Some(&[FIN.to_string()][..])
    );
    assert!(!add_finalizer(&mut d, FIN));
    // F3, F4
    assert!(!remove_finalizer(&mut d, FIN1));
    assert!(contains_finalizer(&d, FIN));
    assert!(remove_finalizer(&mut d, FIN));
    assert_eq!(d.metadata.finalizers.as_deref(), Some(&[][..]));
    // F5: every copy goes
    d.metadata.finalizers = Some(vec![FIN.into(), FIN.into()]);
    assert!(remove_finalizer(&mut d, FIN));
    assert!(d.metadata.finalizers.as_ref().unwrap().is_empty());
    // F6, F7
    add_finalizer(&mut d, FIN);
    assert!(contains_finalizer(&d, FIN));
    remove_finalizer(&mut d, FIN);
    assert!(!contains_finalizer(&d, FIN));
    // the others keep their order
    d.metadata.finalizers = Some(vec!["a".into(), FIN.into(), "b".into(), FIN.into()]);
    remove_finalizer(&mut d, FIN);
    assert_eq!(
        d.metadata.finalizers,
        Some(vec!["a".to_string(), "b".to_string()])
    );
    // nothing to remove from an object without finalizers
    let mut e = dep("e", "u");
    assert!(!remove_finalizer(&mut e, FIN));
    assert!(e.metadata.finalizers.is_none());
}

#[test]
fn operation_results_print_as_upstream() {
    let all = [
        OperationResult::Unchanged,
        OperationResult::Created,
        OperationResult::Updated,
        OperationResult::UpdatedStatus,
        OperationResult::UpdatedStatusOnly,
    ];
    let names: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "unchanged",
            "created",
            "updated",
            "updatedStatus",
            "updatedStatusOnly"
        ]
    );
}
