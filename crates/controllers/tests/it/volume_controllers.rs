//! The volume controllers against the embedded API server (whose admission puts the
//! protection finalizers on new claims and volumes): claim and volume protection,
//! ephemeral volume claims, expansion hand-off. No kubelet runs here: the tests play
//! the binder's and the kubelet's part by writing statuses and deleting pods with a
//! zero grace period.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::volume::{ephemeral, expand, pvcprotection, pvprotection};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

async fn create<K>(api: &Api<K>, v: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(v).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created")
}

fn claim(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
    })
}

fn pod_with(name: &str, node: Option<&str>, volumes: Value) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": volumes,
        },
    })
}

async fn gone<K>(api: &Api<K>, name: &str) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    matches!(api.get_opt(name).await, Ok(None))
}

async fn force_delete(pods: &Api<Pod>, name: &str) {
    pods.delete(name, &DeleteParams::default().grace_period(0))
        .await
        .expect("pod deleted");
}

async fn events(c: &kube::Client, ns: &str, name: &str) -> Vec<(String, String, String)> {
    Api::<Event>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// A deleted claim stays (Terminating) while a scheduled pod uses it, through a
/// `persistentVolumeClaim` volume or an ephemeral volume it owns; it goes once the pod
/// is gone. Unscheduled pods never hold a claim, and a claim without the finalizer
/// gets it back.
#[tokio::test]
async fn claims_in_use_stay_until_their_pods_are_gone() {
    common::logs();
    const NS: &str = "pvc-protection";
    let h = Harness::start(&[pvcprotection::descriptor()]).await;
    h.namespace(NS).await;
    let pvcs = Api::<PersistentVolumeClaim>::namespaced(h.client(), NS);
    let pods = Api::<Pod>::namespaced(h.client(), NS);

    // the API server's StorageObjectInUseProtection admission adds the finalizer
    let used = create(&pvcs, claim("used")).await;
    assert_eq!(used.finalizers(), [pvcprotection::PVC_PROTECTION_FINALIZER]);
    create(&pvcs, claim("waiting")).await;
    create(&pvcs, claim("probe")).await;
    create(
        &pods,
        pod_with(
            "user",
            Some("node-1"),
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "used"}}]),
        ),
    )
    .await;
    create(
        &pods,
        pod_with(
            "pending",
            None,
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "waiting"}}]),
        ),
    )
    .await;
    pvcs.delete("used", &DeleteParams::default())
        .await
        .expect("deleted");
    pvcs.delete("waiting", &DeleteParams::default())
        .await
        .expect("deleted");
    // an unscheduled pod does not hold its claim
    wait_for("the claim of an unscheduled pod to go", || async {
        gone(&pvcs, "waiting").await.then_some(())
    })
    .await;
    // the single worker has handled "used" before "probe" (deleted after it)
    pvcs.delete("probe", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for("an unused claim to go", || async {
        gone(&pvcs, "probe").await.then_some(())
    })
    .await;
    let kept = pvcs.get("used").await.expect("claim in use is kept");
    assert!(kept.metadata.deletion_timestamp.is_some());
    force_delete(&pods, "user").await;
    wait_for("the claim to go with its pod", || async {
        gone(&pvcs, "used").await.then_some(())
    })
    .await;

    // a claim whose finalizer was removed gets it back
    create(&pvcs, claim("bare")).await;
    pvcs.patch(
        "bare",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    wait_for("the finalizer to come back", || async {
        let c = pvcs.get("bare").await.ok()?;
        (c.finalizers() == [pvcprotection::PVC_PROTECTION_FINALIZER]).then_some(())
    })
    .await;

    // an ephemeral volume's claim is held by the pod that owns it
    let owner = create(
        &pods,
        pod_with("eph", Some("node-1"), json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}])),
    )
    .await;
    let mut c = claim("eph-scratch");
    c["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": "eph",
        "uid": owner.uid(), "controller": true, "blockOwnerDeletion": true}]);
    create(&pvcs, c).await;
    pvcs.delete("eph-scratch", &DeleteParams::default())
        .await
        .expect("deleted");
    create(&pvcs, claim("probe2")).await;
    pvcs.delete("probe2", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for("an unused claim to go", || async {
        gone(&pvcs, "probe2").await.then_some(())
    })
    .await;
    assert!(
        pvcs.get("eph-scratch").await.is_ok(),
        "ephemeral claim is held by its pod"
    );
    force_delete(&pods, "eph").await;
    wait_for("the ephemeral claim to go with its pod", || async {
        gone(&pvcs, "eph-scratch").await.then_some(())
    })
    .await;
    h.stop().await;
}

