//! The Recreate strategy: all old pods go before any new pod starts.
//!
//! After upstream `pkg/controller/deployment/recreate.go`: scale every old ReplicaSet to
//! zero; wait until no old pod is left (no old ReplicaSet reports replicas, and no pod of
//! an old ReplicaSet is in a non-terminal phase: the pod informer's deletions wake the
//! Deployment when the last one goes); only then create the new ReplicaSet (it is not
//! created earlier, so that nothing scales up before everything scaled down) and scale it
//! to `replicas`.

use std::borrow::Borrow;
use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use coxswain_runtime::controller::Action;

use super::sync::all_of;
use super::util::*;
use super::{put_rs, DeploymentReconciler, Error, PodMap};

/// Whether old pods may still run: an old ReplicaSet reports replicas, or a pod of a
/// ReplicaSet other than the new one is not `Succeeded`/`Failed` (an `Unknown` pod may
/// still run). `pods` maps ReplicaSet UIDs to their pods.
pub fn old_pods_running<P: Borrow<Pod>>(
    new: Option<&ReplicaSet>,
    old: &[ReplicaSet],
    pods: &HashMap<String, Vec<P>>,
) -> bool {
    if actual_replica_count(old) > 0 {
        return true;
    }
    let new_uid = new.and_then(|n| n.metadata.uid.as_deref());
    pods.iter()
        .filter(|(uid, _)| Some(uid.as_str()) != new_uid)
        .flat_map(|(_, list)| list.iter())
        .any(|p| {
            let phase = p.borrow().status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Failed") | Some("Succeeded"))
        })
}

impl DeploymentReconciler {
    /// One step of a Recreate rollout (upstream `rolloutRecreate`).
    pub(crate) async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
        pods: &PodMap,
    ) -> Result<Action, Error> {
        // no new ReplicaSet yet: nothing may scale up before the old ones are gone
        let (mut new, mut old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;

        let mut scaled_down = false;
        for slot in old.iter_mut() {
            if rs_replicas(slot) == 0 {
                continue;
            }
            let (scaled, updated) = self.scale_replica_set_and_record_event(slot, 0, d).await?;
            if scaled {
                *slot = updated;
                put_rs(rs_list, slot);
                scaled_down = true;
            }
        }
        if scaled_down {
            return self
                .sync_rollout_status(&all_of(&old, new.as_ref()), new.as_ref(), d)
                .await;
        }

        if old_pods_running(new.as_ref(), &old, pods) {
            return self
                .sync_rollout_status(&all_of(&old, new.as_ref()), new.as_ref(), d)
                .await;
        }

        if new.is_none() {
            (new, old) = self
                .get_all_replica_sets_and_sync_revision(d, rs_list, true)
                .await?;
        }
        if let Some(slot) = new.as_mut() {
            let (_, updated) = self
                .scale_replica_set_and_record_event(slot, replicas(d), d)
                .await?;
            *slot = updated;
            put_rs(rs_list, slot);
        }

        let current = d.status.clone().unwrap_or_default();
        if deployment_complete(d, &current) {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_rollout_status(&all_of(&old, new.as_ref()), new.as_ref(), d)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::api::core::v1::PodStatus;

    fn pod(phase: Option<&str>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: phase.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn rs_with_uid(uid: &str) -> ReplicaSet {
        let mut r = rs(&format!("foo-{uid}"), 0, &[("foo", "bar")], None);
        r.metadata.uid = Some(uid.into());
        r
    }

    // Ported from upstream recreate_test.go TestOldPodsRunning.
    #[test]
    fn old_pods_running_table() {
        let map = |entries: Vec<(&str, Vec<Pod>)>| -> HashMap<String, Vec<Pod>> {
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        };
        type Case = (
            &'static str,
            Option<ReplicaSet>,
            Vec<ReplicaSet>,
            HashMap<String, Vec<Pod>>,
            bool,
        );
        let cases: Vec<Case> = vec![
            ("no old RSs", None, vec![], map(vec![]), false),
            (
                "old RSs with running pods",
                None,
                vec![rs_with_uid("some-uid"), rs_with_uid("other-uid")],
                map(vec![("some-uid", vec![pod(None), pod(None)]), ("other-uid", vec![pod(None), pod(None)])]),
                true,
            ),
            ("old RSs without pods but with non-zero status replicas", None, vec![rs_with_status("rs-1", 0, 1)], map(vec![]), true),
            ("old RSs without pods or non-zero status replicas", None, vec![rs_with_status("rs-1", 0, 0)], map(vec![]), false),
            (
                "old RSs with zero status replicas but pods in terminal state are present",
                None,
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![("uid-1", vec![pod(Some("Failed")), pod(Some("Succeeded"))])]),
                false,
            ),
            (
                "old RSs with zero status replicas but pod in unknown phase present",
                None,
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![("uid-1", vec![pod(Some("Unknown"))])]),
                true,
            ),
            (
                "old RSs with zero status replicas with pending pod present",
                None,
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![("uid-1", vec![pod(Some("Pending"))])]),
                true,
            ),
            (
                "old RSs with zero status replicas with running pod present",
                None,
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![("uid-1", vec![pod(Some("Running"))])]),
                true,
            ),
            (
                "old RSs with zero status replicas but pods in terminal state and pending are present",
                None,
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![
                    ("uid-1", vec![pod(Some("Failed")), pod(Some("Succeeded"))]),
                    ("uid-2", vec![]),
                    ("uid-3", vec![pod(Some("Pending"))]),
                ]),
                true,
            ),
            (
                "pods of the new RS do not count",
                Some(rs_with_uid("new-uid")),
                vec![rs_with_status("rs-1", 0, 0)],
                map(vec![("new-uid", vec![pod(Some("Running"))])]),
                false,
            ),
        ];
        for (name, new, old, pods, want) in cases {
            assert_eq!(old_pods_running(new.as_ref(), &old, &pods), want, "{name}");
        }
    }

    // After upstream recreate_test.go TestScaleDownOldReplicaSets / TestScaleUpRecreate:
    // Recreate does not scale proportionally and sizes the new RS to `replicas` at once.
    #[test]
    fn recreate_sizes() {
        let mut d = new_deployment("foo", 3, None, None, None, &[("foo", "bar")]);
        if let Some(s) = d.spec.strategy.as_mut() {
            s.type_ = Some(RECREATE.into());
            s.rolling_update = None;
        }
        let new = rs("foo-new", 0, &[], None);
        assert_eq!(new_rs_new_replicas(&d, &[&new], &new), Ok(3));
        assert_eq!(max_surge(&d), 0);
        assert_eq!(max_unavailable(&d), 0);
        let old = vec![
            rs("foo-1", 2, &[], Some(at(0))),
            rs("foo-2", 1, &[], Some(at(1))),
        ];
        let mut n = rs("foo-3", 1, &[], Some(at(2)));
        n.metadata.annotations = None;
        assert!(crate::deployment::sync::plan_scale(&d, Some(&n), &old).is_empty());
    }
}
