//! Creating and deleting a controller's pods, after upstream's `RealPodControl`,
//! `GetPodFromTemplate` and `slowStartBatch` (`pkg/controller/controller_utils.go`,
//! `pkg/controller/replicaset/replica_set.go`).
//!
//! A pod made from a template gets the template's labels, annotations, finalizers and
//! spec, the controller reference of its owner and the name prefix `<owner name>-`.
//! Every creation and deletion is reported as an event about the owner
//! (`SuccessfulCreate`, `FailedCreate`, `SuccessfulDelete`, `FailedDelete`), except
//! creations refused because the namespace is terminating.

use std::future::Future;

use coxswain_runtime::client::Client;
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, Patch, PatchParams};

/// Most pods a controller creates or deletes in one sync (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// Size of the first batch of [`slow_start_batch`] (upstream `SlowStartInitialBatchSize`).
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// Event reason (and condition reason) when a pod could not be created.
pub const FAILED_CREATE_POD_REASON: &str = "FailedCreate";
/// Event reason when a pod was created.
pub const SUCCESSFUL_CREATE_POD_REASON: &str = "SuccessfulCreate";
/// Event reason (and condition reason) when a pod could not be deleted.
pub const FAILED_DELETE_POD_REASON: &str = "FailedDelete";
/// Event reason when a pod was deleted.
pub const SUCCESSFUL_DELETE_POD_REASON: &str = "SuccessfulDelete";

/// The status cause of a creation refused because its namespace is being deleted.
const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Why a pod could not be created or deleted.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// The request was not sent: the pod or the controller reference is invalid.
    #[error("{0}")]
    Invalid(String),
    /// The API server refused the request or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl PodControlError {
    /// Whether the API server refused a creation because the namespace is terminating
    /// (a controller treats that as nothing to do).
    pub fn is_namespace_terminating(&self) -> bool {
        matches!(self, PodControlError::Api(kube::Error::Api(s))
            if s.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE)))
    }
}

/// Checks upstream's `validateControllerRef`: apiVersion, kind, `controller` and
/// `blockOwnerDeletion` must be set.
pub fn validate_controller_ref(r: &OwnerReference) -> Result<(), String> {
    if r.api_version.is_empty() {
        return Err("controllerRef has empty APIVersion".into());
    }
    if r.kind.is_empty() {
        return Err("controllerRef has empty Kind".into());
    }
    if r.controller != Some(true) {
        return Err("controllerRef.Controller is not set to true".into());
    }
    if r.block_owner_deletion != Some(true) {
        return Err("controllerRef.BlockOwnerDeletion is not set".into());
    }
    Ok(())
}

/// The `generateName` of pods of the controller named `name`: `<name>-`, or `name`
/// alone when the dash would make an invalid prefix.
pub fn pods_prefix(name: &str) -> String {
    // a trailing dash is fine in a prefix: validate it as if it were a letter
    let masked = format!("{name}a");
    if apimachinery::names::is_dns1123_subdomain(&masked).is_empty() {
        format!("{name}-")
    } else {
        name.to_string()
    }
}

