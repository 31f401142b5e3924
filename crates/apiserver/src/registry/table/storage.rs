//! Printers of storage: PersistentVolumes and PersistentVolumeClaims (core `v1`) and the
//! `storage.k8s.io` kinds.

use serde_json::{json, Value};

use super::{
    age, arr, boolean, deleting, field, flag, integer, name, opt_s, s, string, text, wide, Column,
    Printer, Row, AGE, NAME,
};

pub(super) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    Some(match (group, kind) {
        ("", "PersistentVolume") => &PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &PERSISTENT_VOLUME_CLAIM,
        ("storage.k8s.io", "StorageClass") => &STORAGE_CLASS,
        ("storage.k8s.io", "CSIDriver") => &CSI_DRIVER,
        ("storage.k8s.io", "CSINode") => &CSI_NODE,
        ("storage.k8s.io", "CSIStorageCapacity") => &CSI_STORAGE_CAPACITY,
        ("storage.k8s.io", "VolumeAttachment") => &VOLUME_ATTACHMENT,
        ("storage.k8s.io", "VolumeAttributesClass") => &VOLUME_ATTRIBUTES_CLASS,
        _ => return None,
    })
}

/// `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` in that order, each once.
fn access_modes(v: &Value, ptr: &str) -> String {
    let modes: Vec<&str> = arr(v, ptr).iter().filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.contains(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

const BETA_STORAGE_CLASS: &str = "/metadata/annotations/volume.beta.kubernetes.io~1storage-class";

fn storage_class(v: &Value) -> String {
    opt_s(v, BETA_STORAGE_CLASS)
        .or_else(|| opt_s(v, "/spec/storageClassName"))
        .unwrap_or("")
        .to_string()
}

fn phase_or_terminating(v: &Value) -> String {
    if deleting(v) {
        "Terminating".into()
    } else {
        s(v, "/status/phase").to_string()
    }
}

/// A quantity as stored (canonical), `0` when absent (Go's zero `Quantity`).
fn quantity(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .map(super::int_or_string)
        .filter(|q| !q.is_empty())
        .unwrap_or_else(|| "0".into())
}

fn unset(v: &Value, ptr: &str) -> Value {
    json!(opt_s(v, ptr).unwrap_or("<unset>"))
}

const PV_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeSpec";
const PV_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeStatus";

/// PersistentVolumes.
pub static PERSISTENT_VOLUME: Printer = Printer {
    columns: &[
        NAME,
        string("Capacity", field(PV_SPEC, "capacity")),
        string("Access Modes", field(PV_SPEC, "accessModes")),
        string(
            "Reclaim Policy",
            field(PV_SPEC, "persistentVolumeReclaimPolicy"),
        ),
        string("Status", field(PV_STATUS, "phase")),
        string("Claim", field(PV_SPEC, "claimRef")),
        string("StorageClass", text("StorageClass of the pv")),
        string(
            "VolumeAttributesClass",
            text("VolumeAttributesClass of the pv"),
        ),
        string("Reason", field(PV_STATUS, "reason")),
        AGE,
        wide(string("VolumeMode", field(PV_SPEC, "volumeMode"))),
    ],
    print: |v, now| {
        let claim = match v.pointer("/spec/claimRef").filter(|c| c.is_object()) {
            Some(c) => format!(
                "{}/{}",
                c.get("namespace").and_then(Value::as_str).unwrap_or(""),
                c.get("name").and_then(Value::as_str).unwrap_or("")
            ),
            None => String::new(),
        };
        Row::of(vec![
            name(v),
            json!(quantity(v, "/spec/capacity/storage")),
            json!(access_modes(v, "/spec/accessModes")),
            json!(s(v, "/spec/persistentVolumeReclaimPolicy")),
            json!(phase_or_terminating(v)),
            json!(claim),
            json!(storage_class(v)),
            unset(v, "/spec/volumeAttributesClassName"),
            json!(s(v, "/status/reason")),
            age(v, now),
            unset(v, "/spec/volumeMode"),
        ])
    },
};

const PVC_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";
const PVC_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeClaimStatus";

/// PersistentVolumeClaims.
pub static PERSISTENT_VOLUME_CLAIM: Printer = Printer {
    columns: &[
        NAME,
        string("Status", field(PVC_STATUS, "phase")),
        string("Volume", field(PVC_SPEC, "volumeName")),
        string("Capacity", field(PVC_STATUS, "capacity")),
        string("Access Modes", field(PVC_STATUS, "accessModes")),
        string("StorageClass", text("StorageClass of the pvc")),
        string(
            "VolumeAttributesClass",
            text("VolumeAttributesClass of the pvc"),
        ),
        AGE,
        wide(string("VolumeMode", field(PVC_SPEC, "volumeMode"))),
    ],
    print: |v, now| {
        let volume = s(v, "/spec/volumeName");
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (
                quantity(v, "/status/capacity/storage"),
                access_modes(v, "/status/accessModes"),
            )
        };
        Row::of(vec![
            name(v),
            json!(phase_or_terminating(v)),
            json!(volume),
            json!(capacity),
            json!(modes),
            json!(storage_class(v)),
            unset(v, "/spec/volumeAttributesClassName"),
            age(v, now),
            unset(v, "/spec/volumeMode"),
        ])
    },
};

const STORAGE_CLASS_DEF: &str = "io.k8s.api.storage.v1.StorageClass";

/// The value of annotation `key` is `true`.
fn annotation_true(v: &Value, key: &str) -> bool {
    v.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        == Some("true")
}

/// StorageClasses.
pub static STORAGE_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string("Provisioner", field(STORAGE_CLASS_DEF, "provisioner")),
        string("ReclaimPolicy", field(STORAGE_CLASS_DEF, "reclaimPolicy")),
        string(
            "VolumeBindingMode",
            field(STORAGE_CLASS_DEF, "volumeBindingMode"),
        ),
        string(
            "AllowVolumeExpansion",
            field(STORAGE_CLASS_DEF, "allowVolumeExpansion"),
        ),
        AGE,
    ],
    print: |v, now| {
        let mut n = s(v, "/metadata/name").to_string();
        if annotation_true(v, "storageclass.kubernetes.io/is-default-class")
            || annotation_true(v, "storageclass.beta.kubernetes.io/is-default-class")
        {
            n.push_str(" (default)");
        }
        Row::of(vec![
            json!(n),
            json!(s(v, "/provisioner")),
            json!(opt_s(v, "/reclaimPolicy").unwrap_or("Delete")),
            json!(opt_s(v, "/volumeBindingMode").unwrap_or("Immediate")),
            json!(flag(v, "/allowVolumeExpansion")),
            age(v, now),
        ])
    },
};

