//! The taint eviction controller: kube-controller-manager's `taint-eviction-controller`
//! (upstream `pkg/controller/tainteviction`).
//!
//! It watches the `NoExecute` taints of nodes and the tolerations of pods. A pod bound to
//! a node with a `NoExecute` taint it does not tolerate is deleted at once; one that
//! tolerates every such taint, some of them only for `tolerationSeconds`, is deleted once
//! the smallest of those has passed, counted from when the controller first scheduled
//! the deletion (as upstream, which does not read the taint's `timeAdded`). Removing the
//! taint, deleting the pod or changing its tolerations to tolerate forever cancels a
//! scheduled deletion (event `TaintManagerEviction`, "Cancelling deletion of Pod
//! ns/name"); lengthening `tolerationSeconds` does not postpone it. Before deleting, the
//! controller records the event "Marking for deletion Pod ns/name" and sets the pod's
//! `DisruptionTarget` condition (reason `DeletionByTaintManager`); a failed attempt is
//! retried up to 5 times, 10 ms apart, as upstream's `deletePodHandler`.
//!
//! [`planner::Planner`] makes every decision from the cache's state and a given time;
//! one task feeds it the informers' changes (node changes before pod changes, as
//! upstream's workers) and runs the deletions when they are due. Upstream shards this
//! over 8 workers by node name; one task keeps the same per-node ordering.

pub mod planner;

use crate::clientbuilder::ClusterAccess;
use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use coxswain_runtime::cache::Change;
use coxswain_runtime::events::{EventRecorder, EventType};
use coxswain_runtime::manager::{runnable, BoxError, Runnable};
use coxswain_runtime::object::ObjectKey;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::daemon::{pod_node_index, POD_NODE_INDEX};
use planner::{node_change_matters, node_name, pod_change_matters, Planner, PodKey};

