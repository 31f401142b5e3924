//! The built-in controllers of `coxswain controller-manager` and their registry.
//!
//! [`registry`] holds the descriptors (name, aliases, default, constructor) and the
//! `--controllers` selection; [`controller_manager`] runs the selected controllers under
//! one [`coxswain_runtime::manager::Manager`] with kube-controller-manager's flags.
//! [`controller_utils`] holds what several workload controllers share (expectations, pod
//! ranking, pod creation and deletion with events, adoption and release of children);
//! [`replicaset`] is the ReplicaSet controller, which also drives ReplicationControllers;
//! [`deployment`] the Deployment controller; [`statefulset`] the StatefulSet controller,
//! which rolls out through the ControllerRevision [`history`]; [`daemon`] the DaemonSet
//! controller; [`job`], [`cronjob`], [`ttlafterfinished`] and [`podgc`] the batch
//! controllers; [`garbagecollector`] and [`namespace`] make deletion cascade (both find
//! resources through [`coxswain_runtime::discovery`]); [`serviceaccount`] (with the
//! legacy token controller and cleaner),
//! [`rootcacertpublisher`] and [`clusterroleaggregation`] the namespace and RBAC
//! housekeeping controllers; [`endpointslice`] keeps the EndpointSlices of Services with a
//! selector, [`endpoint`] their `v1` Endpoints, [`endpointslicemirroring`] mirrors the
//! hand-written Endpoints of Services without one to EndpointSlices; all three use the pod
//! and Service helpers of [`endpointutil`]. [`tainteviction`] evicts pods from nodes with
//! `NoExecute` taints they do not tolerate, [`ttl`] sets the nodes' object TTL annotation
//! and [`nodeipam`] allocates the nodes' pod CIDRs. [`disruption`] keeps
//! PodDisruptionBudget status for the API server's eviction subresource. [`volume`] holds
//! the volume controllers (the PersistentVolume binder, claim and volume protection,
//! expansion, ephemeral volumes, attach/detach). [`resourcequota`] keeps ResourceQuota
//! usage; [`podautoscaler`] is the HorizontalPodAutoscaler controller (metrics APIs,
//! replica calculator, behaviors, `/scale` of any scalable kind). [`clientbuilder`]
//! gives each controller its identity (`--use-service-account-credentials`). [`certificates`] signs,
//! approves and cleans up CertificateSigningRequests; [`bootstrap`] signs `cluster-info`
//! with bootstrap tokens and deletes expired ones.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bootstrap;
pub mod certificates;
pub mod clientbuilder;
pub mod clusterroleaggregation;
pub mod controller_manager;
pub mod controller_utils;
pub mod cronjob;
pub mod daemon;
pub mod deployment;
pub mod disruption;
pub mod endpoint;
pub mod endpointslice;
pub mod endpointslicemirroring;
pub mod endpointutil;
pub mod garbagecollector;
pub mod history;
pub mod job;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod podautoscaler;
pub mod podgc;
pub mod registry;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod statefulset;
pub mod tainteviction;
pub mod ttl;
pub mod ttlafterfinished;
pub mod volume;

use registry::Registry;

