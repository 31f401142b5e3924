//! Simulated storage: default class, CSI driver objects and the CSI roles.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
use kube::api::{Patch, PatchParams};

use super::*;

const DRIVER: &str = "csi.sim.coxswain.dev";

fn claim(name: &str, class: &str, extra: serde_json::Value) -> PersistentVolumeClaim {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
            "resources": {"requests": {"storage": "2Gi"}}},
    });
    merge(&mut v, extra);
    serde_json::from_value(v).expect("claim")
}

/// What the PV binder does for a claim of an external provisioner's class.
async fn hand_to_driver(claims: &Api<PersistentVolumeClaim>, name: &str, extra: serde_json::Value) {
    let mut ann = json!({"volume.kubernetes.io/storage-provisioner": DRIVER,
        "volume.beta.kubernetes.io/storage-provisioner": DRIVER});
    merge(&mut ann, extra);
    claims
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": ann}})),
        )
        .await
        .expect("annotate claim");
}

async fn volume(pvs: &Api<PersistentVolume>, name: &str) -> PersistentVolume {
    eventually(&format!("volume {name}"), || async {
        pvs.get_opt(name).await.ok().flatten()
    })
    .await
}

fn affinity_node(pv: &PersistentVolume) -> Option<String> {
    let v = serde_json::to_value(pv).ok()?;
    let t = &v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0];
    (t["key"] == "kubernetes.io/hostname" && t["operator"] == "In")
        .then(|| t["values"][0].as_str().map(str::to_string))
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_class_driver_and_csinodes_are_installed_without_overwriting() {
    // a user's own `standard` class, created before the simulator starts, stays as it is
    {
        let sim = start(SimConfig { nodes: 2, ..fast() }).await;
        let client = sim.env.client.clone();
        let classes: Api<StorageClass> = Api::all(client.clone());
        let sc = eventually("class standard", || async {
            classes.get_opt("standard").await.ok().flatten()
        })
        .await;
        assert_eq!(sc.provisioner, DRIVER);
        assert_eq!(
            sc.volume_binding_mode.as_deref(),
            Some("WaitForFirstConsumer")
        );
        assert_eq!(sc.reclaim_policy.as_deref(), Some("Delete"));
        assert_eq!(sc.allow_volume_expansion, Some(true));
        assert_eq!(
            sc.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                .map(String::as_str),
            Some("true")
        );
        let drivers: Api<CSIDriver> = Api::all(client.clone());
        let d = eventually("csidriver", || async {
            drivers.get_opt(DRIVER).await.ok().flatten()
        })
        .await;
        assert_eq!(d.spec.attach_required, Some(true));
        let csinodes: Api<CSINode> = Api::all(client.clone());
        for n in ["sim-node-0", "sim-node-1"] {
            let c = eventually(&format!("csinode {n}"), || async {
                csinodes.get_opt(n).await.ok().flatten()
            })
            .await;
            assert_eq!(c.spec.drivers.len(), 1);
            assert_eq!(c.spec.drivers[0].name, DRIVER);
            assert_eq!(c.spec.drivers[0].node_id, n);
            let owner = &c.metadata.owner_references.as_ref().expect("owner")[0];
            assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Node", n));
        }
        let nodes: Api<Node> = Api::all(client.clone());
        let node = nodes.get("sim-node-0").await.expect("node");
        assert_eq!(
            node.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("volumes.kubernetes.io/controller-managed-attach-detach"))
                .map(String::as_str),
            Some("true")
        );
        // a node added later gets its CSINode too
        nodes
            .create(
                &PostParams::default(),
                &managed_node("extra", json!({}), json!({})),
            )
            .await
            .expect("extra node");
        eventually("csinode extra", || async {
            csinodes.get_opt("extra").await.ok().flatten()
        })
        .await;
        sim.stop().await;
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_class_is_left_alone() {
    let env = envtest::start().await.expect("api server");
    let classes: Api<StorageClass> = Api::all(env.client.clone());
    let mine: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": "standard"},
        "provisioner": "example.com/mine",
        "volumeBindingMode": "Immediate",
    }))
    .expect("class");
    classes
        .create(&PostParams::default(), &mine)
        .await
        .expect("create");
    let mgr = Manager::with_client(
        env.client.clone(),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    );
    Simulator::new(SimConfig { nodes: 1, ..fast() })
        .expect("config")
        .add_to(&mgr)
        .expect("runnables");
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move { mgr.start(c).await });
    // the driver object is created after the class was looked at
    let drivers: Api<CSIDriver> = Api::all(env.client.clone());
    eventually("csidriver", || async {
        drivers.get_opt(DRIVER).await.ok().flatten()
    })
    .await;
    let sc = classes.get("standard").await.expect("class");
    assert_eq!(sc.provisioner, "example.com/mine");
    assert_eq!(sc.volume_binding_mode.as_deref(), Some("Immediate"));
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_handed_to_the_driver_are_provisioned_and_released_volumes_deleted() {
    let sim = start(SimConfig { nodes: 2, ..fast() }).await;
    let client = sim.env.client.clone();
    let classes: Api<StorageClass> = Api::all(client.clone());
    eventually("class standard", || async {
        classes.get_opt("standard").await.ok().flatten()
    })
    .await;
    let fast_class: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": "fast"},
        "provisioner": DRIVER,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Retain",
        "parameters": {"csi.storage.k8s.io/fstype": "xfs"},
    }))
    .expect("class");
    classes
        .create(&PostParams::default(), &fast_class)
        .await
        .expect("class fast");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());

    // WaitForFirstConsumer: nothing until the scheduler picks a node
    let wffc = claims
        .create(
            &PostParams::default(),
            &claim("wffc", "standard", json!({})),
        )
        .await
        .expect("claim");
    let wffc_uid = wffc.metadata.uid.clone().expect("uid");
    hand_to_driver(&claims, "wffc", json!({})).await;
    // an Immediate claim handed over at the same time is provisioned at once
    let imm = claims
        .create(
            &PostParams::default(),
            &claim(
                "imm",
                "fast",
                json!({"spec": {"volumeMode": "Block",
                "accessModes": ["ReadWriteOncePod"]}}),
            ),
        )
        .await
        .expect("claim");
    hand_to_driver(&claims, "imm", json!({})).await;
    let imm_pv = volume(
        &pvs,
        &format!("pvc-{}", imm.metadata.uid.as_deref().unwrap()),
    )
    .await;
    let spec = imm_pv.spec.clone().expect("spec");
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Retain")
    );
    assert_eq!(spec.volume_mode.as_deref(), Some("Block"));
    assert_eq!(
        spec.access_modes,
        Some(vec!["ReadWriteOncePod".to_string()])
    );
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    let imm_node = affinity_node(&imm_pv).expect("an Immediate volume lives on one node");
    assert!(imm_node.starts_with("sim-node-"), "{imm_node}");
    // the WFFC claim was left alone meanwhile
    assert!(pvs
        .get_opt(&format!("pvc-{wffc_uid}"))
        .await
        .expect("get")
        .is_none());

    hand_to_driver(
        &claims,
        "wffc",
        json!({"volume.kubernetes.io/selected-node": "sim-node-1"}),
    )
    .await;
    let pv = volume(&pvs, &format!("pvc-{wffc_uid}")).await;
    assert_eq!(affinity_node(&pv).as_deref(), Some("sim-node-1"));
    let spec = pv.spec.clone().expect("spec");
    assert_eq!(
        spec.capacity.as_ref().expect("capacity")["storage"].0,
        "2Gi"
    );
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    let claim_ref = spec.claim_ref.expect("claimRef");
    assert_eq!(claim_ref.name.as_deref(), Some("wffc"));
    assert_eq!(claim_ref.uid.as_deref(), Some(wffc_uid.as_str()));
    let csi = spec.csi.expect("csi");
    assert_eq!(csi.driver, DRIVER);
    assert!(!csi.volume_handle.is_empty());
    assert_eq!(
        pv.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("pv.kubernetes.io/provisioned-by"))
            .map(String::as_str),
        Some(DRIVER)
    );
    assert!(pv
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == "external-provisioner.volume.kubernetes.io/finalizer"));
    for (reason, note) in [
        (
            "Provisioning",
            "External provisioner is provisioning volume for claim \"default/wffc\"".to_string(),
        ),
        (
            "ProvisioningSucceeded",
            format!("Successfully provisioned volume pvc-{wffc_uid}"),
        ),
    ] {
        let e = eventually(reason, || async {
            events_for(&client, "wffc", reason).await.into_iter().next()
        })
        .await;
        assert_eq!(e.note.as_deref(), Some(note.as_str()));
        assert_eq!(e.type_.as_deref(), Some("Normal"));
        assert!(e
            .reporting_controller
            .as_deref()
            .is_some_and(|c| c.starts_with("csi.sim.coxswain.dev_")));
    }

    // a claim with a selector cannot be provisioned by CSI
    claims
        .create(
            &PostParams::default(),
            &claim(
                "sel",
                "fast",
                json!({"spec": {"selector": {"matchLabels": {"a": "b"}}}}),
            ),
        )
        .await
        .expect("claim");
    hand_to_driver(&claims, "sel", json!({})).await;
    let e = eventually("ProvisioningFailed", || async {
        events_for(&client, "sel", "ProvisioningFailed")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        e.note.as_deref(),
        Some("failed to provision volume with StorageClass \"fast\": claim Selector is not supported")
    );

    // the claim goes; the binder marks the volume Released; the provisioner deletes it
    let name = pv.metadata.name.clone().expect("name");
    let mut released = pv.clone();
    released.status = Some(serde_json::from_value(json!({"phase": "Released"})).expect("status"));
    pvs.replace_status(&name, &PostParams::default(), &released)
        .await
        .expect("released");
    // deleted, and the provisioner's finalizer gone (the API server's pv-protection
    // finalizer, if any, is the protection controller's business)
    eventually("released volume deleted", || async {
        let pv = pvs.get_opt(&name).await.ok()?;
        let deleted = pv.as_ref().is_none_or(|pv| {
            pv.metadata.deletion_timestamp.is_some()
                && !pv
                    .metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == "external-provisioner.volume.kubernetes.io/finalizer")
        });
        deleted.then_some(())
    })
    .await;
    // a Retain volume stays
    let imm_name = imm_pv.metadata.name.clone().expect("name");
    let mut released = pvs.get(&imm_name).await.expect("imm pv");
    released.status = Some(serde_json::from_value(json!({"phase": "Released"})).expect("status"));
    pvs.replace_status(&imm_name, &PostParams::default(), &released)
        .await
        .expect("released");
    // wait on something the provisioner does after looking at it: it would have
    // deleted the volume before provisioning a newer claim
    claims
        .create(&PostParams::default(), &claim("later", "fast", json!({})))
        .await
        .expect("claim");
    let later = claims.get("later").await.expect("later");
    hand_to_driver(&claims, "later", json!({})).await;
    volume(
        &pvs,
        &format!("pvc-{}", later.metadata.uid.as_deref().unwrap()),
    )
    .await;
    assert!(pvs.get_opt(&imm_name).await.expect("get").is_some());
    sim.stop().await;
}

