//! The attach/detach controller's decisions: names, the desired state and the plan.

use std::collections::HashMap;

use serde_json::json;

use super::*;

#[test]
fn names_follow_the_csi_plugin() {
    // sha256("vol-handle" + "csi.sim.coxswain.dev" + "node-1"), computed independently
    assert_eq!(
        attachment_name("vol-handle", "csi.sim.coxswain.dev", "node-1"),
        "csi-66e89013560f5f2ceac7c1d89e61277ad36f246b72010525bb11d17d243d0c96"
    );
    assert_eq!(
        unique_volume_name("csi.sim.coxswain.dev", "h1"),
        "kubernetes.io/csi/csi.sim.coxswain.dev^h1"
    );
}

#[derive(Default)]
struct World {
    pvcs: HashMap<(String, String), Arc<PersistentVolumeClaim>>,
    pvs: HashMap<String, Arc<PersistentVolume>>,
    drivers: HashMap<String, Arc<CSIDriver>>,
}

impl Lookup for World {
    fn pvc(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.pvcs.get(&(namespace.into(), name.into())).cloned()
    }
    fn pv(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.pvs.get(name).cloned()
    }
    fn csi_driver(&self, name: &str) -> Option<Arc<CSIDriver>> {
        self.drivers.get(name).cloned()
    }
}

impl World {
    fn bound(&mut self, claim: &str, pv: &str, driver: &str) {
        let uid = format!("uid-{claim}");
        self.pvcs.insert(
            ("ns".into(), claim.into()),
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": claim, "namespace": "ns", "uid": uid},
                    "spec": {"volumeName": pv}, "status": {"phase": "Bound"},
                }))
                .unwrap(),
            ),
        );
        self.pvs.insert(
            pv.into(),
            Arc::new(
                serde_json::from_value(json!({
                    "metadata": {"name": pv},
                    "spec": {"claimRef": {"namespace": "ns", "name": claim, "uid": uid},
                             "csi": {"driver": driver, "volumeHandle": format!("h-{pv}")}},
                }))
                .unwrap(),
            ),
        );
    }

    fn driver(&mut self, name: &str, attach_required: Option<bool>) {
        self.drivers.insert(
            name.into(),
            Arc::new(
                serde_json::from_value(json!({"metadata": {"name": name},
                    "spec": {"attachRequired": attach_required}}))
                .unwrap(),
            ),
        );
    }
}

fn pod(name: &str, claims: &[&str], phase: &str) -> Arc<Pod> {
    let volumes: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"nodeName": "node-1", "containers": [], "volumes": volumes},
            "status": {"phase": phase},
        }))
        .unwrap(),
    )
}

#[test]
fn desired_state_has_attachable_csi_volumes_of_running_pods() {
    let mut w = World::default();
    w.bound("a", "pv-a", "attach.example.com");
    w.bound("b", "pv-b", "noattach.example.com");
    w.bound("c", "pv-c", "unknown.example.com");
    w.bound("done", "pv-done", "attach.example.com");
    w.driver("attach.example.com", Some(true));
    w.driver("noattach.example.com", Some(false));
    let pods = vec![
        pod("p1", &["a", "b", "c", "missing"], "Running"),
        pod("p2", &["a"], "Pending"),
        pod("finished", &["done"], "Succeeded"),
    ];
    let d = desired_volumes(&pods, &w);
    let names: Vec<&str> = d.keys().map(String::as_str).collect();
    // no CSIDriver object: attach is required
    assert_eq!(
        names,
        [
            "kubernetes.io/csi/attach.example.com^h-pv-a",
            "kubernetes.io/csi/unknown.example.com^h-pv-c",
        ]
    );
    let a = &d["kubernetes.io/csi/attach.example.com^h-pv-a"];
    assert_eq!(a.pv, "pv-a");
    assert_eq!(
        a.pods,
        [
            ("ns".to_string(), "p1".to_string()),
            ("ns".to_string(), "p2".to_string())
        ]
    );
}

fn node(healthy: bool, in_use: &[&str]) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "node-1"},
        "status": {
            "conditions": [{"type": "Ready", "status": if healthy { "True" } else { "Unknown" }}],
            "volumesInUse": in_use,
        },
    }))
    .unwrap()
}

fn desired(pv: &str) -> (String, DesiredVolume) {
    let v = DesiredVolume {
        pv: pv.into(),
        driver: "d".into(),
        handle: format!("h-{pv}"),
        pods: vec![],
    };
    (unique_volume_name("d", &v.handle), v)
}