/// Name of the controller (`names.TaintEvictionController`), also its event source.
pub const CONTROLLER_NAME: &str = "taint-eviction-controller";
/// The event reason of marking and cancelling a deletion.
pub const EVICTION_REASON: &str = "TaintManagerEviction";
/// The reason of the `DisruptionTarget` condition the controller sets.
pub const DISRUPTION_REASON: &str = "DeletionByTaintManager";
/// The message of that condition.
pub const DISRUPTION_MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";
/// Attempts at deleting a pod (upstream `retries`).
pub const RETRIES: usize = 5;
/// The pause between attempts.
pub const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// The taint eviction controller's options (upstream has none beyond being enabled).
#[derive(Clone, Debug, Default)]
pub struct TaintEvictionControllerOptions {}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("node-controller")`) (the taint eviction controller uses the node controller's role, as upstream).
pub const SERVICE_ACCOUNT: &str = "node-controller";

/// The registry entry: `taint-eviction-controller` (no alias, on by default).
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &[],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(taint_eviction_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

/// The status patch that adds the `DisruptionTarget` condition to `pod` at `now`
/// (upstream `UpdatePodCondition` + `PatchPodStatus`, with the pod's UID as a
/// precondition), or `None` when the pod already has that condition as is.
pub fn disruption_condition_patch(pod: &Pod, now: Timestamp) -> Option<Value> {
    let old = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"));
    let mut condition = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(DISRUPTION_REASON.into()),
        message: Some(DISRUPTION_MESSAGE.into()),
        ..PodCondition::default()
    };
    match old {
        Some(o) if o.status == condition.status => {
            if o.reason == condition.reason && o.message == condition.message {
                return None;
            }
            condition.last_transition_time = o.last_transition_time.clone();
            condition.last_probe_time = o.last_probe_time.clone();
        }
        _ => condition.last_transition_time = Some(Time(now)),
    }
    Some(json!({
        "metadata": {"uid": pod.metadata.uid},
        "status": {"conditions": [condition]},
    }))
}

fn pod_reference(key: &PodKey) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(key.name.clone()),
        namespace: Some(key.namespace.clone()),
        ..ObjectReference::default()
    }
}

fn emit(recorder: &EventRecorder, key: &PodKey, action: &str, note: String) {
    recorder.event(
        &pod_reference(key),
        None,
        EventType::Normal,
        EVICTION_REASON,
        action,
        &note,
    );
}

/// One attempt: read the pod live, set its condition, delete it (upstream
/// `addConditionAndDeletePod`).
async fn add_condition_and_delete(client: &kube::Client, key: &PodKey) -> Result<(), kube::Error> {
    let pods = Api::<Pod>::namespaced(client.clone(), &key.namespace);
    let pod = pods.get(&key.name).await?;
    if let Some(patch) = disruption_condition_patch(&pod, Timestamp::now()) {
        pods.patch_status(&key.name, &PatchParams::default(), &Patch::Strategic(patch))
            .await?;
    }
    pods.delete(&key.name, &DeleteParams::default()).await?;
    Ok(())
}

/// Delete the pod, retrying (upstream `deletePodHandler`).
async fn delete_pod(client: kube::Client, recorder: EventRecorder, key: PodKey) {
    tracing::info!(controller = CONTROLLER_NAME, pod = %key, "deleting pod");
    emit(
        &recorder,
        &key,
        "Delete",
        format!("Marking for deletion Pod {key}"),
    );
    let mut last = None;
    for attempt in 0..RETRIES {
        match add_condition_and_delete(&client, &key).await {
            Ok(()) => return,
            Err(e) => last = Some(e),
        }
        if attempt + 1 < RETRIES {
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }
    if let Some(e) = last {
        tracing::error!(pod = %key, error = %e, "taint eviction: deleting the pod failed");
    }
}

enum Update {
    Node(String),
    Pod { key: PodKey, node: String },
}

/// Deduplicated work, as upstream's work queues.
#[derive(Default)]
struct Pending {
    nodes: VecDeque<String>,
    node_set: HashSet<String>,
    pods: VecDeque<(PodKey, String)>,
    pod_set: HashSet<(PodKey, String)>,
}

impl Pending {
    fn push(&mut self, u: Update) {
        match u {
            Update::Node(n) => {
                if self.node_set.insert(n.clone()) {
                    self.nodes.push_back(n);
                }
            }
            Update::Pod { key, node } => {
                let item = (key, node);
                if self.pod_set.insert(item.clone()) {
                    self.pods.push_back(item);
                }
            }
        }
    }

    fn pop(&mut self) -> Option<Update> {
        if let Some(n) = self.nodes.pop_front() {
            self.node_set.remove(&n);
            return Some(Update::Node(n));
        }
        let item = self.pods.pop_front()?;
        self.pod_set.remove(&item);
        Some(Update::Pod {
            key: item.0,
            node: item.1,
        })
    }
}

/// The controller as a runnable of `mgr`.
pub fn taint_eviction_controller(mgr: &impl ClusterAccess) -> impl Runnable {
    let cache = mgr.cache().clone();
    let pods = cache.informer::<Pod>();
    if !pods.store().has_index(POD_NODE_INDEX) {
        cache.index_field::<Pod>(POD_NODE_INDEX, pod_node_index);
    }
    let nodes = cache.informer::<Node>();
    let client = mgr.kube_client().clone();
    let recorder = mgr.event_recorder(CONTROLLER_NAME);
    runnable(CONTROLLER_NAME, true, move |cancel| async move {
        tokio::select! {
            _ = async { pods.wait_for_sync().await; nodes.wait_for_sync().await } => {}
            _ = cancel.cancelled() => return Ok::<(), BoxError>(()),
        }
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let (tx, mut rx) = mpsc::unbounded_channel::<Update>();
        let node_tx = tx.clone();
        let node_handler = nodes.add_handler(move |c: &Change<Node>| {
            let (old, new) = match c {
                Change::Added(n) => (None, Some(&**n)),
                Change::Updated { old, new } => (Some(&**old), Some(&**new)),
                Change::Deleted(n) => (Some(&**n), None),
            };
            if node_change_matters(old, new) {
                let name = new.or(old).and_then(|n| n.metadata.name.clone());
                let _ = node_tx.send(Update::Node(name.unwrap_or_default()));
            }
        });
        let pod_handler = pods.add_handler(move |c: &Change<Pod>| {
            let (old, new) = match c {
                Change::Added(p) => (None, Some(&**p)),
                Change::Updated { old, new } => (Some(&**old), Some(&**new)),
                Change::Deleted(p) => (Some(&**p), None),
            };
            if pod_change_matters(old, new) {
                if let Some(p) = new.or(old) {
                    let _ = tx.send(Update::Pod {
                        key: PodKey::of(p),
                        node: node_name(p).to_string(),
                    });
                }
            }
        });
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(PodKey, u64)>();
        let mut planner = Planner::new();
        let mut pending = Pending::default();
        loop {
            // everything that arrived, deduplicated, nodes first
            while let Ok(u) = rx.try_recv() {
                pending.push(u);
            }
            while let Some(u) = pending.pop() {
                let now = Instant::now();
                let cancelled = match u {
                    Update::Node(name) => {
                        let node = nodes.store().get(&ObjectKey::cluster(&name));
                        let on_node = pods
                            .store()
                            .by_index(POD_NODE_INDEX, &name)
                            .unwrap_or_default();
                        planner.node_updated(&name, node.as_deref(), &on_node, now)
                    }
                    Update::Pod { key, node } => {
                        let pod = pods
                            .store()
                            .get(&ObjectKey::namespaced(&key.namespace, &key.name));
                        planner.pod_updated(&key, &node, pod.as_deref(), now)
                    }
                };
                for key in cancelled {
                    emit(
                        &recorder,
                        &key,
                        "Cancel",
                        format!("Cancelling deletion of Pod {key}"),
                    );
                }
                // node updates come before pods queued meanwhile
                while let Ok(u) = rx.try_recv() {
                    pending.push(u);
                }
            }
            for (key, generation) in planner.take_due(Instant::now()) {
                let (client, recorder, done) = (client.clone(), recorder.clone(), done_tx.clone());
                tokio::spawn(async move {
                    delete_pod(client, recorder, key.clone()).await;
                    let _ = done.send((key, generation));
                });
            }
            let deadline = planner.next_deadline();
            tokio::select! {
                _ = cancel.cancelled() => break,
                u = rx.recv() => match u {
                    Some(u) => pending.push(u),
                    None => break,
                },
                Some((key, generation)) = done_rx.recv() => planner.finished(&key, generation),
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
        }
        nodes.remove_handler(node_handler);
        pods.remove_handler(pod_handler);
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
        Ok(())
    })
}

#[cfg(test)]
mod tests;
