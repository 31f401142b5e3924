//! The binder's sync logic against a fake API server: upstream `binder_test.go`
//! (`TestSync`), `provision_test.go`, `delete_test.go` and `TestRetroactiveStorageClassAssignment`
//! cases, numbered as upstream's where they correspond.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use coxswain_runtime::events::EventType;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimStatus, PersistentVolumeClaimVolumeSource, PersistentVolumeSpec,
    PersistentVolumeStatus, Pod, PodSpec, Volume, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::binder::{Binder, BinderApi};
use super::*;

const NS: &str = "default";

fn conflict() -> kube::Error {
    kube::Error::Api(Box::new(
        kube::core::Status::failure("the object has been modified", "Conflict").with_code(409),
    ))
}

/// An in-memory API server: updates must carry the stored resourceVersion (else 409),
/// bump it, and change only the spec and metadata (update) or only the status
/// (update_status).
#[derive(Default)]
struct Fake {
    volumes: Mutex<BTreeMap<String, PersistentVolume>>,
    claims: Mutex<BTreeMap<String, PersistentVolumeClaim>>,
    classes: Vec<Arc<StorageClass>>,
    pods: Vec<Arc<Pod>>,
    events: Mutex<Vec<(String, String)>>,
    enqueued: Mutex<Vec<String>>,
    rv: AtomicU64,
}

impl Fake {
    fn next_rv(&self) -> String {
        (self.rv.fetch_add(1, Ordering::SeqCst) + 1000).to_string()
    }

    fn events(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|(e, _)| e.clone())
            .collect()
    }

    fn messages(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    fn volume(&self, name: &str) -> PersistentVolume {
        self.volumes.lock().unwrap()[name].clone()
    }

    fn claim(&self, name: &str) -> PersistentVolumeClaim {
        self.claims.lock().unwrap()[&format!("{NS}/{name}")].clone()
    }
}

fn ckey(c: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        c.metadata.namespace.as_deref().unwrap_or_default(),
        c.metadata.name.as_deref().unwrap_or_default()
    )
}

impl BinderApi for Fake {
    async fn update_volume(&self, pv: &PersistentVolume) -> Result<PersistentVolume, kube::Error> {
        let mut vs = self.volumes.lock().unwrap();
        let stored = vs.get_mut(pv.metadata.name.as_deref().unwrap()).unwrap();
        if stored.metadata.resource_version != pv.metadata.resource_version {
            return Err(conflict());
        }
        stored.metadata = pv.metadata.clone();
        stored.spec = pv.spec.clone();
        stored.metadata.resource_version = Some(self.next_rv());
        Ok(stored.clone())
    }

    async fn update_volume_status(
        &self,
        pv: &PersistentVolume,
    ) -> Result<PersistentVolume, kube::Error> {
        let mut vs = self.volumes.lock().unwrap();
        let stored = vs.get_mut(pv.metadata.name.as_deref().unwrap()).unwrap();
        if stored.metadata.resource_version != pv.metadata.resource_version {
            return Err(conflict());
        }
        stored.status = pv.status.clone();
        stored.metadata.resource_version = Some(self.next_rv());
        Ok(stored.clone())
    }

    async fn update_claim(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, kube::Error> {
        let mut cs = self.claims.lock().unwrap();
        let stored = cs.get_mut(&ckey(pvc)).unwrap();
        if stored.metadata.resource_version != pvc.metadata.resource_version {
            return Err(conflict());
        }
        stored.metadata = pvc.metadata.clone();
        stored.spec = pvc.spec.clone();
        stored.metadata.resource_version = Some(self.next_rv());
        Ok(stored.clone())
    }

    async fn update_claim_status(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, kube::Error> {
        let mut cs = self.claims.lock().unwrap();
        let stored = cs.get_mut(&ckey(pvc)).unwrap();
        if stored.metadata.resource_version != pvc.metadata.resource_version {
            return Err(conflict());
        }
        stored.status = pvc.status.clone();
        stored.metadata.resource_version = Some(self.next_rv());
        Ok(stored.clone())
    }

    async fn get_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, kube::Error> {
        Ok(self
            .claims
            .lock()
            .unwrap()
            .get(&format!("{namespace}/{name}"))
            .cloned())
    }

    async fn get_volume(&self, name: &str) -> Result<Option<PersistentVolume>, kube::Error> {
        Ok(self.volumes.lock().unwrap().get(name).cloned())
    }

    fn informer_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims
            .lock()
            .unwrap()
            .get(&format!("{namespace}/{name}"))
            .cloned()
            .map(Arc::new)
    }

    fn storage_class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .cloned()
    }