const CSI_DRIVER_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";

/// CSIDrivers.
pub static CSI_DRIVER: Printer = Printer {
    columns: &[
        NAME,
        boolean("AttachRequired", field(CSI_DRIVER_SPEC, "attachRequired")),
        boolean("PodInfoOnMount", field(CSI_DRIVER_SPEC, "podInfoOnMount")),
        boolean("StorageCapacity", field(CSI_DRIVER_SPEC, "storageCapacity")),
        string("TokenRequests", field(CSI_DRIVER_SPEC, "tokenRequests")),
        boolean(
            "RequiresRepublish",
            field(CSI_DRIVER_SPEC, "requiresRepublish"),
        ),
        string("Modes", field(CSI_DRIVER_SPEC, "volumeLifecycleModes")),
        AGE,
    ],
    print: |v, now| {
        let modes: Vec<&str> = arr(v, "/spec/volumeLifecycleModes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let tokens = match v.pointer("/spec/tokenRequests").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .map(|t| s(t, "/audience"))
                .collect::<Vec<_>>()
                .join(","),
            None => "<unset>".into(),
        };
        Row::of(vec![
            name(v),
            json!(v
                .pointer("/spec/attachRequired")
                .and_then(Value::as_bool)
                .unwrap_or(true)),
            json!(flag(v, "/spec/podInfoOnMount")),
            json!(flag(v, "/spec/storageCapacity")),
            json!(tokens),
            json!(flag(v, "/spec/requiresRepublish")),
            json!(if modes.is_empty() {
                "<none>".to_string()
            } else {
                modes.join(",")
            }),
            age(v, now),
        ])
    },
};