/// The registry of every built-in controller (kube-controller-manager's
/// `NewControllerDescriptors` for what coxswain implements), with upstream names.
pub fn builtin() -> Registry {
    Registry::new(vec![
        deployment::descriptor(),
        cronjob::descriptor(),
        ttlafterfinished::descriptor(),
        podgc::descriptor(),
        replicaset::descriptor(),
        replicaset::replication_descriptor(),
        daemon::descriptor(),
        garbagecollector::descriptor(),
        namespace::descriptor(),
        serviceaccount::token_descriptor(),
        serviceaccount::descriptor(),
        serviceaccount::cleaner_descriptor(),
        rootcacertpublisher::descriptor(),
        clusterroleaggregation::descriptor(),
        job::descriptor(),
        statefulset::descriptor(),
        endpointslice::descriptor(),
        endpoint::descriptor(),
        endpointslicemirroring::descriptor(),
        tainteviction::descriptor(),
        ttl::descriptor(),
        nodeipam::descriptor(),
        disruption::descriptor(),
        nodelifecycle::descriptor(),
        volume::persistentvolume::descriptor(),
        volume::pvcprotection::descriptor(),
        volume::pvprotection::descriptor(),
        volume::expand::descriptor(),
        volume::ephemeral::descriptor(),
        resourcequota::descriptor(),
        podautoscaler::descriptor(),
        volume::attachdetach::descriptor(),
        certificates::signer::descriptor(),
        certificates::approver::descriptor(),
        certificates::cleaner::descriptor(),
        bootstrap::signer::descriptor(),
        bootstrap::tokencleaner::descriptor(),
    ])
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_names_are_unique_and_upstream() {
        // Registry::new panics on a duplicate name or alias
        let r = super::builtin();
        assert!(r.known().contains(&"replicaset-controller"));
        let flags = vec!["*".to_string(), "-replicationcontroller".to_string()];
        let names: Vec<&str> = r.select(&flags).unwrap().iter().map(|d| d.name).collect();
        assert!(names.contains(&"replicaset-controller"));
        assert!(!names.contains(&"replicationcontroller-controller"));
        // the batch controllers are on by default, under upstream's names and aliases
        for name in [
            "endpoints-controller",
            "endpointslice-mirroring-controller",
            "cronjob-controller",
            "ttl-after-finished-controller",
            "pod-garbage-collector-controller",
            "endpointslice-controller",
            "disruption-controller",
        ] {
            assert!(names.contains(&name), "{name}");
        }
        let names: Vec<&str> = r
            .select(&["disruption".to_string()])
            .unwrap()
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["disruption-controller"]);
        let flags = vec![
            "cronjob".to_string(),
            "ttl-after-finished".to_string(),
            "podgc".to_string(),
        ];
        let names: Vec<&str> = r.select(&flags).unwrap().iter().map(|d| d.name).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // the node controllers, on by default under upstream's names and aliases
        let all: Vec<&str> = r
            .select(&["*".to_string()])
            .unwrap()
            .iter()
            .map(|d| d.name)
            .collect();
        for name in [
            "taint-eviction-controller",
            "ttl-controller",
            "node-ipam-controller",
        ] {
            assert!(all.contains(&name), "{name}");
        }
        // the PV binder, on by default under upstream's name and alias
        assert!(all.contains(&"persistentvolume-binder-controller"));
        let names: Vec<&str> = r
            .select(&["persistentvolume-binder".to_string()])
            .unwrap()
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["persistentvolume-binder-controller"]);
        // the volume controllers, on by default under upstream's names and aliases
        for name in [
            "persistentvolumeclaim-protection-controller",
            "persistentvolume-protection-controller",
            "persistentvolume-expander-controller",
            "ephemeral-volume-controller",
            "persistentvolume-attach-detach-controller",
        ] {
            assert!(all.contains(&name), "{name}");
        }
        let flags: Vec<String> = [
            "pvc-protection",
            "pv-protection",
            "persistentvolume-expander",
            "ephemeral-volume",
            "attachdetach",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(r.select(&flags).unwrap().len(), 5);
        let flags = vec!["ttl".to_string(), "nodeipam".to_string()];
        let names: Vec<&str> = r.select(&flags).unwrap().iter().map(|d| d.name).collect();
        assert_eq!(names, ["ttl-controller", "node-ipam-controller"]);
    }

    #[test]
    fn hpa_controller_is_on_by_default_under_upstream_names() {
        let r = super::builtin();
        let all: Vec<&str> = r
            .select(&["*".to_string()])
            .unwrap()
            .iter()
            .map(|d| d.name)
            .collect();
        assert!(all.contains(&"horizontal-pod-autoscaler-controller"));
        let names: Vec<&str> = r
            .select(&["horizontalpodautoscaling".to_string()])
            .unwrap()
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["horizontal-pod-autoscaler-controller"]);
    }
    #[test]
    fn certificate_and_bootstrap_controllers_under_upstream_names() {
        let r = super::builtin();
        let select = |flags: &[&str]| -> Vec<&'static str> {
            let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
            r.select(&flags).unwrap().iter().map(|d| d.name).collect()
        };
        let all = select(&["*"]);
        for on in [
            "certificatesigningrequest-signing-controller",
            "certificatesigningrequest-approving-controller",
            "certificatesigningrequest-cleaner-controller",
        ] {
            assert!(all.contains(&on), "{on}");
        }
        // the bootstrap token controllers are off unless named, as upstream
        for off in ["bootstrap-signer-controller", "token-cleaner-controller"] {
            assert!(!all.contains(&off), "{off}");
        }
        assert_eq!(
            select(&[
                "csrsigning",
                "csrapproving",
                "csrcleaner",
                "bootstrapsigner",
                "tokencleaner"
            ]),
            [
                "certificatesigningrequest-signing-controller",
                "certificatesigningrequest-approving-controller",
                "certificatesigningrequest-cleaner-controller",
                "bootstrap-signer-controller",
                "token-cleaner-controller",
            ]
        );
    }
}