fn volume(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "csi": {"driver": "csi.example.com", "volumeHandle": name}},
    })
}

async fn set_phase(pvs: &Api<PersistentVolume>, name: &str, phase: &str) {
    pvs.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": phase}})),
    )
    .await
    .expect("phase set");
}

/// A deleted volume stays while it is Bound and goes once it is not.
#[tokio::test]
async fn bound_volumes_stay_until_released() {
    common::logs();
    let h = Harness::start(&[pvprotection::descriptor()]).await;
    let pvs = Api::<PersistentVolume>::all(h.client());
    let pv = create(&pvs, volume("bound")).await;
    assert_eq!(pv.finalizers(), [pvprotection::PV_PROTECTION_FINALIZER]);
    set_phase(&pvs, "bound", "Bound").await;
    create(&pvs, volume("available")).await;
    set_phase(&pvs, "available", "Available").await;
    pvs.delete("bound", &DeleteParams::default())
        .await
        .expect("deleted");
    pvs.delete("available", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for("an Available volume to go", || async {
        gone(&pvs, "available").await.then_some(())
    })
    .await;
    let kept = pvs.get("bound").await.expect("a Bound volume is kept");
    assert!(kept.metadata.deletion_timestamp.is_some());
    set_phase(&pvs, "bound", "Released").await;
    wait_for("a Released volume to go", || async {
        gone(&pvs, "bound").await.then_some(())
    })
    .await;
    h.stop().await;
}

/// A pod's generic ephemeral volume gets its claim `<pod>-<volume>`, controlled by the
/// pod; a claim of that name the pod does not own is reported on the pod.
#[tokio::test]
async fn ephemeral_volumes_get_claims_owned_by_their_pods() {
    common::logs();
    const NS: &str = "ephemeral";
    let h = Harness::start(&[ephemeral::descriptor()]).await;
    h.namespace(NS).await;
    let pvcs = Api::<PersistentVolumeClaim>::namespaced(h.client(), NS);
    let pods = Api::<Pod>::namespaced(h.client(), NS);
    let template = json!({"volumeClaimTemplate": {
        "metadata": {"labels": {"type": "scratch"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                 "resources": {"requests": {"storage": "2Gi"}}}}});
    let pod = create(
        &pods,
        pod_with(
            "app",
            None,
            json!([{"name": "scratch", "ephemeral": template}]),
        ),
    )
    .await;
    let c = wait_for("the ephemeral claim", || async {
        pvcs.get("app-scratch").await.ok()
    })
    .await;
    let owner = &c.owner_references()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("Pod", "app", Some(true), Some(true))
    );
    assert_eq!(Some(&owner.uid), pod.metadata.uid.as_ref());
    assert_eq!(c.labels().get("type").map(String::as_str), Some("scratch"));
    let spec = c.spec.as_ref().unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    let first_uid = c.uid();

    // a deleted claim is created again for the pod that still needs it
    pvcs.patch(
        "app-scratch",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    pvcs.delete("app-scratch", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for("the claim to be created again", || async {
        let c = pvcs.get("app-scratch").await.ok()?;
        (c.uid() != first_uid && c.metadata.deletion_timestamp.is_none()).then_some(())
    })
    .await;

    // a foreign claim of the same name is a conflict
    create(&pvcs, claim("other-scratch")).await;
    create(
        &pods,
        pod_with(
            "other",
            None,
            json!([{"name": "scratch", "ephemeral": template}]),
        ),
    )
    .await;
    let want = (
        "Warning".to_string(),
        "FailedBinding".to_string(),
        format!("ephemeral volume scratch: PVC {NS}/other-scratch was not created for pod {NS}/other (pod is not owner)"),
    );
    wait_for("the conflict event", || async {
        events(&h.client(), NS, "other")
            .await
            .contains(&want)
            .then_some(())
    })
    .await;
    assert!(pvcs
        .get("other-scratch")
        .await
        .unwrap()
        .owner_references()
        .is_empty());
    h.stop().await;
}

/// Growing a Bound claim of an expandable class is handed to the external resizer with
/// upstream's `ExternalExpanding` event.
#[tokio::test]
async fn expansion_is_handed_to_the_external_resizer() {
    common::logs();
    const NS: &str = "expand";
    let h = Harness::start(&[expand::descriptor()]).await;
    h.namespace(NS).await;
    let classes = Api::<StorageClass>::all(h.client());
    create(
        &classes,
        json!({"metadata": {"name": "expandable"}, "provisioner": "csi.example.com",
               "allowVolumeExpansion": true}),
    )
    .await;
    let pvcs = Api::<PersistentVolumeClaim>::namespaced(h.client(), NS);
    let pvs = Api::<PersistentVolume>::all(h.client());
    let mut c = claim("data");
    c["spec"]["storageClassName"] = json!("expandable");
    c["spec"]["volumeName"] = json!("pv-data");
    let c = create(&pvcs, c).await;
    let mut v = volume("pv-data");
    v["spec"]["storageClassName"] = json!("expandable");
    v["spec"]["claimRef"] = json!({"namespace": NS, "name": "data", "uid": c.uid()});
    create(&pvs, v).await;
    set_phase(&pvs, "pv-data", "Bound").await;
    pvcs.patch_status(
        "data",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"]}}),
        ),
    )
    .await
    .expect("claim bound");
    pvcs.patch(
        "data",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})),
    )
    .await
    .expect("claim grown");
    let want = (
        "Normal".to_string(),
        "ExternalExpanding".to_string(),
        "waiting for an external controller to expand this PVC".to_string(),
    );
    wait_for("the ExternalExpanding event", || async {
        events(&h.client(), NS, "data")
            .await
            .contains(&want)
            .then_some(())
    })
    .await;
    h.stop().await;
}