/// The pod a controller named `parent_name` creates from `template` (upstream
/// `GetPodFromTemplate`): labels, annotations, finalizers and spec of the template,
/// `generateName` from [`pods_prefix`], and `controller_ref` as its owner.
pub fn get_pod_from_template(
    template: &PodTemplateSpec,
    parent_name: &str,
    controller_ref: Option<OwnerReference>,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            generate_name: Some(pods_prefix(parent_name)),
            owner_references: controller_ref.map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Call `f` `count` times: one call first, then batches that double in size as long
/// as every call of a batch succeeds (calls within a batch run concurrently). The
/// first failing batch ends it. Returns how many calls succeeded and the first error.
///
/// This keeps a controller that is bound to fail (a quota, a bad template) from
/// sending hundreds of doomed requests and events.
pub async fn slow_start_batch<F, Fut, E>(
    count: usize,
    initial_batch_size: usize,
    f: F,
) -> (usize, Option<E>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = remaining.min(initial_batch_size.max(1));
    while batch > 0 {
        let results = futures::future::join_all((0..batch).map(|_| f())).await;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(()) => successes += 1,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if first_err.is_some() {
            return (successes, first_err);
        }
        remaining -= batch;
        batch = (2 * batch).min(remaining);
    }
    (successes, None)
}

/// Creates, deletes and patches a controller's pods, with events about the controller
/// (upstream `RealPodControl`).
#[derive(Clone)]
pub struct PodControl {
    client: Client,
    recorder: EventRecorder,
}

impl PodControl {
    /// Pod writes through `client`, events through `recorder`.
    pub fn new(client: Client, recorder: EventRecorder) -> Self {
        PodControl { client, recorder }
    }

    /// Create one pod from `template` in `namespace` for the controller `controller`
    /// (named `parent_name`, owner reference `controller_ref`); records
    /// `SuccessfulCreate` or `FailedCreate` about the controller.
    pub async fn create_pod(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        controller: &ObjectReference,
        parent_name: &str,
        controller_ref: &OwnerReference,
    ) -> Result<Pod, PodControlError> {
        self.create_pod_with_generate_name(
            namespace,
            template,
            controller,
            parent_name,
            controller_ref,
            "",
        )
        .await
    }

    /// [`PodControl::create_pod`] with `generate_name` as the name prefix instead of
    /// `<parent_name>-` when it is not empty (upstream `CreatePodsWithGenerateName`; the
    /// Job controller names the pods of an index `<job>-<index>-`).
    pub async fn create_pod_with_generate_name(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        controller: &ObjectReference,
        parent_name: &str,
        controller_ref: &OwnerReference,
        generate_name: &str,
    ) -> Result<Pod, PodControlError> {
        validate_controller_ref(controller_ref).map_err(PodControlError::Invalid)?;
        let mut pod = get_pod_from_template(template, parent_name, Some(controller_ref.clone()));
        if !generate_name.is_empty() {
            pod.metadata.generate_name = Some(generate_name.to_string());
        }
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            return Err(PodControlError::Invalid(
                "unable to create pods, no labels".into(),
            ));
        }
        pod.metadata.namespace = Some(namespace.to_string());
        match self.client.create(&pod).await {
            Ok(created) => {
                let name = created.metadata.name.as_deref().unwrap_or_default();
                tracing::debug!(controller = ?controller.name, pod = name, "created pod");
                self.recorder.event(
                    controller,
                    Some(&object_reference(&created)),
                    EventType::Normal,
                    SUCCESSFUL_CREATE_POD_REASON,
                    "Create",
                    &format!("Created pod: {name}"),
                );
                Ok(created)
            }
            Err(e) => {
                let err = PodControlError::Api(e);
                if !err.is_namespace_terminating() {
                    self.recorder.event(
                        controller,
                        None,
                        EventType::Warning,
                        FAILED_CREATE_POD_REASON,
                        "Create",
                        &format!("Error creating: {err}"),
                    );
                }
                Err(err)
            }
        }
    }

    /// Delete the pod `namespace/name` of the controller `controller`; `Ok(false)` when
    /// it was gone already. Records `SuccessfulDelete` or `FailedDelete`.
    pub async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        controller: &ObjectReference,
    ) -> Result<bool, PodControlError> {
        let key = ObjectKey::namespaced(namespace, name);
        match self
            .client
            .delete::<Pod>(&key, &DeleteParams::default())
            .await
        {
            Ok(true) => {
                self.recorder.event(
                    controller,
                    None,
                    EventType::Normal,
                    SUCCESSFUL_DELETE_POD_REASON,
                    "Delete",
                    &format!("Deleted pod: {name}"),
                );
                Ok(true)
            }
            Ok(false) => {
                tracing::debug!(pod = %key, "pod has already been deleted");
                Ok(false)
            }
            Err(e) => {
                self.recorder.event(
                    controller,
                    None,
                    EventType::Warning,
                    FAILED_DELETE_POD_REASON,
                    "Delete",
                    &format!("Error deleting: {e}"),
                );
                Err(PodControlError::Api(e))
            }
        }
    }

    /// Apply a strategic merge patch to the pod `namespace/name`.
    pub async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), kube::Error> {
        let key = ObjectKey::namespaced(namespace, name);
        self.client
            .patch::<Pod, _>(&key, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // Upstream TestSlowStartBatch (pkg/controller/replicaset/replica_set_test.go).
    #[tokio::test]
    async fn slow_start_batch_table() {
        // (count, calls that succeed, expected successes, expects an error, expected calls)
        let cases = [
            (10, 0, 0, true, 1),     // all fail: the first batch of one stops it
            (10, 10, 10, false, 10), // all succeed: 1 + 2 + 4 + 3
            (10, 5, 5, true, 7),     // some succeed: 1 + 2 + 4, the third batch fails
            (0, 0, 0, false, 0),
        ];
        for (count, limit, want_ok, want_err, want_calls) in cases {
            let calls = AtomicUsize::new(0);
            let (ok, err) = slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, || {
                let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if n > limit {
                        Err("fake error")
                    } else {
                        Ok(())
                    }
                }
            })
            .await;
            assert_eq!(ok, want_ok, "count {count} limit {limit}");
            assert_eq!(err.is_some(), want_err, "count {count} limit {limit}");
            assert_eq!(
                calls.load(Ordering::SeqCst),
                want_calls,
                "count {count} limit {limit}"
            );
        }
    }

    #[tokio::test]
    async fn slow_start_batch_sizes_double() {
        let sizes = std::sync::Mutex::new(Vec::new());
        let in_flight = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(500, 1, || {
            in_flight.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::task::yield_now().await;
                let n = in_flight.swap(0, Ordering::SeqCst);
                if n > 0 {
                    sizes.lock().unwrap_or_else(|e| e.into_inner()).push(n);
                }
                Ok::<(), ()>(())
            }
        })
        .await;
        assert_eq!((ok, err), (500, None));
        let sizes = sizes.into_inner().unwrap_or_else(|e| e.into_inner());
        assert_eq!(sizes, [1, 2, 4, 8, 16, 32, 64, 128, 245]);
    }

    fn template() -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([
                    ("name".into(), "foo".into()),
                    ("type".into(), "production".into()),
                ])),
                annotations: Some(BTreeMap::from([("a".into(), "b".into())])),
                finalizers: Some(vec!["example.com/keep".into()]),
                name: Some("ignored".into()),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("foo/bar".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        }
    }

    // After upstream TestCreatePodsWithGenerateName and TestGetPodFromTemplate.
    #[test]
    fn pod_from_template() {
        let owner = k8s_openapi::api::core::v1::ReplicationController {
            metadata: ObjectMeta {
                name: Some("foobar".into()),
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let r = coxswain_runtime::controllerutil::new_controller_ref(&owner);
        assert_eq!(validate_controller_ref(&r), Ok(()));
        let pod = get_pod_from_template(&template(), "foobar", Some(r.clone()));
        let t = template();
        let tm = t.metadata.clone().unwrap_or_default();
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("foobar-"));
        assert_eq!(pod.metadata.name, None);
        assert_eq!(pod.metadata.labels, tm.labels);
        assert_eq!(pod.metadata.annotations, tm.annotations);
        assert_eq!(pod.metadata.finalizers, tm.finalizers);
        assert_eq!(pod.metadata.owner_references, Some(vec![r]));
        assert_eq!(pod.spec, t.spec);
        // a name that cannot take the dash is used as it is
        let long = "a".repeat(253);
        assert_eq!(pods_prefix(&long), long);
        assert_eq!(pods_prefix("web"), "web-");
    }

    #[test]
    fn controller_ref_validation() {
        let owner = k8s_openapi::api::apps::v1::ReplicaSet {
            metadata: ObjectMeta {
                name: Some("x".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let good = coxswain_runtime::controllerutil::new_controller_ref(&owner);
        for (change, want) in [
            (
                Box::new(|r: &mut OwnerReference| r.api_version.clear())
                    as Box<dyn Fn(&mut OwnerReference)>,
                "APIVersion",
            ),
            (Box::new(|r: &mut OwnerReference| r.kind.clear()), "Kind"),
            (
                Box::new(|r: &mut OwnerReference| r.controller = None),
                "Controller",
            ),
            (
                Box::new(|r: &mut OwnerReference| r.block_owner_deletion = Some(false)),
                "BlockOwnerDeletion",
            ),
        ] {
            let mut r = good.clone();
            change(&mut r);
            assert!(
                validate_controller_ref(&r).is_err_and(|e| e.contains(want)),
                "{want}"
            );
        }
    }
}
