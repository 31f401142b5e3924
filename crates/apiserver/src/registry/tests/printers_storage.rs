//! Printers of the kinds once in `table/storage.rs`, cell by cell.

use super::printer;
use crate::registry::table::prelude::*;

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
    let cells = (printer("", "PersistentVolume").print)(&pv, now()).cells;
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
    let cells = (printer("", "PersistentVolumeClaim").print)(&pending, now()).cells;
    assert_eq!(
        cells[1..6],
        [json!("Pending"), json!(""), json!(""), json!(""), json!("")]
    );
    let bound = json!({"metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
        "spec": {"volumeName": "pv1", "storageClassName": "new"},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
    let cells = (printer("", "PersistentVolumeClaim").print)(&bound, now()).cells;
    assert_eq!(
        cells[2..6],
        [json!("pv1"), json!("1Gi"), json!("RWO"), json!("old")]
    );
}

#[test]
fn storage_classes() {
    let sc = json!({"metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "csi.example.com"});
    let cells = (printer("storage.k8s.io", "StorageClass").print)(&sc, now()).cells;
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