    fn storage_classes(&self) -> Vec<Arc<StorageClass>> {
        self.classes.clone()
    }

    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.pods
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
            .cloned()
            .collect()
    }

    fn event(&self, _regarding: ObjectReference, type_: EventType, reason: &str, message: &str) {
        self.events
            .lock()
            .unwrap()
            .push((format!("{} {reason}", type_.as_str()), message.to_string()));
    }

    fn enqueue_claim(&self, key: ObjectKey) {
        self.enqueued.lock().unwrap().push(format!(
            "claim {}/{}",
            key.namespace().unwrap_or_default(),
            key.name()
        ));
    }

    fn enqueue_volume(&self, name: &str) {
        self.enqueued.lock().unwrap().push(format!("volume {name}"));
    }
}

fn anns(a: &[&str]) -> Option<BTreeMap<String, String>> {
    (!a.is_empty()).then(|| {
        a.iter()
            .map(|k| {
                let (k, v) = k.split_once('=').unwrap_or((k, "yes"));
                (k.to_string(), v.to_string())
            })
            .collect()
    })
}

/// Upstream `newVolume`: name, capacity, claim UID and name it is bound to ("" none),
/// phase, reclaim policy, class, annotations (`key` means `key: yes`).
#[allow(clippy::too_many_arguments)]
fn new_volume(
    name: &str,
    capacity: &str,
    claim_uid: &str,
    claim_name: &str,
    phase: &str,
    policy: &str,
    class: &str,
    annotations: &[&str],
) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some("1".into()),
            annotations: anns(annotations),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([(
                "storage".to_string(),
                Quantity(capacity.into()),
            )])),
            access_modes: Some(vec!["ReadWriteOnce".into(), "ReadOnlyMany".into()]),
            persistent_volume_reclaim_policy: Some(policy.into()),
            storage_class_name: (!class.is_empty()).then(|| class.to_string()),
            claim_ref: (!claim_name.is_empty()).then(|| ObjectReference {
                kind: Some("PersistentVolumeClaim".into()),
                api_version: Some("v1".into()),
                namespace: Some(NS.into()),
                name: Some(claim_name.into()),
                uid: (!claim_uid.is_empty()).then(|| claim_uid.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: (!phase.is_empty()).then(|| phase.to_string()),
            ..Default::default()
        }),
    }
}

/// Upstream `newClaim`: name, UID, request, the volume it is bound to ("" none), phase,
/// class (`None`: unset), annotations.
fn new_claim(
    name: &str,
    uid: &str,
    request: &str,
    volume: &str,
    phase: &str,
    class: Option<&str>,
    annotations: &[&str],
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            uid: Some(uid.into()),
            resource_version: Some("1".into()),
            annotations: anns(annotations),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into(), "ReadOnlyMany".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(request.into()),
                )])),
                ..Default::default()
            }),
            volume_name: (!volume.is_empty()).then(|| volume.to_string()),
            storage_class_name: class.map(String::from),
            ..Default::default()
        }),
        status: Some(PersistentVolumeClaimStatus {
            phase: (!phase.is_empty()).then(|| phase.to_string()),
            ..Default::default()
        }),
    }
}

fn class(name: &str, provisioner: &str, mode: &str, default: bool) -> Arc<StorageClass> {
    Arc::new(StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: default.then(|| {
                BTreeMap::from([(ANN_DEFAULT_STORAGE_CLASS.to_string(), "true".to_string())])
            }),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: Some(mode.into()),
        ..Default::default()
    })
}

fn classes() -> Vec<Arc<StorageClass>> {
    vec![
        class("gold", "example.com/external", "Immediate", false),
        class(
            "wait",
            "example.com/external",
            "WaitForFirstConsumer",
            false,
        ),
        class("static", "kubernetes.io/no-provisioner", "Immediate", false),
    ]
}

struct World {
    binder: Binder<Fake>,
}

impl World {
    fn new(volumes: Vec<PersistentVolume>, claims: Vec<PersistentVolumeClaim>) -> World {
        Self::with(volumes, claims, classes(), Vec::new(), true)
    }

    fn with(
        volumes: Vec<PersistentVolume>,
        claims: Vec<PersistentVolumeClaim>,
        classes: Vec<Arc<StorageClass>>,
        pods: Vec<Arc<Pod>>,
        dynamic: bool,
    ) -> World {
        let fake = Fake {
            classes,
            pods,
            ..Default::default()
        };
        let mut vs = fake.volumes.lock().unwrap();
        for v in &volumes {
            vs.insert(v.metadata.name.clone().unwrap(), v.clone());
        }
        drop(vs);
        let mut cs = fake.claims.lock().unwrap();
        for c in &claims {
            cs.insert(ckey(c), c.clone());
        }
        drop(cs);
        let binder = Binder::new(fake, dynamic);
        binder.initialize(
            volumes.into_iter().map(Arc::new),
            claims.into_iter().map(Arc::new),
        );
        World { binder }
    }

    fn api(&self) -> &Fake {
        self.binder.api()
    }

    async fn sync_claim(&self, name: &str) -> Result<(), binder::BinderError> {
        let c = self.api().claim(name);
        self.binder.sync_claim(Arc::new(c)).await
    }