/// The simulator with the controller manager's PV binder.
async fn start_with_binder(config: SimConfig) -> Sim {
    start_with(config, |mgr| {
        let options = coxswain_controllers::volume::persistentvolume::PersistentVolumeBinderControllerOptions {
            pv_claim_binder_sync_period: Duration::from_secs(15),
            ..Default::default()
        };
        mgr.add(
            coxswain_controllers::volume::persistentvolume::persistent_volume_binder_controller(
                mgr, &options,
            ),
        )
        .expect("binder");
    })
    .await
}

async fn wait_ready_nodes(client: &kube::Client, n: usize) {
    let nodes: Api<Node> = Api::all(client.clone());
    eventually("nodes ready and untainted", || async {
        let l = nodes.list(&ListParams::default()).await.ok()?;
        let ready = l
            .items
            .iter()
            .filter(|n| {
                n.spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_none_or(|t| t.is_empty())
                    && n.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        (ready >= n).then_some(())
    })
    .await;
}

fn pod_with_claims(name: &str, claims: &[&str]) -> Pod {
    let volumes: Vec<serde_json::Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    pod(name, json!({"spec": {"volumes": volumes}}))
}

fn scheduled_message(p: &Pod) -> Option<String> {
    condition(p, "PodScheduled")
        .filter(|c| c.0 == "False")
        .and_then(|c| c.2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_first_consumer_claims_are_provisioned_on_the_pods_node() {
    let sim = start_with_binder(SimConfig { nodes: 2, ..fast() }).await;
    let client = sim.env.client.clone();
    wait_ready_nodes(&client, 2).await;
    let classes: Api<StorageClass> = Api::all(client.clone());
    eventually("class standard", || async {
        classes.get_opt("standard").await.ok().flatten()
    })
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());

    // the claim does not exist yet: unschedulable with upstream's message
    pods.create(
        &PostParams::default(),
        &pod_with_claims("web-0", &["data-web-0"]),
    )
    .await
    .expect("pod");
    let p = wait_pod(&pods, "web-0", "unschedulable", |p| {
        scheduled_message(p).is_some()
    })
    .await;
    assert_eq!(
        scheduled_message(&p).as_deref(),
        Some("0/2 nodes are available: persistentvolumeclaim \"data-web-0\" not found.")
    );
    // its creation lets the pod in: a node is chosen, the claim provisioned there and
    // bound, then the pod is bound to that node
    claims
        .create(
            &PostParams::default(),
            &claim("data-web-0", "standard", json!({})),
        )
        .await
        .expect("claim");
    let p = wait_pod(&pods, "web-0", "bound", |p| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some()
    })
    .await;
    let node = p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .expect("node");
    let c = claims.get("data-web-0").await.expect("claim");
    assert_eq!(
        c.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Bound"),
        "the pod is bound only once its claim is"
    );
    assert_eq!(
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("volume.kubernetes.io/selected-node")),
        Some(&node)
    );
    let pv = pvs
        .get(
            c.spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .expect("volume"),
        )
        .await
        .expect("pv");
    assert_eq!(affinity_node(&pv), Some(node.clone()));

    // a second pod of that claim goes where the volume is
    pods.create(
        &PostParams::default(),
        &pod_with_claims("web-0b", &["data-web-0"]),
    )
    .await
    .expect("pod");
    let p = wait_pod(&pods, "web-0b", "bound", |p| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some()
    })
    .await;
    assert_eq!(
        p.spec.as_ref().and_then(|s| s.node_name.clone()),
        Some(node)
    );
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbound_immediate_claims_and_volume_affinity_conflicts_keep_pods_pending() {
    let sim = start_with_binder(SimConfig { nodes: 2, ..fast() }).await;
    let client = sim.env.client.clone();
    wait_ready_nodes(&client, 2).await;
    let classes: Api<StorageClass> = Api::all(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    // an Immediate class whose provisioner does not run: the claim stays Pending
    let nobody: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": "nobody"},
        "provisioner": "example.com/nobody",
        "volumeBindingMode": "Immediate",
    }))
    .expect("class");
    classes
        .create(&PostParams::default(), &nobody)
        .await
        .expect("class");
    claims
        .create(
            &PostParams::default(),
            &claim("pending", "nobody", json!({})),
        )
        .await
        .expect("claim");
    pods.create(
        &PostParams::default(),
        &pod_with_claims("waits", &["pending"]),
    )
    .await
    .expect("pod");
    let p = wait_pod(&pods, "waits", "unschedulable", |p| {
        scheduled_message(p).is_some()
    })
    .await;
    assert_eq!(
        scheduled_message(&p).as_deref(),
        Some("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    );
    // a static volume on a node that does not exist, bound to a claim
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": "elsewhere"},
        "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"},
            "storageClassName": "", "hostPath": {"path": "/tmp/x"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gone"]}]}]}}},
    }))
    .expect("pv");
    pvs.create(&PostParams::default(), &pv).await.expect("pv");
    claims
        .create(
            &PostParams::default(),
            &claim("static", "", json!({"spec": {"volumeName": "elsewhere"}})),
        )
        .await
        .expect("claim");
    eventually("static claim bound", || async {
        claims
            .get("static")
            .await
            .ok()
            .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await;
    pods.create(
        &PostParams::default(),
        &pod_with_claims("pinned", &["static"]),
    )
    .await
    .expect("pod");
    let p = wait_pod(&pods, "pinned", "unschedulable", |p| {
        scheduled_message(p).is_some()
    })
    .await;
    assert_eq!(
        scheduled_message(&p).as_deref(),
        Some("0/2 nodes are available: 2 node(s) had volume node affinity conflict.")
    );
    let e = eventually("FailedScheduling", || async {
        events_for(&client, "pinned", "FailedScheduling")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    sim.stop().await;
}

fn waiting_reason(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

fn node_status_list(n: &Node, attached: bool) -> Vec<String> {
    let s = n.status.clone().unwrap_or_default();
    if attached {
        s.volumes_attached
            .unwrap_or_default()
            .into_iter()
            .map(|a| a.name)
            .collect()
    } else {
        s.volumes_in_use.unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_mounts_bound_attached_volumes_and_expands_them() {
    use k8s_openapi::api::storage::v1::VolumeAttachment;
    let sim = start_with_binder(SimConfig {
        nodes: 1,
        volume_mount_timeout: Duration::from_secs(1),
        ..fast()
    })
    .await;
    let client = sim.env.client.clone();
    wait_ready_nodes(&client, 1).await;
    let classes: Api<StorageClass> = Api::all(client.clone());
    eventually("class standard", || async {
        classes.get_opt("standard").await.ok().flatten()
    })
    .await;
    let now: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": "now"},
        "provisioner": DRIVER,
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": true,
    }))
    .expect("class");
    classes
        .create(&PostParams::default(), &now)
        .await
        .expect("class");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let vas: Api<VolumeAttachment> = Api::all(client.clone());

    // bound to the node before its claim exists: no sandbox, ContainerCreating
    let mut p = pod_with_claims("app", &["data"]);
    p.spec.as_mut().expect("spec").node_name = Some("sim-node-0".into());
    pods.create(&PostParams::default(), &p).await.expect("pod");
    let p = wait_pod(&pods, "app", "ContainerCreating", |p| {
        waiting_reason(p).as_deref() == Some("ContainerCreating")
    })
    .await;
    assert_eq!(phase(&p), "Pending");
    assert!(p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_none());
    // past the mount timeout the kubelet says what it waits for
    let e = eventually("FailedMount", || async {
        events_for(&client, "app", "FailedMount")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(
        e.note.as_deref(),
        Some(
            "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], \
             failed to process volumes=[data]: error processing PVC default/data: failed to fetch \
             PVC from API server: persistentvolumeclaims \"data\" not found"
        )
    );

    // the claim is provisioned and bound; the volume is in use on the node but not
    // attached yet, so the pod still waits
    claims
        .create(&PostParams::default(), &claim("data", "now", json!({})))
        .await
        .expect("claim");
    let c = eventually("claim bound", || async {
        claims
            .get("data")
            .await
            .ok()
            .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await;
    let pv_name = c
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .expect("pv");
    let pv = pvs.get(&pv_name).await.expect("pv");
    let handle = pv
        .spec
        .as_ref()
        .and_then(|s| s.csi.as_ref())
        .expect("csi")
        .volume_handle
        .clone();
    let unique = format!("kubernetes.io/csi/{DRIVER}^{handle}");
    eventually("volume in use", || async {
        let n = nodes.get("sim-node-0").await.ok()?;
        (node_status_list(&n, false) == vec![unique.clone()]).then_some(())
    })
    .await;
    let p = pods.get("app").await.expect("pod");
    assert_eq!(waiting_reason(&p).as_deref(), Some("ContainerCreating"));
    let want = "Unable to attach or mount volumes: unmounted volumes=[data], unattached \
                volumes=[data], failed to process volumes=[]: timed out waiting for the condition";
    eventually("FailedMount for the attachment", || async {
        events_for(&client, "app", "FailedMount")
            .await
            .into_iter()
            .find(|e| e.note.as_deref() == Some(want))
    })
    .await;

    // what the attach/detach controller does: a VolumeAttachment, which the attacher
    // attaches, then the node's volumesAttached
    let va: VolumeAttachment = serde_json::from_value(json!({
        "metadata": {"name": "csi-test"},
        "spec": {"attacher": DRIVER, "nodeName": "sim-node-0",
            "source": {"persistentVolumeName": pv_name}},
    }))
    .expect("va");
    vas.create(&PostParams::default(), &va).await.expect("va");
    let va = eventually("attached", || async {
        vas.get("csi-test")
            .await
            .ok()
            .filter(|v| v.status.as_ref().is_some_and(|s| s.attached))
    })
    .await;
    assert!(va
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == "external-attacher/csi-sim-coxswain-dev"));
    nodes
        .patch_status(
            "sim-node-0",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"volumesAttached": [
                {"name": unique, "devicePath": ""}]}})),
        )
        .await
        .expect("attach");
    wait_pod(&pods, "app", "running", |p| phase(p) == "Running").await;
    let n = nodes.get("sim-node-0").await.expect("node");
    assert_eq!(
        node_status_list(&n, true),
        vec![unique.clone()],
        "kept by heartbeats"
    );

    // expansion: the resizer takes the claims of its driver's volumes, the kubelet
    // finishes on the node
    claims
        .patch(
            "data",
            &PatchParams::default(),
            &Patch::Merge(&json!({
                "spec": {"resources": {"requests": {"storage": "3Gi"}}},
            })),
        )
        .await
        .expect("resize");
    let c = eventually("capacity grown", || async {
        claims.get("data").await.ok().filter(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .is_some_and(|m| m["storage"].0 == "3Gi")
        })
    })
    .await;
    let s = c.status.clone().expect("status");
    assert!(s.conditions.unwrap_or_default().is_empty());
    assert!(s.allocated_resource_statuses.unwrap_or_default().is_empty());
    assert_eq!(
        s.allocated_resources.expect("allocated")["storage"].0,
        "3Gi"
    );
    let pv = pvs.get(&pv_name).await.expect("pv");
    assert_eq!(
        pv.spec.expect("spec").capacity.expect("cap")["storage"].0,
        "3Gi"
    );
    for reason in [
        "Resizing",
        "FileSystemResizeRequired",
        "FileSystemResizeSuccessful",
    ] {
        eventually(reason, || async {
            events_for(&client, "data", reason).await.into_iter().next()
        })
        .await;
    }
    let e = events_for(&client, "data", "FileSystemResizeSuccessful").await;
    assert_eq!(
        e[0].note.as_deref(),
        Some(
            format!("MountVolume.NodeExpandVolume succeeded for volume \"{pv_name}\" sim-node-0")
                .as_str()
        )
    );

    // the pod goes: the volume is no longer in use; the attachment can go
    pods.delete("app", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("volume no longer in use", || async {
        let n = nodes.get("sim-node-0").await.ok()?;
        node_status_list(&n, false).is_empty().then_some(())
    })
    .await;
    vas.delete("csi-test", &DeleteParams::default())
        .await
        .expect("delete va");
    eventually("attachment gone", || async {
        vas.get_opt("csi-test")
            .await
            .ok()
            .and_then(|v| v.is_none().then_some(()))
    })
    .await;
    sim.stop().await;
}