fn attachment(pv: &str, attached: bool) -> Attachment {
    Attachment {
        name: attachment_name(&format!("h-{pv}"), "d", "node-1"),
        unique: Some(unique_volume_name("d", &format!("h-{pv}"))),
        attached,
    }
}

#[test]
fn plan_attaches_reports_and_detaches_as_upstream() {
    let o = AttachDetachControllerOptions::default();
    let zero = |_: &str| Duration::ZERO;
    let want: BTreeMap<String, DesiredVolume> = [desired("new"), desired("up"), desired("coming")]
        .into_iter()
        .collect();
    let have = vec![
        attachment("up", true),
        attachment("coming", false),
        attachment("old", true),
    ];
    // the unused, unmounted volume is detached and no longer reported
    let p = plan(&node(true, &[]), &want, &have, &zero, &o);
    assert_eq!(p.attach, [unique_volume_name("d", "h-new")]);
    assert_eq!(p.detach, [attachment("old", true).name]);
    assert_eq!(p.volumes_attached, [unique_volume_name("d", "h-up")]);
    assert_eq!(p.recheck_after, None);

    // still mounted on a healthy node: it waits (and stays reported)
    let mounted = unique_volume_name("d", "h-old");
    let p = plan(&node(true, &[&mounted]), &want, &have, &zero, &o);
    assert!(p.detach.is_empty());
    assert_eq!(
        p.volumes_attached,
        [mounted.clone(), unique_volume_name("d", "h-up")]
    );
    assert_eq!(p.recheck_after, None);

    // on an unhealthy node the wait ends after maxWaitForUnmountDuration
    let p = plan(
        &node(false, &[&mounted]),
        &want,
        &have,
        &|_| Duration::from_secs(60),
        &o,
    );
    assert!(p.detach.is_empty());
    assert_eq!(p.recheck_after, Some(Duration::from_secs(300)));
    let long = |_: &str| MAX_WAIT_FOR_UNMOUNT;
    let p = plan(&node(false, &[&mounted]), &want, &have, &long, &o);
    assert_eq!(p.detach, [attachment("old", true).name]);
    // unless force detach on timeout is disabled
    let no_force = AttachDetachControllerOptions {
        disable_force_detach_on_timeout: true,
        ..o.clone()
    };
    let p = plan(&node(false, &[&mounted]), &want, &have, &long, &no_force);
    assert!(p.detach.is_empty());
    assert_eq!(p.recheck_after, None);
}

#[test]
fn the_reconcile_period_must_exceed_a_second() {
    let mut o = AttachDetachControllerOptions::default();
    assert!(o.validate().is_ok());
    o.reconciler_sync_loop_period = Duration::from_millis(999);
    assert!(o.validate().is_err());
}

/// Upstream `reportMultiAttachError`'s messages and `IsMultiAttachAllowed`.
#[test]
fn multi_attach_errors_follow_upstream() {
    let p = |ns: &str, n: &str| (ns.to_string(), n.to_string());
    assert_eq!(
        multi_attach_message("pv1", "ns", &[]),
        "Multi-Attach error for volume \"pv1\" Volume is already exclusively attached to one node and can't be attached to another"
    );
    assert_eq!(
        multi_attach_message("pv1", "ns", &[p("ns", "a"), p("ns", "b")]),
        "Multi-Attach error for volume \"pv1\" Volume is already used by pod(s) a, b"
    );
    assert_eq!(
        multi_attach_message("pv1", "ns", &[p("ns", "a"), p("other", "x")]),
        "Multi-Attach error for volume \"pv1\" Volume is already used by pod(s) a and 1 pod(s) in different namespaces"
    );
    assert_eq!(
        multi_attach_message("pv1", "ns", &[p("other", "x"), p("third", "y")]),
        "Multi-Attach error for volume \"pv1\" Volume is already used by 2 pod(s) in different namespaces"
    );
    let pv = |modes: serde_json::Value| -> PersistentVolume {
        serde_json::from_value(json!({"metadata": {"name": "pv"}, "spec": {"accessModes": modes}}))
            .unwrap()
    };
    assert!(!multi_attach_allowed(&pv(json!(["ReadWriteOnce"]))));
    assert!(!multi_attach_allowed(&pv(json!(["ReadWriteOncePod"]))));
    assert!(multi_attach_allowed(&pv(json!([
        "ReadWriteOnce",
        "ReadOnlyMany"
    ]))));
    assert!(multi_attach_allowed(&pv(json!(["ReadWriteMany"]))));
    assert!(multi_attach_allowed(&pv(json!([]))));
}