    async fn sync_volume(&self, name: &str) -> Result<(), binder::BinderError> {
        let v = self.api().volume(name);
        self.binder.sync_volume(Arc::new(v)).await
    }

    /// (claimRef name, claimRef uid, phase, annotations) of a volume.
    fn volume(&self, name: &str) -> (String, String, String, Vec<String>) {
        let v = self.api().volume(name);
        let r = v
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.clone())
            .unwrap_or_default();
        (
            r.name.unwrap_or_default(),
            r.uid.unwrap_or_default(),
            v.status.and_then(|s| s.phase).unwrap_or_default(),
            v.metadata
                .annotations
                .unwrap_or_default()
                .into_keys()
                .collect(),
        )
    }

    /// (volumeName, phase, annotations) of a claim.
    fn claim(&self, name: &str) -> (String, String, Vec<String>) {
        let c = self.api().claim(name);
        (
            c.spec.and_then(|s| s.volume_name).unwrap_or_default(),
            c.status.and_then(|s| s.phase).unwrap_or_default(),
            c.metadata
                .annotations
                .unwrap_or_default()
                .into_keys()
                .collect(),
        )
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const BOTH: [&str; 2] = [ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER];

#[tokio::test]
async fn sync_1_1_binds_a_matching_volume() {
    let w = World::new(
        vec![new_volume(
            "volume1-1",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim1-1",
            "uid1-1",
            "1Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-1").await.unwrap();
    assert_eq!(
        w.volume("volume1-1"),
        (
            "claim1-1".into(),
            "uid1-1".into(),
            "Bound".into(),
            strs(&[ANN_BOUND_BY_CONTROLLER])
        )
    );
    assert_eq!(
        w.claim("claim1-1"),
        ("volume1-1".into(), "Bound".into(), strs(&BOTH))
    );
    let c = w.api().claim("claim1-1");
    let status = c.status.unwrap();
    assert_eq!(status.capacity.unwrap()["storage"].0, "1Gi");
    assert_eq!(
        status.access_modes.unwrap(),
        ["ReadWriteOnce", "ReadOnlyMany"]
    );
    assert!(w.api().events().is_empty());
}

#[tokio::test]
async fn sync_1_2_no_volume_and_no_class() {
    let w = World::new(
        vec![new_volume(
            "volume1-2",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim("claim1-2", "uid1-2", "10Gi", "", "", None, &[])],
    );
    w.sync_claim("claim1-2").await.unwrap();
    assert_eq!(w.claim("claim1-2"), ("".into(), "Pending".into(), vec![]));
    assert_eq!(w.api().events(), ["Normal FailedBinding"]);
    assert_eq!(
        w.api().messages(),
        ["no persistent volumes available for this claim and no storage class is set"]
    );
    assert_eq!(w.volume("volume1-2").2, "Available");
}

#[tokio::test]
async fn sync_1_4_smallest_volume_wins() {
    let w = World::new(
        vec![
            new_volume("volume1-4a", "10Gi", "", "", "Available", "Retain", "", &[]),
            new_volume("volume1-4b", "2Gi", "", "", "Available", "Retain", "", &[]),
            new_volume("volume1-4c", "5Gi", "", "", "Available", "Retain", "", &[]),
        ],
        vec![new_claim(
            "claim1-4",
            "uid1-4",
            "1Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-4").await.unwrap();
    assert_eq!(w.claim("claim1-4").0, "volume1-4b");
    assert_eq!(w.volume("volume1-4a").2, "Available");
}

#[tokio::test]
async fn sync_1_5_and_1_6_volume_prebound_by_the_user() {
    for (case, uid) in [("1-5", ""), ("1-6", "uid")] {
        let w = World::new(
            vec![
                new_volume(
                    "volume-small",
                    "1Gi",
                    "",
                    "",
                    "Available",
                    "Retain",
                    "",
                    &[],
                ),
                new_volume(
                    "volume-pre",
                    "10Gi",
                    uid,
                    "claim",
                    "Available",
                    "Retain",
                    "",
                    &[],
                ),
            ],
            vec![new_claim("claim", "uid", "1Gi", "", "Pending", None, &[])],
        );
        w.sync_claim("claim").await.unwrap();
        // the pre-bound volume wins over the smaller one and keeps no annotation
        assert_eq!(
            w.volume("volume-pre"),
            ("claim".into(), "uid".into(), "Bound".into(), vec![]),
            "{case}"
        );
        assert_eq!(
            w.claim("claim"),
            ("volume-pre".into(), "Bound".into(), strs(&BOTH)),
            "{case}"
        );
    }
}

#[tokio::test]
async fn sync_1_7_volume_prebound_to_another_uid_is_skipped() {
    let w = World::new(
        vec![new_volume(
            "volume1-7",
            "10Gi",
            "uid1-777",
            "claim1-7",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim1-7",
            "uid1-7",
            "1Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-7").await.unwrap();
    assert_eq!(w.claim("claim1-7").1, "Pending");
    assert_eq!(w.api().events(), ["Normal FailedBinding"]);
}

#[tokio::test]
async fn sync_1_8_completes_a_binding_interrupted_after_the_volume() {
    // the volume was bound by the binder, which then crashed
    let w = World::new(
        vec![new_volume(
            "volume1-8",
            "1Gi",
            "uid1-8",
            "claim1-8",
            "Bound",
            "Retain",
            "",
            &[ANN_BOUND_BY_CONTROLLER],
        )],
        vec![new_claim(
            "claim1-8",
            "uid1-8",
            "1Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-8").await.unwrap();
    assert_eq!(
        w.claim("claim1-8"),
        ("volume1-8".into(), "Bound".into(), strs(&BOTH))
    );
}

#[tokio::test]
async fn sync_1_11_and_1_12_selector() {
    let mut labelled = new_volume("volume-l", "10Gi", "", "", "Available", "Retain", "", &[]);
    labelled.metadata.labels = Some(BTreeMap::from([("app".to_string(), "db".to_string())]));
    let plain = new_volume("volume-p", "1Gi", "", "", "Available", "Retain", "", &[]);
    let mut claim = new_claim("claim", "uid", "1Gi", "", "Pending", None, &[]);
    claim.spec.as_mut().unwrap().selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), "db".to_string())])),
            ..Default::default()
        },
    );
    let w = World::new(vec![labelled, plain.clone()], vec![claim.clone()]);
    w.sync_claim("claim").await.unwrap();
    assert_eq!(w.claim("claim").0, "volume-l", "1-11: the labelled volume");
    let w = World::new(vec![plain], vec![claim]);
    w.sync_claim("claim").await.unwrap();
    assert_eq!(w.claim("claim").1, "Pending", "1-12: no labelled volume");
}

#[tokio::test]
async fn sync_1_13_delayed_binding_waits_for_the_first_consumer() {
    let w = World::new(
        vec![new_volume(
            "volume1-13",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "wait",
            &[],
        )],
        vec![new_claim(
            "claim1-13",
            "uid1-13",
            "1Gi",
            "",
            "",
            Some("wait"),
            &[],
        )],
    );
    w.sync_claim("claim1-13").await.unwrap();
    assert_eq!(w.claim("claim1-13"), ("".into(), "Pending".into(), vec![]));
    assert_eq!(w.volume("volume1-13").2, "Available");
    assert_eq!(w.api().events(), ["Normal WaitForFirstConsumer"]);
    assert_eq!(
        w.api().messages(),
        ["waiting for first consumer to be created before binding"]
    );
}

fn pod(name: &str, claim: &str, node: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            volumes: Some(vec![Volume {
                name: "data".into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    })
}

#[tokio::test]
async fn delayed_binding_names_the_unscheduled_pods() {
    let claim = new_claim("claim", "uid", "1Gi", "", "", Some("wait"), &[]);
    let w = World::with(
        vec![],
        vec![claim.clone()],
        classes(),
        vec![
            pod("pod-a", "claim", ""),
            pod("pod-s", "claim", "node-1"),
            pod("pod-o", "other", ""),
        ],
        true,
    );
    w.sync_claim("claim").await.unwrap();
    assert_eq!(w.api().events(), ["Normal WaitForPodScheduled"]);
    assert_eq!(
        w.api().messages(),
        ["waiting for pod pod-a to be scheduled"]
    );
    let w = World::with(
        vec![],
        vec![claim],
        classes(),
        vec![pod("pod-b", "claim", ""), pod("pod-a", "claim", "")],
        true,
    );
    w.sync_claim("claim").await.unwrap();
    assert_eq!(
        w.api().messages(),
        ["waiting for pods pod-a,pod-b to be scheduled"]
    );
}

#[tokio::test]
async fn sync_1_14_prebound_volume_binds_despite_delayed_binding() {
    let w = World::new(
        vec![new_volume(
            "volume1-14",
            "1Gi",
            "",
            "claim1-14",
            "Available",
            "Retain",
            "wait",
            &[],
        )],
        vec![new_claim(
            "claim1-14",
            "uid1-14",
            "1Gi",
            "",
            "",
            Some("wait"),
            &[],
        )],
    );
    w.sync_claim("claim1-14").await.unwrap();
    assert_eq!(w.claim("claim1-14").1, "Bound");
    assert!(w.api().events().is_empty());
}

#[tokio::test]
async fn sync_1_15_claim_prebound_by_the_user() {
    let w = World::new(
        vec![new_volume(
            "volume1-15",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim1-15",
            "uid1-15",
            "1Gi",
            "volume1-15",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-15").await.unwrap();
    // the volume gets bound-by-controller, the claim only bind-completed
    assert_eq!(
        w.volume("volume1-15"),
        (
            "claim1-15".into(),
            "uid1-15".into(),
            "Bound".into(),
            strs(&[ANN_BOUND_BY_CONTROLLER])
        )
    );
    assert_eq!(
        w.claim("claim1-15"),
        (
            "volume1-15".into(),
            "Bound".into(),
            strs(&[ANN_BIND_COMPLETED])
        )
    );
}

#[tokio::test]
async fn sync_1_17_skips_volumes_not_available() {
    let w = World::new(
        vec![new_volume(
            "volume1-17",
            "1Gi",
            "",
            "",
            "Released",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim1-17",
            "uid1-17",
            "1Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim1-17").await.unwrap();
    assert_eq!(w.claim("claim1-17").1, "Pending");
    assert_eq!(w.api().events(), ["Normal FailedBinding"]);
}

#[tokio::test]
async fn sync_2_1_named_volume_missing() {
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim2-1",
            "uid2-1",
            "10Gi",
            "volume2-1",
            "",
            None,
            &[],
        )],
    );
    w.sync_claim("claim2-1").await.unwrap();
    assert_eq!(w.claim("claim2-1").1, "Pending");
    assert!(w.api().events().is_empty());
}

#[tokio::test]
async fn sync_2_4_named_volume_does_not_fit() {
    let w = World::new(
        vec![new_volume(
            "volume2-4",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim2-4",
            "uid2-4",
            "10Gi",
            "volume2-4",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_claim("claim2-4").await.unwrap();
    assert_eq!(w.claim("claim2-4").1, "Pending");
    assert_eq!(w.api().events(), ["Warning VolumeMismatch"]);
    assert_eq!(
        w.api().messages(),
        ["Cannot bind to requested volume \"volume2-4\": requested PV is too small"]
    );
    assert_eq!(w.volume("volume2-4").0, "");
}

#[tokio::test]
async fn sync_2_7_and_2_8_named_volume_bound_elsewhere() {
    let volume = new_volume(
        "volume2-7",
        "1Gi",
        "uid2-777",
        "claim2-777",
        "Bound",
        "Retain",
        "",
        &[],
    );
    let w = World::new(
        vec![volume.clone()],
        vec![new_claim(
            "claim2-7",
            "uid2-7",
            "1Gi",
            "volume2-7",
            "",
            None,
            &[],
        )],
    );
    w.sync_claim("claim2-7").await.unwrap();
    assert_eq!(w.claim("claim2-7").1, "Pending");
    assert_eq!(w.api().events(), ["Warning FailedBinding"]);
    assert_eq!(
        w.api().messages(),
        ["volume \"volume2-7\" already bound to a different claim."]
    );
    // the binder chose that volume itself: an invalid binding
    let w = World::new(
        vec![volume],
        vec![new_claim(
            "claim2-7",
            "uid2-7",
            "1Gi",
            "volume2-7",
            "Pending",
            None,
            &[ANN_BOUND_BY_CONTROLLER],
        )],
    );
    let err = w.sync_claim("claim2-7").await.unwrap_err().to_string();
    assert_eq!(
        err,
        "invalid binding of claim \"default/claim2-7\" to volume \"volume2-7\": volume already claimed by \"default/claim2-777\""
    );
}

#[tokio::test]
async fn sync_3_x_bound_claims() {
    // 3-1: the claim lost its volumeName
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim3-1", "uid3-1", "10Gi", "", "Bound", None, &BOTH,
        )],
    );
    w.sync_claim("claim3-1").await.unwrap();
    assert_eq!(w.claim("claim3-1").1, "Lost");
    assert_eq!(w.api().events(), ["Warning ClaimLost"]);
    assert_eq!(
        w.api().messages(),
        ["Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"]
    );
    // a second sync neither writes nor reports again
    w.sync_claim("claim3-1").await.unwrap();
    assert_eq!(w.api().events().len(), 1);

    // 3-2: the volume is gone
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim3-2",
            "uid3-2",
            "10Gi",
            "volume3-2",
            "Bound",
            None,
            &BOTH,
        )],
    );
    w.sync_claim("claim3-2").await.unwrap();
    assert_eq!(w.claim("claim3-2").1, "Lost");
    assert_eq!(
        w.api().messages(),
        ["Bound claim has lost its PersistentVolume. Data on the volume is lost!"]
    );

    // 3-3: the volume came unbound: bound again
    let w = World::new(
        vec![new_volume(
            "volume3-3",
            "10Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim3-3",
            "uid3-3",
            "10Gi",
            "volume3-3",
            "Pending",
            None,
            &BOTH,
        )],
    );
    w.sync_claim("claim3-3").await.unwrap();
    assert_eq!(w.volume("volume3-3").2, "Bound");
    assert_eq!(w.claim("claim3-3").1, "Bound");

    // 3-5: the volume is bound to another claim
    let w = World::new(
        vec![new_volume(
            "volume3-5",
            "10Gi",
            "uid3-555",
            "claim3-555",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim3-5",
            "uid3-5",
            "10Gi",
            "volume3-5",
            "Bound",
            None,
            &BOTH,
        )],
    );
    w.sync_claim("claim3-5").await.unwrap();
    assert_eq!(w.claim("claim3-5").1, "Lost");
    assert_eq!(w.api().events(), ["Warning ClaimMisbound"]);
}

#[tokio::test]
async fn sync_4_x_volumes() {
    // 4-1: unbound → Available
    let w = World::new(
        vec![new_volume(
            "volume4-1",
            "10Gi",
            "",
            "",
            "Pending",
            "Retain",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume4-1").await.unwrap();
    assert_eq!(w.volume("volume4-1").2, "Available");

    // 4-2: pre-bound by name only → Available
    let w = World::new(
        vec![new_volume(
            "volume4-2",
            "10Gi",
            "",
            "claim4-2",
            "Pending",
            "Retain",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume4-2").await.unwrap();
    assert_eq!(w.volume("volume4-2").2, "Available");

    // 4-3: the claim is gone → Released, and Retain keeps it
    let w = World::new(
        vec![new_volume(
            "volume4-3",
            "10Gi",
            "uid4-3",
            "claim4-3",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume4-3").await.unwrap();
    assert_eq!(
        w.volume("volume4-3"),
        (
            "claim4-3".into(),
            "uid4-3".into(),
            "Released".into(),
            vec![]
        )
    );
    assert!(w.api().events().is_empty());

    // 4-4: a claim of that name with another UID → Released
    let w = World::new(
        vec![new_volume(
            "volume4-4",
            "10Gi",
            "uid4-4",
            "claim4-4",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim4-4",
            "uid4-4-x",
            "10Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_volume("volume4-4").await.unwrap();
    assert_eq!(w.volume("volume4-4").2, "Released");

    // 4-5: the claim is not bound yet → its sync is asked for
    let w = World::new(
        vec![new_volume(
            "volume4-5",
            "10Gi",
            "uid4-5",
            "claim4-5",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim4-5",
            "uid4-5",
            "10Gi",
            "",
            "Pending",
            None,
            &[],
        )],
    );
    w.sync_volume("volume4-5").await.unwrap();
    assert_eq!(
        *w.api().enqueued.lock().unwrap(),
        ["claim default/claim4-5"]
    );

    // 4-7: bound both ways → Bound
    let w = World::new(
        vec![new_volume(
            "volume4-7",
            "10Gi",
            "uid4-7",
            "claim4-7",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim4-7",
            "uid4-7",
            "10Gi",
            "volume4-7",
            "Bound",
            None,
            &BOTH,
        )],
    );
    w.sync_volume("volume4-7").await.unwrap();
    assert_eq!(w.volume("volume4-7").2, "Bound");

    // 4-8: bound by the binder, the claim went elsewhere → unbound
    let w = World::new(
        vec![new_volume(
            "volume4-8",
            "10Gi",
            "uid4-8",
            "claim4-8",
            "Bound",
            "Retain",
            "",
            &[ANN_BOUND_BY_CONTROLLER],
        )],
        vec![new_claim(
            "claim4-8",
            "uid4-8",
            "10Gi",
            "volume4-8-x",
            "Bound",
            None,
            &BOTH,
        )],
    );
    w.sync_volume("volume4-8").await.unwrap();
    assert_eq!(
        w.volume("volume4-8"),
        ("".into(), "".into(), "Available".into(), vec![])
    );

    // 4-9: pre-bound by the user, the claim went elsewhere → only the UID goes
    let w = World::new(
        vec![new_volume(
            "volume4-9",
            "10Gi",
            "uid4-9",
            "claim4-9",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim4-9",
            "uid4-9",
            "10Gi",
            "volume4-9-x",
            "Bound",
            None,
            &BOTH,
        )],
    );
    w.sync_volume("volume4-9").await.unwrap();
    assert_eq!(
        w.volume("volume4-9"),
        ("claim4-9".into(), "".into(), "Available".into(), vec![])
    );
}

#[tokio::test]
async fn delete_8_x_reclaim() {
    // an external provisioner's volume: Released, left to the provisioner
    let provisioned = format!("{ANN_DYNAMICALLY_PROVISIONED}=example.com/external");
    let w = World::new(
        vec![new_volume(
            "volume8-1",
            "1Gi",
            "uid8-1",
            "claim8-1",
            "Bound",
            "Delete",
            "gold",
            &[&provisioned, ANN_BOUND_BY_CONTROLLER],
        )],
        vec![],
    );
    w.sync_volume("volume8-1").await.unwrap();
    assert_eq!(w.volume("volume8-1").2, "Released");
    assert!(w.api().events().is_empty());

    // no deleter: Failed
    let w = World::new(
        vec![new_volume(
            "volume8-2",
            "1Gi",
            "uid8-2",
            "claim8-2",
            "Bound",
            "Delete",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume8-2").await.unwrap();
    assert_eq!(w.volume("volume8-2").2, "Failed");
    assert_eq!(w.api().events(), ["Warning VolumeFailedDelete"]);
    assert_eq!(
        w.api().messages(),
        ["error getting deleter volume plugin for volume \"volume8-2\": no deletable volume plugin matched"]
    );

    // a provisioned volume whose claim got bound to another volume: Released
    let w = World::new(
        vec![new_volume(
            "volume8-3",
            "1Gi",
            "uid8-3",
            "claim8-3",
            "Bound",
            "Delete",
            "gold",
            &[&provisioned],
        )],
        vec![new_claim(
            "claim8-3",
            "uid8-3",
            "1Gi",
            "volume8-3-x",
            "Bound",
            Some("gold"),
            &BOTH,
        )],
    );
    w.sync_volume("volume8-3").await.unwrap();
    assert_eq!(w.volume("volume8-3").2, "Released");

    // Recycle: no recycler
    let w = World::new(
        vec![new_volume(
            "volume8-4",
            "1Gi",
            "uid8-4",
            "claim8-4",
            "Bound",
            "Recycle",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume8-4").await.unwrap();
    assert_eq!(w.volume("volume8-4").2, "Failed");
    assert_eq!(
        w.api().messages(),
        ["No recycler plugin found for the volume!"]
    );

    // an unknown policy
    let w = World::new(
        vec![new_volume(
            "volume8-5",
            "1Gi",
            "uid8-5",
            "claim8-5",
            "Bound",
            "Keep",
            "",
            &[],
        )],
        vec![],
    );
    w.sync_volume("volume8-5").await.unwrap();
    assert_eq!(w.api().events(), ["Warning VolumeUnknownReclaimPolicy"]);
}

#[tokio::test]
async fn provision_11_x_external_provisioner() {
    // an Immediate class of an external provisioner: both annotations and the event;
    // the status is left alone
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim11-1",
            "uid11-1",
            "1Gi",
            "",
            "",
            Some("gold"),
            &[],
        )],
    );
    w.sync_claim("claim11-1").await.unwrap();
    let c = w.api().claim("claim11-1");
    let a = c.metadata.annotations.unwrap();
    assert_eq!(a[ANN_STORAGE_PROVISIONER], "example.com/external");
    assert_eq!(a[ANN_BETA_STORAGE_PROVISIONER], "example.com/external");
    assert_eq!(c.status.unwrap().phase, None);
    assert_eq!(w.api().events(), ["Normal ExternalProvisioning"]);
    assert_eq!(
        w.api().messages(),
        ["Waiting for a volume to be created either by the external provisioner 'example.com/external' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."]
    );
    // a second sync writes nothing more and reports again
    let rv = w.api().claim("claim11-1").metadata.resource_version;
    w.sync_claim("claim11-1").await.unwrap();
    assert_eq!(w.api().claim("claim11-1").metadata.resource_version, rv);
    assert_eq!(w.api().events().len(), 2);

    // the class does not exist
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim11-2",
            "uid11-2",
            "1Gi",
            "",
            "",
            Some("missing"),
            &[],
        )],
    );
    w.sync_claim("claim11-2").await.unwrap();
    assert_eq!(w.api().events(), ["Warning ProvisioningFailed"]);
    assert_eq!(
        w.api().messages(),
        ["storageclass.storage.k8s.io \"missing\" not found"]
    );

    // a static-only class
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim11-3",
            "uid11-3",
            "1Gi",
            "",
            "",
            Some("static"),
            &[],
        )],
    );
    w.sync_claim("claim11-3").await.unwrap();
    assert_eq!(
        w.api().messages(),
        ["no volume plugin matched name: kubernetes.io/no-provisioner"]
    );

    // WaitForFirstConsumer with a selected node: provisioning starts
    let selected = format!("{ANN_SELECTED_NODE}=node-1");
    let w = World::new(
        vec![],
        vec![new_claim(
            "claim11-4",
            "uid11-4",
            "1Gi",
            "",
            "",
            Some("wait"),
            &[&selected],
        )],
    );
    w.sync_claim("claim11-4").await.unwrap();
    assert_eq!(w.api().events(), ["Normal ExternalProvisioning"]);
    assert!(w
        .api()
        .claim("claim11-4")
        .metadata
        .annotations
        .unwrap()
        .contains_key(ANN_STORAGE_PROVISIONER));
}

#[tokio::test]
async fn provisioned_volume_gets_bound() {
    // the provisioner's volume names the claim with its UID: the claim takes it
    let provisioned = format!("{ANN_DYNAMICALLY_PROVISIONED}=example.com/external");
    let w = World::new(
        vec![new_volume(
            "pvc-uid12",
            "1Gi",
            "uid12",
            "claim12",
            "Available",
            "Delete",
            "gold",
            &[&provisioned, ANN_BOUND_BY_CONTROLLER],
        )],
        vec![new_claim(
            "claim12",
            "uid12",
            "1Gi",
            "",
            "",
            Some("gold"),
            &[],
        )],
    );
    w.sync_claim("claim12").await.unwrap();
    assert_eq!(
        w.claim("claim12"),
        ("pvc-uid12".into(), "Bound".into(), strs(&BOTH))
    );
    assert_eq!(w.volume("pvc-uid12").2, "Bound");
    assert!(w.api().events().is_empty());
}

#[tokio::test]
async fn disabled_dynamic_provisioning_does_nothing() {
    let w = World::with(
        vec![],
        vec![new_claim("claim", "uid", "1Gi", "", "", Some("gold"), &[])],
        classes(),
        vec![],
        false,
    );
    w.sync_claim("claim").await.unwrap();
    assert_eq!(w.claim("claim"), ("".into(), "".into(), vec![]));
    assert!(w.api().events().is_empty());
}

#[tokio::test]
async fn retroactive_default_storage_class() {
    let mut cls = classes();
    cls.push(class("standard", "example.com/external", "Immediate", true));
    // no class at all: the default one is set
    let w = World::with(
        vec![],
        vec![new_claim("claim", "uid", "1Gi", "", "", None, &[])],
        cls.clone(),
        vec![],
        true,
    );
    w.sync_claim("claim").await.unwrap();
    let c = w.api().claim("claim");
    assert_eq!(
        c.spec.unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    assert!(w.api().events().is_empty());
    // an explicit "" is left alone
    let w = World::with(
        vec![],
        vec![new_claim("claim", "uid", "1Gi", "", "", Some(""), &[])],
        cls,
        vec![],
        true,
    );
    w.sync_claim("claim").await.unwrap();
    assert_eq!(
        w.api()
            .claim("claim")
            .spec
            .unwrap()
            .storage_class_name
            .as_deref(),
        Some("")
    );
    assert_eq!(w.api().events(), ["Normal FailedBinding"]);
}

#[test]
fn newest_default_class_wins() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    let at = |c: Arc<StorageClass>, secs: i64| {
        let mut c = (*c).clone();
        c.metadata.creation_timestamp = Some(Time(Timestamp::from_second(secs).unwrap()));
        Arc::new(c)
    };
    let old = at(class("old", "p", "Immediate", true), 100);
    let new = at(class("new", "p", "Immediate", true), 200);
    let plain = at(class("plain", "p", "Immediate", false), 300);
    let got = binder::default_class(&[old, new, plain]).unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("new"));
    assert!(binder::default_class(&classes()).is_none());
}

#[tokio::test]
async fn an_older_object_than_the_cached_one_is_ignored() {
    let w = World::new(
        vec![new_volume(
            "volume",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim("claim", "uid", "1Gi", "", "Pending", None, &[])],
    );
    w.sync_claim("claim").await.unwrap();
    // the informer still delivers the claim as it was before the binder's writes
    let stale = Arc::new(new_claim("claim", "uid", "1Gi", "", "Pending", None, &[]));
    let rv = w.api().claim("claim").metadata.resource_version;
    w.binder
        .handle_claim(NS, "claim", Some(stale))
        .await
        .unwrap();
    assert_eq!(
        w.api().claim("claim").metadata.resource_version,
        rv,
        "no write"
    );
    assert_eq!(w.claim("claim").1, "Bound");
}

#[tokio::test]
async fn a_stale_cache_ends_in_a_conflict() {
    let w = World::new(
        vec![new_volume(
            "volume",
            "1Gi",
            "",
            "",
            "Available",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim("claim", "uid", "1Gi", "", "Pending", None, &[])],
    );
    // someone else changed the volume behind the binder's back
    w.api()
        .volumes
        .lock()
        .unwrap()
        .get_mut("volume")
        .unwrap()
        .metadata
        .resource_version = Some("7".into());
    let err = w.sync_claim("claim").await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(w.claim("claim").0, "", "nothing was bound");
}

#[tokio::test]
async fn deleted_objects_wake_their_partner() {
    let w = World::new(
        vec![new_volume(
            "volume",
            "1Gi",
            "uid",
            "claim",
            "Bound",
            "Retain",
            "",
            &[],
        )],
        vec![new_claim(
            "claim", "uid", "1Gi", "volume", "Bound", None, &BOTH,
        )],
    );
    w.binder.handle_claim(NS, "claim", None).await.unwrap();
    w.binder.handle_volume("volume", None).await.unwrap();
    assert_eq!(
        *w.api().enqueued.lock().unwrap(),
        ["volume volume", "claim default/claim"]
    );
    assert!(w.binder.cached_claim("default/claim").is_none());
    assert!(w.binder.cached_volume("volume").is_none());
}