/// A pod on a controller-managed node gets its CSI volume attached through a
/// VolumeAttachment and reported in the node's `volumesAttached`; once no pod needs it
/// and the kubelet no longer reports it in use, it is detached.
#[tokio::test]
async fn csi_volumes_are_attached_to_the_nodes_of_their_pods() {
    use coxswain_controllers::volume::attachdetach;
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::api::storage::v1::VolumeAttachment;

    common::logs();
    const NS: &str = "attach";
    let h = Harness::start(&[attachdetach::descriptor()]).await;
    h.namespace(NS).await;
    let nodes = Api::<Node>::all(h.client());
    create(
        &nodes,
        json!({"metadata": {"name": "node-1", "annotations": {
            attachdetach::CONTROLLER_MANAGED_ANNOTATION: "true"}}}),
    )
    .await;
    nodes
        .patch_status(
            "node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
        )
        .await
        .expect("node ready");
    let pvcs = Api::<PersistentVolumeClaim>::namespaced(h.client(), NS);
    let pvs = Api::<PersistentVolume>::all(h.client());
    let pods = Api::<Pod>::namespaced(h.client(), NS);
    let vas = Api::<VolumeAttachment>::all(h.client());
    for name in ["one", "two"] {
        let mut c = claim(name);
        c["spec"]["volumeName"] = json!(format!("pv-{name}"));
        let c = create(&pvcs, c).await;
        let mut v = volume(&format!("pv-{name}"));
        v["spec"]["claimRef"] = json!({"namespace": NS, "name": name, "uid": c.uid()});
        create(&pvs, v).await;
        pvcs.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Bound"}})),
        )
        .await
        .expect("claim bound");
    }
    create(
        &pods,
        pod_with(
            "p1",
            Some("node-1"),
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "one"}}]),
        ),
    )
    .await;
    let name = attachdetach::attachment_name("pv-one", "csi.example.com", "node-1");
    let va = wait_for("the VolumeAttachment", || async {
        vas.get(&name).await.ok()
    })
    .await;
    assert_eq!(va.spec.attacher, "csi.example.com");
    assert_eq!(va.spec.node_name, "node-1");
    assert_eq!(
        va.spec.source.persistent_volume_name.as_deref(),
        Some("pv-one")
    );
    // the external attacher's part
    vas.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"attached": true}})),
    )
    .await
    .expect("attached");
    let unique = "kubernetes.io/csi/csi.example.com^pv-one";
    wait_for("the node's volumesAttached", || async {
        let n = nodes.get("node-1").await.ok()?;
        let attached = serde_json::to_value(n.status?.volumes_attached?).ok()?;
        (attached == json!([{"name": unique, "devicePath": ""}])).then_some(())
    })
    .await;
    let want = (
        "Normal".to_string(),
        "SuccessfulAttachVolume".to_string(),
        "AttachVolume.Attach succeeded for volume \"pv-one\"".to_string(),
    );
    wait_for("the attach event", || async {
        events(&h.client(), NS, "p1")
            .await
            .contains(&want)
            .then_some(())
    })
    .await;

    // the kubelet still has it mounted: the pod's deletion does not detach it yet
    nodes
        .patch_status(
            "node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"volumesInUse": [unique]}})),
        )
        .await
        .expect("in use");
    force_delete(&pods, "p1").await;
    create(
        &pods,
        pod_with(
            "p2",
            Some("node-1"),
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "two"}}]),
        ),
    )
    .await;
    let second = attachdetach::attachment_name("pv-two", "csi.example.com", "node-1");
    wait_for("the second VolumeAttachment", || async {
        vas.get(&second).await.ok()
    })
    .await;
    assert!(
        vas.get(&name).await.is_ok(),
        "a mounted volume stays attached"
    );
    nodes
        .patch_status(
            "node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"volumesInUse": []}})),
        )
        .await
        .expect("unmounted");
    wait_for("the detach", || async {
        gone(&vas, &name).await.then_some(())
    })
    .await;
    let n = nodes.get("node-1").await.expect("node");
    assert!(n
        .status
        .and_then(|s| s.volumes_attached)
        .unwrap_or_default()
        .is_empty());

    // a ReadWriteOnce volume attached to node-1 is not attached to node-2 as well
    create(
        &nodes,
        json!({"metadata": {"name": "node-2", "annotations": {
            attachdetach::CONTROLLER_MANAGED_ANNOTATION: "true"}}}),
    )
    .await;
    create(
        &pods,
        pod_with(
            "p3",
            Some("node-2"),
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "two"}}]),
        ),
    )
    .await;
    let want = (
        "Warning".to_string(),
        "FailedAttachVolume".to_string(),
        "Multi-Attach error for volume \"pv-two\" Volume is already used by pod(s) p2".to_string(),
    );
    wait_for("the multi-attach event", || async {
        events(&h.client(), NS, "p3")
            .await
            .contains(&want)
            .then_some(())
    })
    .await;
    let third = attachdetach::attachment_name("pv-two", "csi.example.com", "node-2");
    assert!(
        gone(&vas, &third).await,
        "no second attachment of a ReadWriteOnce volume"
    );
    h.stop().await;
}
