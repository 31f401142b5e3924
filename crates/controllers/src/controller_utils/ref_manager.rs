//! Claiming children, after upstream's `BaseControllerRefManager.ClaimObject` and
//! `PodControllerRefManager` (`pkg/controller/controller_ref_manager.go`).
//!
//! A controller owns the children whose controller reference (the owner reference with
//! `controller: true`) names its UID. On each sync it claims the children it sees:
//!
//! - owned by another controller: ignored;
//! - owned and matching the selector: kept (even while the controller is being deleted);
//! - owned but no longer matching: released (the reference is removed by a strategic
//!   merge patch), unless the controller is being deleted;
//! - orphaned and matching: adopted (a controller reference is added by a patch that
//!   also names the child's UID, so a re-created namesake is never adopted by
//!   mistake), unless the controller or the child is being deleted, or they live in
//!   different namespaces. Before the first adoption of a sync, `can_adopt` re-reads
//!   the controller from the API server: a controller deleted meanwhile adopts nothing.

use std::future::Future;
use std::sync::Arc;

use coxswain_runtime::controllerutil::get_controller_of;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde_json::json;

/// Who claims: the controlling object's type, name, namespace, UID and whether it is
/// being deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerIdentity {
    /// `apiVersion` of the controller (`apps/v1`).
    pub api_version: String,
    /// `kind` of the controller (`ReplicaSet`).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (empty for cluster-scoped controllers).
    pub namespace: String,
    /// Its UID.
    pub uid: String,
    /// Whether it has a deletion timestamp.
    pub deleting: bool,
}

impl ControllerIdentity {
    /// The identity of `obj`, a controller of kind `K`.
    pub fn of<K: Resource<DynamicType = ()>>(obj: &K) -> Self {
        Self::from_meta(&K::api_version(&()), &K::kind(&()), obj.meta())
    }

    /// The identity of a controller of `api_version`/`kind` with metadata `meta`.
    pub fn from_meta(api_version: &str, kind: &str, meta: &ObjectMeta) -> Self {
        ControllerIdentity {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
        }
    }

    /// Whether `child` is controlled by this controller (by UID).
    pub fn controls(&self, child: &ObjectMeta) -> bool {
        get_controller_of(child).is_some_and(|r| r.uid == self.uid)
    }
}

/// What claiming does with one child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimAction {
    /// Not ours and not to be adopted.
    Ignore,
    /// Ours already, and it matches.
    Keep,
    /// Ours but it no longer matches: remove our controller reference.
    Release,
    /// An orphan that matches: add our controller reference.
    Adopt,
}

/// What claiming does with `child`, whose labels `matches` the controller's selector.
pub fn claim_action(
    controller: &ControllerIdentity,
    child: &ObjectMeta,
    matches: bool,
) -> ClaimAction {
    if let Some(r) = get_controller_of(child) {
        if r.uid != controller.uid {
            return ClaimAction::Ignore;
        }
        if matches {
            return ClaimAction::Keep;
        }
        if controller.deleting {
            return ClaimAction::Ignore;
        }
        return ClaimAction::Release;
    }
    if controller.deleting || !matches || child.deletion_timestamp.is_some() {
        return ClaimAction::Ignore;
    }
    let child_ns = child.namespace.as_deref().unwrap_or("");
    if !controller.namespace.is_empty() && controller.namespace != child_ns {
        return ClaimAction::Ignore;
    }
    ClaimAction::Adopt
}

/// The strategic merge patch that makes `controller` the controller of the child with
/// UID `child_uid` (upstream `ownerRefControllerPatch`).
pub fn adopt_patch(controller: &ControllerIdentity, child_uid: &str) -> serde_json::Value {
    adopt_patch_with_finalizers(controller, child_uid, &[])
}

/// [`adopt_patch`] that also adds `finalizers` to the child (the Job controller's
/// tracking finalizer; upstream `ownerRefControllerPatch` with finalizers).
pub fn adopt_patch_with_finalizers(
    controller: &ControllerIdentity,
    child_uid: &str,
    finalizers: &[&str],
) -> serde_json::Value {
    let mut patch = json!({"metadata": {
        "ownerReferences": [{
            "apiVersion": controller.api_version,
            "kind": controller.kind,
            "name": controller.name,
            "uid": controller.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }],
        "uid": child_uid,
    }});
    if !finalizers.is_empty() {
        patch["metadata"]["finalizers"] = json!(finalizers);
    }
    patch
}

