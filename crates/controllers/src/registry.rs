//! The registry of built-in controllers and the `--controllers` selection.
//!
//! As kube-controller-manager's `NewControllerDescriptors`: every controller has a
//! canonical name (`deployment-controller`), aliases (`deployment`), whether it is
//! disabled by default, and a constructor. A duplicate name or alias is a programming
//! error. `--controllers` takes a list: `*` turns on every controller not disabled by
//! default, `foo` turns `foo` on, `-foo` turns it off; the first entry that names a
//! controller decides (upstream `IsControllerEnabled`); an unknown name is an error.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_runtime::manager::{Manager, Runnable};

/// What a controller constructor gets.
pub struct ControllerContext<'a> {
    /// The manager: client, shared cache, event recorders.
    pub manager: &'a Manager,
    /// The controller manager's options (worker counts, ...).
    pub options: &'a ControllerManagerOptions,
    /// Each controller's identity: the root client, or its service account
    /// (`--use-service-account-credentials`).
    pub clients: crate::clientbuilder::ClientBuilder,
}

impl<'a> ControllerContext<'a> {
    /// A context whose controllers use the manager's own client.
    pub fn new(manager: &'a Manager, options: &'a ControllerManagerOptions) -> Self {
        ControllerContext {
            manager,
            options,
            clients: crate::clientbuilder::ClientBuilder::root(),
        }
    }

    /// The clients of a controller that runs as the service account `service_account`
    /// in `kube-system` with `--use-service-account-credentials` (upstream
    /// `ClientBuilder.ClientOrDie(name)`), else as the controller manager.
    pub fn clients(
        &self,
        service_account: &str,
    ) -> Result<crate::clientbuilder::ControllerClients<'a>, String> {
        self.clients.clients(self.manager, service_account)
    }
}

/// The options of every built-in controller, one struct per controller as upstream's
/// `KubeControllerManagerConfiguration` (`cmd/kube-controller-manager/app/config`,
/// `pkg/controller/<name>/config/types.go`); each controller reads its own.
#[derive(Clone, Debug, Default)]
pub struct ControllerManagerOptions {
    /// `deployment-controller`.
    pub deployment: crate::deployment::DeploymentControllerOptions,
    /// `cronjob-controller`.
    pub cronjob: crate::cronjob::CronJobControllerOptions,
    /// `ttl-after-finished-controller`.
    pub ttl_after_finished: crate::ttlafterfinished::TtlAfterFinishedControllerOptions,
    /// `pod-garbage-collector-controller`.
    pub podgc: crate::podgc::PodGcControllerOptions,
    /// `replicaset-controller`.
    pub replicaset: crate::replicaset::ReplicaSetControllerOptions,
    /// `replicationcontroller-controller`.
    pub replication_controller: crate::replicaset::ReplicationControllerOptions,
    /// `daemonset-controller`.
    pub daemonset: crate::daemon::DaemonSetControllerOptions,
    /// `garbage-collector-controller`.
    pub garbage_collector: crate::garbagecollector::GarbageCollectorOptions,
    /// `namespace-controller`.
    pub namespace: crate::namespace::NamespaceControllerOptions,
    /// `job-controller`.
    pub job: crate::job::JobControllerOptions,
    /// `serviceaccount-controller` and the root CA publisher (upstream's
    /// `SAControllerConfiguration`).
    pub service_account: crate::serviceaccount::ServiceAccountControllerOptions,
    /// `statefulset-controller`.
    pub statefulset: crate::statefulset::StatefulSetControllerOptions,
    /// `endpointslice-controller`.
    pub endpoint_slice: crate::endpointslice::EndpointSliceControllerOptions,
    /// `endpoints-controller`.
    pub endpoint: crate::endpoint::EndpointControllerOptions,
    /// `endpointslice-mirroring-controller`.
    pub endpointslice_mirroring:
        crate::endpointslicemirroring::EndpointSliceMirroringControllerOptions,
    /// `taint-eviction-controller`.
    pub taint_eviction: crate::tainteviction::TaintEvictionControllerOptions,
    /// `ttl-controller`.
    pub ttl: crate::ttl::TtlControllerOptions,
    /// `node-ipam-controller`.
    pub node_ipam: crate::nodeipam::NodeIpamControllerOptions,
    /// `disruption-controller`.
    pub disruption: crate::disruption::DisruptionControllerOptions,
    /// `node-lifecycle-controller`.
    pub node_lifecycle: crate::nodelifecycle::NodeLifecycleControllerOptions,
    /// `persistentvolume-binder-controller`.
    pub persistent_volume_binder:
        crate::volume::persistentvolume::PersistentVolumeBinderControllerOptions,
    /// `persistentvolumeclaim-protection-controller`.
    pub pvc_protection: crate::volume::pvcprotection::PvcProtectionControllerOptions,
    /// `persistentvolume-protection-controller`.
    pub pv_protection: crate::volume::pvprotection::PvProtectionControllerOptions,
    /// `persistentvolume-expander-controller`.
    pub expand: crate::volume::expand::ExpandControllerOptions,
    /// `ephemeral-volume-controller`.
    pub ephemeral_volume: crate::volume::ephemeral::EphemeralVolumeControllerOptions,
    /// `resourcequota-controller`.
    pub resource_quota: crate::resourcequota::ResourceQuotaControllerOptions,
    /// `horizontal-pod-autoscaler-controller`.
    pub hpa: crate::podautoscaler::HpaControllerOptions,
    /// `persistentvolume-attach-detach-controller`.
    pub attach_detach: crate::volume::attachdetach::AttachDetachControllerOptions,
    /// `legacy-serviceaccount-token-cleaner-controller`.
    pub legacy_sa_token_cleaner: crate::serviceaccount::cleaner::LegacySaTokenCleanerOptions,
    /// `certificatesigningrequest-signing-controller`.
    pub csr_signing: crate::certificates::signer::CsrSigningControllerOptions,
    /// `bootstrap-signer-controller`.
    pub bootstrap_signer: crate::bootstrap::signer::BootstrapSignerOptions,
    /// `token-cleaner-controller`.
    pub token_cleaner: crate::bootstrap::tokencleaner::TokenCleanerOptions,
}

