//! The PersistentVolume binder (`persistentvolume-binder-controller`) against the embedded
//! API server: static binding to the smallest fitting volume, pre-binding both ways,
//! WaitForFirstConsumer waiting for `selected-node` and the hand-off to an external
//! provisioner, reclaim Retain and Delete, a claim whose volume vanished turning Lost,
//! and a claim that names a volume created later being bound by the resync.

use std::time::Duration;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::registry::ControllerManagerOptions;
use coxswain_controllers::volume::persistentvolume::{
    self as binder, PersistentVolumeBinderControllerOptions,
};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

const NS: &str = "binder";

struct World {
    h: Harness,
    pvs: Api<PersistentVolume>,
    pvcs: Api<PersistentVolumeClaim>,
}

impl World {
    async fn start() -> World {
        common::logs();
        let options = ControllerManagerOptions {
            persistent_volume_binder: PersistentVolumeBinderControllerOptions {
                // the claim that names a volume created later waits for the resync
                pv_claim_binder_sync_period: Duration::from_secs(1),
                ..Default::default()
            },
            ..Default::default()
        };
        let h = Harness::start_with(&[binder::descriptor()], options).await;
        h.namespace(NS).await;
        let c = h.client();
        World {
            pvs: Api::all(c.clone()),
            pvcs: Api::namespaced(c, NS),
            h,
        }
    }

    async fn pv(&self, name: &str, size: &str, policy: &str, extra: Value) {
        let mut pv = json!({
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": policy,
                "csi": {"driver": "example.com/disk", "volumeHandle": name},
            },
        });
        merge(&mut pv, extra);
        self.pvs
            .create(&PostParams::default(), &serde_json::from_value(pv).unwrap())
            .await
            .expect("pv created");
    }

    async fn pvc(&self, name: &str, size: &str, extra: Value) {
        let mut pvc = json!({
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
                "storageClassName": "",
            },
        });
        merge(&mut pvc, extra);
        self.pvcs
            .create(
                &PostParams::default(),
                &serde_json::from_value(pvc).unwrap(),
            )
            .await
            .expect("pvc created");
    }

    async fn claim_bound(&self, name: &str) -> PersistentVolumeClaim {
        wait_for(&format!("claim {name} Bound"), || async {
            let c = self.pvcs.get(name).await.expect("pvc");
            (phase_of_claim(&c) == "Bound").then_some(c)
        })
        .await
    }

    async fn volume_phase(&self, name: &str, phase: &str) -> PersistentVolume {
        wait_for(&format!("volume {name} {phase}"), || async {
            let v = self.pvs.get(name).await.expect("pv");
            (v.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase)).then_some(v)
        })
        .await
    }

    /// Delete an object for good: whatever finalizers the API server added go too.
    async fn delete_claim(&self, name: &str) {
        self.pvcs
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete pvc");
        let _ = self
            .pvcs
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
    }

    async fn delete_volume(&self, name: &str) {
        self.pvs
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete pv");
        let _ = self
            .pvs
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
    }

    async fn wait_event(&self, namespace: Option<&str>, object: &str, reason: &str, note: &str) {
        let events: Api<Event> = match namespace {
            Some(ns) => Api::namespaced(self.h.client(), ns),
            None => Api::all(self.h.client()),
        };
        wait_for(&format!("event {reason} on {object}: {note}"), || async {
            let list = events.list(&ListParams::default()).await.expect("events");
            list.items
                .iter()
                .any(|e| {
                    e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(object)
                        && e.reason.as_deref() == Some(reason)
                        && e.note.as_deref() == Some(note)
                })
                .then_some(())
        })
        .await
    }
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