/// CSINodes.
pub static CSI_NODE: Printer = Printer {
    columns: &[
        NAME,
        integer(
            "Drivers",
            text("Drivers indicates the number of CSI drivers registered on the node"),
        ),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(arr(v, "/spec/drivers").len()),
            age(v, now),
        ])
    },
};

const CAPACITY_DEF: &str = "io.k8s.api.storage.v1.CSIStorageCapacity";

/// CSIStorageCapacities (no age column upstream).
pub static CSI_STORAGE_CAPACITY: Printer = Printer {
    columns: &[
        NAME,
        string("StorageClassName", field(CAPACITY_DEF, "storageClassName")),
        string("Capacity", field(CAPACITY_DEF, "capacity")),
    ],
    print: |v, _| {
        let capacity = v
            .get("capacity")
            .filter(|c| !c.is_null())
            .map_or_else(|| "<unset>".to_string(), super::int_or_string);
        Row::of(vec![
            name(v),
            json!(s(v, "/storageClassName")),
            json!(capacity),
        ])
    },
};

/// VolumeAttachments.
pub static VOLUME_ATTACHMENT: Printer = Printer {
    columns: &[
        NAME,
        Column {
            format: "name",
            ..string(
                "Attacher",
                field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "attacher"),
            )
        },
        string(
            "PV",
            field(
                "io.k8s.api.storage.v1.VolumeAttachmentSource",
                "persistentVolumeName",
            ),
        ),
        string(
            "Node",
            field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "nodeName"),
        ),
        boolean(
            "Attached",
            field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached"),
        ),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(s(v, "/spec/attacher")),
            json!(s(v, "/spec/source/persistentVolumeName")),
            json!(s(v, "/spec/nodeName")),
            json!(flag(v, "/status/attached")),
            age(v, now),
        ])
    },
};

/// VolumeAttributesClasses.
pub static VOLUME_ATTRIBUTES_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string(
            "DriverName",
            field("io.k8s.api.storage.v1.VolumeAttributesClass", "driverName"),
        ),
        AGE,
    ],
    print: |v, now| {
        let mut n = s(v, "/metadata/name").to_string();
        if annotation_true(
            v,
            "volumeattributesclass.alpha.kubernetes.io/is-default-class",
        ) {
            n.push_str(" (default)");
        }
        Row::of(vec![json!(n), json!(s(v, "/driverName")), age(v, now)])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::time::parse_time;

    fn now() -> chrono::DateTime<chrono::Utc> {
        parse_time("2026-01-10T12:00:00Z").expect("time")
    }

    #[test]
    fn volumes_and_claims() {
        let pv = json!({"metadata": {"name": "pv1", "deletionTimestamp": "2026-01-10T11:00:00Z"},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "c"},
                "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}});
        let cells = (PERSISTENT_VOLUME.print)(&pv, now()).cells;
        assert_eq!(
            cells[1..9],
            [
                json!("5Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Terminating"),
                json!("ns/c"),
                json!("fast"),
                json!("<unset>"),
                json!("")
            ]
        );
        assert_eq!(cells[10], json!("Filesystem"));

        let pending = json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}});
        let cells = (PERSISTENT_VOLUME_CLAIM.print)(&pending, now()).cells;
        assert_eq!(
            cells[1..6],
            [json!("Pending"), json!(""), json!(""), json!(""), json!("")]
        );
        let bound = json!({"metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"volumeName": "pv1", "storageClassName": "new"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
        let cells = (PERSISTENT_VOLUME_CLAIM.print)(&bound, now()).cells;
        assert_eq!(
            cells[2..6],
            [json!("pv1"), json!("1Gi"), json!("RWO"), json!("old")]
        );
    }

    #[test]
    fn storage_classes() {
        let sc = json!({"metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "csi.example.com"});
        let cells = (STORAGE_CLASS.print)(&sc, now()).cells;
        assert_eq!(
            cells[..5],
            [
                json!("std (default)"),
                json!("csi.example.com"),
                json!("Delete"),
                json!("Immediate"),
                json!(false)
            ]
        );
    }
}