/// Builds a controller; `Ok(None)` when its own options turn it off
/// (`--enable-garbage-collector=false`).
pub type Constructor = fn(&ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String>;

/// One built-in controller.
#[derive(Clone, Copy)]
pub struct Descriptor {
    /// Canonical name (`deployment-controller`): health check, logs, `/debug/controllers`.
    pub name: &'static str,
    /// Other names `--controllers` accepts (`deployment`).
    pub aliases: &'static [&'static str],
    /// Off unless named explicitly.
    pub disabled_by_default: bool,
    /// Makes the controller.
    pub constructor: Constructor,
}

impl std::fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Descriptor")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("disabled_by_default", &self.disabled_by_default)
            .finish_non_exhaustive()
    }
}

/// A checked set of descriptors.
#[derive(Debug)]
pub struct Registry {
    descriptors: Vec<Descriptor>,
    /// alias or name → canonical name
    names: BTreeMap<&'static str, &'static str>,
}

/// Why `--controllers` was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", .0.join(", "))]
pub struct SelectionError(pub Vec<String>);

impl Registry {
    /// A registry of `descriptors`.
    ///
    /// # Panics
    /// On a duplicate name or alias: that is a bug in the descriptor list, caught by the
    /// registry's tests, never by user input.
    pub fn new(descriptors: Vec<Descriptor>) -> Registry {
        let mut names = BTreeMap::new();
        for d in &descriptors {
            for n in std::iter::once(&d.name).chain(d.aliases) {
                if names.insert(*n, d.name).is_some() {
                    panic!("controller name or alias {n:?} is registered twice");
                }
            }
        }
        Registry { descriptors, names }
    }

    /// Every descriptor, in registration order.
    pub fn descriptors(&self) -> &[Descriptor] {
        &self.descriptors
    }