fn phase_of_claim(c: &PersistentVolumeClaim) -> &str {
    c.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn volume_of(c: &PersistentVolumeClaim) -> &str {
    c.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

#[tokio::test]
async fn static_and_prebound_binding_reclaim_and_loss() {
    let w = World::start().await;
    // static binding: the smallest volume that fits
    w.pv("big", "5Gi", "Retain", json!({})).await;
    w.pv("small", "1Gi", "Retain", json!({})).await;
    w.pv("tiny", "100Mi", "Retain", json!({})).await;
    w.pvc("data", "500Mi", json!({})).await;
    let claim = w.claim_bound("data").await;
    assert_eq!(volume_of(&claim), "small");
    assert_eq!(
        annotation(&claim.metadata, binder::ANN_BIND_COMPLETED),
        Some("yes")
    );
    assert_eq!(
        annotation(&claim.metadata, binder::ANN_BOUND_BY_CONTROLLER),
        Some("yes")
    );
    let status = claim.status.clone().unwrap();
    assert_eq!(status.capacity.unwrap()["storage"].0, "1Gi");
    assert_eq!(status.access_modes.unwrap(), ["ReadWriteOnce"]);
    let pv = w.volume_phase("small", "Bound").await;
    let r = pv.spec.as_ref().unwrap().claim_ref.clone().unwrap();
    assert_eq!(
        (r.namespace.as_deref(), r.name.as_deref()),
        (Some(NS), Some("data"))
    );
    assert_eq!(r.uid, claim.metadata.uid);
    assert_eq!(
        annotation(&pv.metadata, binder::ANN_BOUND_BY_CONTROLLER),
        Some("yes")
    );

    // a volume pre-bound to a claim by name wins over a smaller one
    w.pv(
        "reserved",
        "5Gi",
        "Retain",
        json!({"spec": {"claimRef": {"namespace": NS, "name": "pre"}}}),
    )
    .await;
    w.pvc("pre", "100Mi", json!({})).await;
    let claim = w.claim_bound("pre").await;
    assert_eq!(volume_of(&claim), "reserved");
    let pv = w.volume_phase("reserved", "Bound").await;
    assert_eq!(
        annotation(&pv.metadata, binder::ANN_BOUND_BY_CONTROLLER),
        None,
        "the user bound the volume"
    );

    // a claim naming its volume
    w.pvc("named", "1Gi", json!({"spec": {"volumeName": "big"}}))
        .await;
    let claim = w.claim_bound("named").await;
    assert_eq!(volume_of(&claim), "big");
    assert_eq!(
        annotation(&claim.metadata, binder::ANN_BOUND_BY_CONTROLLER),
        None
    );
    let pv = w.volume_phase("big", "Bound").await;
    assert_eq!(
        annotation(&pv.metadata, binder::ANN_BOUND_BY_CONTROLLER),
        Some("yes")
    );

    // a claim no volume fits, without a class
    w.pvc("huge", "1Ti", json!({})).await;
    w.wait_event(
        Some(NS),
        "huge",
        "FailedBinding",
        "no persistent volumes available for this claim and no storage class is set",
    )
    .await;
    assert_eq!(
        phase_of_claim(&w.pvcs.get("huge").await.unwrap()),
        "Pending"
    );

    // Retain: the deleted claim's volume is Released and keeps its claimRef
    w.delete_claim("data").await;
    let pv = w.volume_phase("small", "Released").await;
    assert_eq!(
        pv.spec.unwrap().claim_ref.unwrap().name.as_deref(),
        Some("data")
    );

    // Delete without a deleter (no provisioner): Failed, as upstream's
    w.pv("doomed", "1Gi", "Delete", json!({})).await;
    w.pvc("short", "1Gi", json!({"spec": {"volumeName": "doomed"}}))
        .await;
    w.claim_bound("short").await;
    w.delete_claim("short").await;
    w.volume_phase("doomed", "Failed").await;
    w.wait_event(
        None,
        "doomed",
        "VolumeFailedDelete",
        "error getting deleter volume plugin for volume \"doomed\": no deletable volume plugin matched",
    )
    .await;

    // the volume of a bound claim vanishes: Lost
    w.delete_volume("reserved").await;
    wait_for("claim pre Lost", || async {
        let c = w.pvcs.get("pre").await.expect("pvc");
        (phase_of_claim(&c) == "Lost").then_some(())
    })
    .await;
    w.wait_event(
        Some(NS),
        "pre",
        "ClaimLost",
        "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
    )
    .await;
    w.h.stop().await;
}

#[tokio::test]
async fn wait_for_first_consumer_then_external_provisioning() {
    let w = World::start().await;
    let classes: Api<StorageClass> = Api::all(w.h.client());
    let sc = json!({
        "metadata": {"name": "later"},
        "provisioner": "example.com/external",
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    });
    classes
        .create(&PostParams::default(), &serde_json::from_value(sc).unwrap())
        .await
        .unwrap();
    w.pvc(
        "wffc",
        "1Gi",
        json!({"spec": {"storageClassName": "later"}}),
    )
    .await;
    w.wait_event(
        Some(NS),
        "wffc",
        "WaitForFirstConsumer",
        "waiting for first consumer to be created before binding",
    )
    .await;
    let c = w.pvcs.get("wffc").await.unwrap();
    assert_eq!(
        annotation(&c.metadata, binder::ANN_STORAGE_PROVISIONER),
        None
    );
    assert_eq!(phase_of_claim(&c), "Pending");

    // the scheduler picks a node: the claim goes to the class's provisioner
    w.pvcs
        .patch(
            "wffc",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {binder::ANN_SELECTED_NODE: "node-1"}}}),
            ),
        )
        .await
        .unwrap();
    w.wait_event(
        Some(NS),
        "wffc",
        "ExternalProvisioning",
        "Waiting for a volume to be created either by the external provisioner 'example.com/external' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.",
    )
    .await;
    let c = w.pvcs.get("wffc").await.unwrap();
    assert_eq!(
        annotation(&c.metadata, binder::ANN_STORAGE_PROVISIONER),
        Some("example.com/external")
    );
    assert_eq!(
        annotation(&c.metadata, binder::ANN_BETA_STORAGE_PROVISIONER),
        Some("example.com/external")
    );

    // the provisioner's volume, pre-bound to the claim, is bound
    let uid = c.metadata.uid.clone().unwrap();
    let name = format!("pvc-{uid}");
    w.pv(
        &name,
        "1Gi",
        "Delete",
        json!({
            "metadata": {"annotations": {binder::ANN_DYNAMICALLY_PROVISIONED: "example.com/external"}},
            "spec": {
                "storageClassName": "later",
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": NS, "name": "wffc", "uid": uid},
            },
        }),
    )
    .await;
    let c = w.claim_bound("wffc").await;
    assert_eq!(volume_of(&c), name);
    w.volume_phase(&name, "Bound").await;

    // Delete of an external provisioner's volume: Released and left to it
    w.delete_claim("wffc").await;
    let pv = w.volume_phase(&name, "Released").await;
    assert!(
        pv.metadata.deletion_timestamp.is_none(),
        "the provisioner deletes it"
    );

    // a claim that names a volume created later is bound by the resync
    w.pvc("early", "1Gi", json!({"spec": {"volumeName": "late"}}))
        .await;
    w.pv("late", "1Gi", "Retain", json!({})).await;
    let c = w.claim_bound("early").await;
    assert_eq!(volume_of(&c), "late");
    w.h.stop().await;
}