/// The strategic merge patch that removes the owner reference to `owner_uid` from the
/// child with UID `child_uid` (upstream `GenerateDeleteOwnerRefStrategicMergeBytes`).
pub fn release_patch(owner_uid: &str, child_uid: &str) -> serde_json::Value {
    json!({"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
        "uid": child_uid,
    }})
}

/// Why claiming failed for some children (the others were claimed or left alone).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct ClaimError(pub Vec<String>);

fn describe(pod: &Pod) -> String {
    format!(
        "Pod {}/{} ({})",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

/// Claim `pods` for `controller` (see the module documentation): returns the pods it
/// controls afterwards, adopted ones included.
///
/// `matches` tells whether a pod's labels match the controller's selector; `patch`
/// applies a strategic merge patch to a pod; `can_adopt` is called at most once, before
/// the first adoption, and adoption stops if it fails. A child that is gone (404) is
/// skipped; a release refused as invalid (the reference or the pod changed meanwhile)
/// is ignored, as upstream.
pub async fn claim_pods<P, PF, A, AF>(
    controller: &ControllerIdentity,
    pods: Vec<Arc<Pod>>,
    matches: impl Fn(&Pod) -> bool,
    patch: P,
    can_adopt: A,
) -> Result<Vec<Arc<Pod>>, ClaimError>
where
    P: Fn(Arc<Pod>, serde_json::Value) -> PF,
    PF: Future<Output = Result<(), kube::Error>>,
    A: FnOnce() -> AF,
    AF: Future<Output = Result<(), String>>,
{
    claim_pods_with_finalizers(controller, pods, matches, patch, can_adopt, &[]).await
}

/// [`claim_pods`] whose adoptions also add `finalizers` to the adopted pods (upstream
/// `NewPodControllerRefManager` with finalizers).
pub async fn claim_pods_with_finalizers<P, PF, A, AF>(
    controller: &ControllerIdentity,
    pods: Vec<Arc<Pod>>,
    matches: impl Fn(&Pod) -> bool,
    patch: P,
    can_adopt: A,
    finalizers: &[&str],
) -> Result<Vec<Arc<Pod>>, ClaimError>
where
    P: Fn(Arc<Pod>, serde_json::Value) -> PF,
    PF: Future<Output = Result<(), kube::Error>>,
    A: FnOnce() -> AF,
    AF: Future<Output = Result<(), String>>,
{
    let mut claimed = Vec::new();
    let mut errors = Vec::new();
    let mut can_adopt = Some(can_adopt);
    let mut adoptable: Option<Result<(), String>> = None;
    for pod in pods {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        match claim_action(controller, &pod.metadata, matches(&pod)) {
            ClaimAction::Ignore => {}
            ClaimAction::Keep => claimed.push(pod),
            ClaimAction::Release => {
                let what = describe(&pod);
                match patch(pod, release_patch(&controller.uid, &uid)).await {
                    Ok(()) => tracing::debug!(controller = %controller.name, "released {what}"),
                    Err(kube::Error::Api(s)) if s.is_not_found() || s.is_invalid() => {}
                    Err(e) => errors.push(format!("releasing {what}: {e}")),
                }
            }
            ClaimAction::Adopt => {
                if adoptable.is_none() {
                    adoptable = Some(match can_adopt.take() {
                        Some(check) => check().await,
                        None => Ok(()),
                    });
                }
                if let Some(Err(why)) = &adoptable {
                    errors.push(format!("can't adopt {}: {why}", describe(&pod)));
                    continue;
                }
                let what = describe(&pod);
                match patch(
                    pod.clone(),
                    adopt_patch_with_finalizers(controller, &uid, finalizers),
                )
                .await
                {
                    Ok(()) => {
                        tracing::debug!(controller = %controller.name, "adopted {what}");
                        claimed.push(pod);
                    }
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    Err(e) => errors.push(format!("adopting {what}: {e}")),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(claimed)
    } else {
        Err(ClaimError(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    fn controller(uid: &str, deleting: bool) -> ControllerIdentity {
        ControllerIdentity {
            api_version: "v1".into(),
            kind: "ReplicationController".into(),
            name: "rc".into(),
            namespace: "default".into(),
            uid: uid.into(),
            deleting,
        }
    }

    fn pod(name: &str, label: &str, owner: Option<&str>, deleting: bool) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some(format!("uid-{name}"));
        p.metadata.labels = Some(BTreeMap::from([("type".to_string(), label.to_string())]));
        p.metadata.owner_references = owner.map(|uid| {
            vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "extensions/v1beta1".into(),
                    kind: "Fake".into(),
                    name: "Fake".into(),
                    uid: uid.into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                },
            ]
        });
        if deleting {
            p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        }
        Arc::new(p)
    }

    fn production(p: &Pod) -> bool {
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("type"))
            .map(String::as_str)
            == Some("production")
    }

    async fn claim(
        c: &ControllerIdentity,
        pods: Vec<Arc<Pod>>,
    ) -> (Vec<String>, Vec<(String, serde_json::Value)>) {
        let patches = Mutex::new(Vec::new());
        let claimed = claim_pods(
            c,
            pods,
            production,
            |p: Arc<Pod>, body| {
                patches
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((p.metadata.name.clone().unwrap_or_default(), body));
                async { Ok(()) }
            },
            || async { Ok(()) },
        )
        .await
        .expect("no error");
        let names = claimed
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        (
            names,
            patches.into_inner().unwrap_or_else(|e| e.into_inner()),
        )
    }

    // Upstream TestClaimPods (pkg/controller/controller_ref_manager_test.go).
    #[tokio::test]
    async fn claim_pods_table() {
        let uid = "123";
        // "Claim pods with correct label"
        let (claimed, patches) = claim(
            &controller(uid, false),
            vec![
                pod("pod1", "production", None, false),
                pod("pod2", "testing", None, false),
            ],
        )
        .await;
        assert_eq!(claimed, ["pod1"]);
        assert_eq!(
            patches,
            [(
                "pod1".to_string(),
                adopt_patch(&controller(uid, false), "uid-pod1")
            )]
        );
        // "Controller marked for deletion can not claim pods"
        let (claimed, patches) = claim(
            &controller(uid, true),
            vec![
                pod("pod1", "production", None, false),
                pod("pod2", "production", None, false),
            ],
        )
        .await;
        assert!(claimed.is_empty() && patches.is_empty());
        // "Controller marked for deletion can not claim new pods"
        let (claimed, patches) = claim(
            &controller(uid, true),
            vec![
                pod("pod1", "production", Some(uid), false),
                pod("pod2", "production", None, false),
            ],
        )
        .await;
        assert_eq!(claimed, ["pod1"]);
        assert!(patches.is_empty());
        // "Controller can not claim pods owned by another controller"
        let (claimed, patches) = claim(
            &controller(uid, false),
            vec![
                pod("pod1", "production", Some(uid), false),
                pod("pod2", "production", Some("AAAAA"), false),
            ],
        )
        .await;
        assert_eq!(claimed, ["pod1"]);
        assert!(patches.is_empty());
        // "Controller releases claimed pods when selector doesn't match"
        let (claimed, patches) = claim(
            &controller(uid, false),
            vec![
                pod("pod1", "production", Some(uid), false),
                pod("pod2", "testing", Some(uid), false),
            ],
        )
        .await;
        assert_eq!(claimed, ["pod1"]);
        assert_eq!(
            patches,
            [("pod2".to_string(), release_patch(uid, "uid-pod2"))]
        );
        // "Controller does not claim orphaned pods marked for deletion"
        let (claimed, patches) = claim(
            &controller(uid, false),
            vec![
                pod("pod1", "production", Some(uid), true),
                pod("pod2", "production", None, true),
            ],
        )
        .await;
        assert_eq!(claimed, ["pod1"]);
        assert!(patches.is_empty());
    }

    #[tokio::test]
    async fn adoption_rechecks_the_controller_once_and_stops_when_it_is_gone() {
        let c = controller("123", false);
        let checks = Mutex::new(0);
        let patched = Mutex::new(0);
        let result = claim_pods(
            &c,
            vec![
                pod("a", "production", None, false),
                pod("b", "production", None, false),
                pod("c", "production", Some("123"), false),
            ],
            production,
            |_, _| {
                *patched.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                async { Ok(()) }
            },
            || {
                *checks.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                async { Err("original ReplicationController default/rc is gone".to_string()) }
            },
        )
        .await;
        let err = result.expect_err("adoption refused");
        assert_eq!(err.0.len(), 2);
        assert!(err.to_string().contains("is gone"));
        assert_eq!(*checks.lock().unwrap_or_else(|e| e.into_inner()), 1);
        assert_eq!(*patched.lock().unwrap_or_else(|e| e.into_inner()), 0);
    }

    #[test]
    fn other_namespace_is_never_adopted() {
        let c = controller("123", false);
        let mut p = (*pod("a", "production", None, false)).clone();
        p.metadata.namespace = Some("other".into());
        assert_eq!(claim_action(&c, &p.metadata, true), ClaimAction::Ignore);
        p.metadata.namespace = Some("default".into());
        assert_eq!(claim_action(&c, &p.metadata, true), ClaimAction::Adopt);
    }
}