    /// The canonical names, sorted.
    pub fn known(&self) -> Vec<&'static str> {
        let set: BTreeSet<&'static str> = self.descriptors.iter().map(|d| d.name).collect();
        set.into_iter().collect()
    }

    /// The controllers `--controllers` turns on, in registration order; unknown names are
    /// an error naming each (upstream: `"foo" is not in the list of known controllers`).
    pub fn select(&self, flags: &[String]) -> Result<Vec<Descriptor>, SelectionError> {
        let mut errors = Vec::new();
        // resolve aliases to canonical names, keeping the `-` prefix
        let mut resolved: Vec<String> = Vec::with_capacity(flags.len());
        for raw in flags.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
            if raw == "*" {
                resolved.push(raw.to_string());
                continue;
            }
            let (minus, name) = match raw.strip_prefix('-') {
                Some(n) => ("-", n),
                None => ("", raw),
            };
            match self.names.get(name) {
                Some(canonical) => resolved.push(format!("{minus}{canonical}")),
                None => errors.push(format!("{name:?} is not in the list of known controllers")),
            }
        }
        if !errors.is_empty() {
            return Err(SelectionError(errors));
        }
        Ok(self
            .descriptors
            .iter()
            .filter(|d| is_enabled(d.name, d.disabled_by_default, &resolved))
            .copied()
            .collect())
    }
}

/// Upstream `IsControllerEnabled`: the first entry naming the controller decides, else
/// `*` turns on what is not disabled by default.
fn is_enabled(name: &str, disabled_by_default: bool, flags: &[String]) -> bool {
    let mut star = false;
    for f in flags {
        if f == name {
            return true;
        }
        if f.strip_prefix('-') == Some(name) {
            return false;
        }
        if f == "*" {
            star = true;
        }
    }
    star && !disabled_by_default
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
        Err("not built in tests".into())
    }

    fn registry() -> Registry {
        Registry::new(vec![
            Descriptor {
                name: "deployment-controller",
                aliases: &["deployment"],
                disabled_by_default: false,
                constructor: none,
            },
            Descriptor {
                name: "replicaset-controller",
                aliases: &["replicaset"],
                disabled_by_default: false,
                constructor: none,
            },
            Descriptor {
                name: "bootstrap-signer-controller",
                aliases: &["bootstrapsigner"],
                disabled_by_default: true,
                constructor: none,
            },
        ])
    }

    fn names(flags: &[&str]) -> Result<Vec<&'static str>, SelectionError> {
        let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        registry()
            .select(&flags)
            .map(|v| v.into_iter().map(|d| d.name).collect())
    }

    #[test]
    fn selection_follows_kube_controller_manager() {
        assert_eq!(
            names(&["*"]).unwrap(),
            ["deployment-controller", "replicaset-controller"]
        );
        assert_eq!(
            names(&["*", "-deployment"]).unwrap(),
            ["replicaset-controller"]
        );
        assert_eq!(
            names(&["*", "-deployment-controller"]).unwrap(),
            ["replicaset-controller"]
        );
        assert_eq!(names(&["replicaset"]).unwrap(), ["replicaset-controller"]);
        assert_eq!(
            names(&["*", "bootstrapsigner"]).unwrap(),
            [
                "deployment-controller",
                "replicaset-controller",
                "bootstrap-signer-controller"
            ]
        );
        // the first entry that names a controller wins
        assert_eq!(
            names(&["deployment", "-deployment"]).unwrap(),
            ["deployment-controller"]
        );
        assert!(names(&[]).unwrap().is_empty());
        assert_eq!(
            names(&["*", "bogus", "-nope"]),
            Err(SelectionError(vec![
                "\"bogus\" is not in the list of known controllers".into(),
                "\"nope\" is not in the list of known controllers".into(),
            ]))
        );
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn duplicate_names_are_a_programming_error() {
        Registry::new(vec![
            Descriptor {
                name: "a",
                aliases: &["b"],
                disabled_by_default: false,
                constructor: none,
            },
            Descriptor {
                name: "b",
                aliases: &[],
                disabled_by_default: false,
                constructor: none,
            },
        ]);
    }
}