#[tokio::test]
async fn two_binders_racing_with_stale_caches_bind_each_claim_once() {
    // a second binder against the same server: each one's cache is stale with respect to
    // the other's writes, so their updates conflict; the result must still be one volume
    // per claim, each volume naming the claim that names it
    let w = World::start().await;
    let mgr = coxswain_runtime::manager::Manager::new(
        w.h.env.kube_config().await.expect("config"),
        coxswain_runtime::manager::ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let options = PersistentVolumeBinderControllerOptions {
        pv_claim_binder_sync_period: Duration::from_secs(1),
        ..Default::default()
    };
    mgr.add(binder::persistent_volume_binder_controller(&mgr, &options))
        .expect("second binder");
    let cancel = tokio_util::sync::CancellationToken::new();
    let c = cancel.clone();
    let second = tokio::spawn(async move { mgr.start(c).await });
    const N: usize = 8;
    for i in 0..N {
        w.pv(&format!("race-{i}"), "1Gi", "Retain", json!({})).await;
    }
    for i in 0..N {
        w.pvc(&format!("claim-{i}"), "1Gi", json!({})).await;
    }
    let mut volumes = std::collections::BTreeSet::new();
    for i in 0..N {
        let c = w.claim_bound(&format!("claim-{i}")).await;
        let v = volume_of(&c).to_string();
        let pv = w.volume_phase(&v, "Bound").await;
        let r = pv.spec.unwrap().claim_ref.unwrap();
        assert_eq!(r.name.as_deref(), c.metadata.name.as_deref(), "{v}");
        assert_eq!(r.uid, c.metadata.uid, "{v}");
        assert!(volumes.insert(v.clone()), "{v} bound twice");
    }
    cancel.cancel();
    let _ = second.await;
    w.h.stop().await;
}
