//! The root CA certificate publisher: a `kube-root-ca.crt` ConfigMap in every namespace.
//!
//! After kube-controller-manager's `root-ca-certificate-publisher-controller`
//! (kubernetes/kubernetes `pkg/controller/certificates/rootcacertpublisher/publisher.go`):
//! every namespace holds a ConfigMap `kube-root-ca.crt` whose data is exactly
//! `{"ca.crt": <the cluster CA bundle, PEM>}` and whose `kubernetes.io/description`
//! annotation says what it is for. The request is a namespace (cluster-scoped key); it is
//! synced when the namespace is added, when it is updated while `Active`, and when its
//! `kube-root-ca.crt` is added (upstream: not), updated or deleted. A missing ConfigMap is created (not in a
//! missing or terminating namespace), one with other data or no description is
//! corrected with an update on its resourceVersion. One worker, as upstream.
//!
//! The bundle is what upstream takes from `--root-ca-file`, else from the controller
//! manager's own client configuration (its CA data); [`pem_bundle`] turns the DER
//! certificates of a [`kube::Config`] (`root_cert`) into that PEM text.

use crate::clientbuilder::ClusterAccess;
use std::collections::BTreeMap;

use crate::registry::{ControllerContext, Descriptor};
use base64::Engine;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Change;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::EnqueueMapped;
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::predicate::BoxPredicate;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::serviceaccount::{namespace_active, namespace_terminating_error};

/// Canonical controller name (upstream `names.RootCACertificatePublisherController`).
pub const NAME: &str = "root-ca-certificate-publisher-controller";

/// Name of the published ConfigMap (upstream `RootCACertConfigMapName`).
pub const CONFIG_MAP_NAME: &str = "kube-root-ca.crt";

/// The data key holding the bundle.
pub const CA_KEY: &str = "ca.crt";

/// The annotation describing the ConfigMap (upstream `DescriptionAnnotation`).
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";

/// The annotation's value (upstream `Description`).
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("root-ca-cert-publisher")`).
pub const SERVICE_ACCOUNT: &str = "root-ca-cert-publisher";

/// The registry entry: `root-ca-certificate-publisher-controller`, alias
/// `root-ca-cert-publisher`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["root-ca-cert-publisher"],
        disabled_by_default: false,
        constructor: construct,
    }
}

fn construct(ctx: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
    let bundle = ctx.options.service_account.root_ca.clone().unwrap_or_else(|| {
        // upstream publishes an empty bundle when the controller manager has no CA
        tracing::warn!("no root CA bundle (no --root-ca-file and no CA in the client configuration): publishing an empty ca.crt");
        String::new()
    });
    Ok(Some(Box::new(new_controller(
        &ctx.clients(SERVICE_ACCOUNT)?,
        bundle,
    ))))
}

/// The bundle in a `--root-ca-file`: PEM text holding at least one certificate
/// (upstream `readCA`); the error is upstream's message.
pub fn read_root_ca_file(path: &std::path::Path) -> Result<String, String> {
    let invalid = |why: &dyn std::fmt::Display| {
        format!("error parsing root-ca-file at {}: {why}", path.display())
    };
    let bytes = std::fs::read(path).map_err(|e| invalid(&e))?;
    let bundle = String::from_utf8(bytes).map_err(|_| invalid(&"not PEM text"))?;
    if !bundle.contains("-----BEGIN CERTIFICATE-----") {
        return Err(invalid(
            &"data does not contain any valid RSA or ECDSA certificates",
        ));
    }
    Ok(bundle)
}

/// PEM text (`CERTIFICATE` blocks, 64 columns) of DER certificates, as
/// [`kube::Config::root_cert`] holds them; empty for none.
pub fn pem_bundle(der_certificates: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for der in der_certificates {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        for line in b64.as_bytes().chunks(64) {
            // base64 output is ASCII
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

/// The bundle of a client configuration (upstream falls back to the client's CA data
/// when `--root-ca-file` is not set); `None` when it trusts no explicit CA.
pub fn root_ca_of(config: &kube::Config) -> Option<String> {
    config
        .root_cert
        .as_deref()
        .filter(|certs| !certs.is_empty())
        .map(pem_bundle)
}

/// Builds the publisher for `root_ca` (PEM) on the manager's shared cache (namespace and
/// ConfigMap informers).
pub fn new_controller(
    manager: &impl ClusterAccess,
    root_ca: String,
) -> Controller<PublisherReconciler> {
    // upstream reacts to updates and deletes only (namespace events cover creations);
    // additions count too here: after a relist (a watch that expired) a copy changed
    // meanwhile arrives as an addition, and would stay wrong until the next resync
    let ours: BoxPredicate<ConfigMap> = std::sync::Arc::new(|c: &Change<ConfigMap>| match c {
        Change::Added(cm) | Change::Updated { new: cm, .. } | Change::Deleted(cm) => {
            cm.metadata.name.as_deref() == Some(CONFIG_MAP_NAME)
        }
    });
    ControllerBuilder::new(manager.cache())
        .named(NAME)
        .for_::<Namespace>()
        .with_event_filter(|c: &Change<Namespace>| match c {
            Change::Added(_) => true,
            Change::Updated { new, .. } => namespace_active(new),
            Change::Deleted(_) => false,
        })
        .watches_with::<ConfigMap>(
            EnqueueMapped(|cm: &ConfigMap| {
                cm.metadata
                    .namespace
                    .as_deref()
                    .map(|ns| vec![ObjectKey::cluster(ns)])
                    .unwrap_or_default()
            }),
            vec![ours],
        )
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 1,
            ..ControllerOptions::default()
        })
        .build(PublisherReconciler {
            client: manager.client(),
            root_ca,
        })
}

/// Reconciles one namespace's `kube-root-ca.crt`.
pub struct PublisherReconciler {
    client: Client,
    root_ca: String,
}

/// What a sync does.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// The ConfigMap is right, or cannot be created.
    Nothing,
    /// Create this ConfigMap.
    Create(ConfigMap),
    /// Replace the ConfigMap with this corrected copy.
    Update(ConfigMap),
}

/// The ConfigMap data for `root_ca`.
pub fn desired_data(root_ca: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(CA_KEY.to_string(), root_ca.to_string())])
}

/// Upstream `syncNamespace` as a decision: `namespace` is the cached namespace (`None`
/// when it is gone), `existing` the cached ConfigMap.
pub fn plan(
    namespace_name: &str,
    namespace: Option<&Namespace>,
    existing: Option<&ConfigMap>,
    root_ca: &str,
) -> Plan {
    let data = desired_data(root_ca);
    let Some(cm) = existing else {
        if !namespace.is_some_and(namespace_active) {
            return Plan::Nothing;
        }
        return Plan::Create(ConfigMap {
            metadata: ObjectMeta {
                name: Some(CONFIG_MAP_NAME.to_string()),
                namespace: Some(namespace_name.to_string()),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.to_string(),
                    DESCRIPTION.to_string(),
                )])),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        });
    };
    let described = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if cm.data.as_ref() == Some(&data) && described {
        return Plan::Nothing;
    }
    let mut fixed = cm.clone();
    fixed.data = Some(data);
    fixed
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string());
    Plan::Update(fixed)
}

impl Reconciler for PublisherReconciler {
    async fn reconcile(&self, _ctx: Context, request: ObjectKey) -> ReconcileResult {
        let name = request.name();
        let namespace = self.client.get::<Namespace>(&request).await?;
        let existing = self
            .client
            .get::<ConfigMap>(&ObjectKey::namespaced(name, CONFIG_MAP_NAME))
            .await?;
        match plan(
            name,
            namespace.as_deref(),
            existing.as_deref(),
            &self.root_ca,
        ) {
            Plan::Nothing => Ok(Action::Done),
            Plan::Create(cm) => match self.client.create(&cm).await {
                Ok(_) => {
                    tracing::debug!(namespace = name, "published {CONFIG_MAP_NAME}");
                    Ok(Action::Done)
                }
                // one the cache has not seen yet: check it on the retry
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Action::Requeue),
                // don't retry a create in a missing or terminating namespace
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
                Err(e) if namespace_terminating_error(&e) => Ok(Action::Done),
                Err(e) => Err(e.into()),
            },
            Plan::Update(cm) => match self.client.update(&cm).await {
                Ok(_) => {
                    tracing::debug!(namespace = name, "corrected {CONFIG_MAP_NAME}");
                    Ok(Action::Done)
                }
                // the cache is behind: the newer copy arrives as an update and is synced
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Action::Requeue),
                Err(e) => Err(e.into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NamespaceStatus;

    fn ns(phase: &str) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some("default".into()),
                ..ObjectMeta::default()
            },
            status: Some(NamespaceStatus {
                phase: Some(phase.into()),
                ..NamespaceStatus::default()
            }),
            ..Namespace::default()
        }
    }

    fn ca_config_map(root_ca: &str) -> ConfigMap {
        match plan("default", Some(&ns("Active")), None, root_ca) {
            Plan::Create(mut cm) => {
                cm.metadata.resource_version = Some("1".into());
                cm
            }
            other => panic!("expected a create, got {other:?}"),
        }
    }

    // After upstream TestConfigMapCreation.
    #[test]
    fn plans_follow_upstream_sync_namespace() {
        let root = "fake-root-ca";
        let created = ca_config_map(root);
        assert_eq!(created.metadata.name.as_deref(), Some(CONFIG_MAP_NAME));
        assert_eq!(created.data, Some(desired_data(root)));
        assert_eq!(
            created
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
                .map(String::as_str),
            Some(DESCRIPTION)
        );
        // up to date: nothing
        assert_eq!(
            plan("default", Some(&ns("Active")), Some(&created), root),
            Plan::Nothing
        );
        // an added field is removed
        let mut added = created.clone();
        added
            .data
            .get_or_insert_with(BTreeMap::new)
            .insert("test".into(), "test".into());
        assert_eq!(
            plan("default", Some(&ns("Active")), Some(&added), root),
            Plan::Update(created.clone())
        );
        // a modified bundle is restored, keeping the resourceVersion for the update
        let modified = ca_config_map("abc");
        assert_eq!(
            plan("default", Some(&ns("Active")), Some(&modified), root),
            Plan::Update(created.clone())
        );
        // a missing description is put back; other annotations stay
        let mut undescribed = created.clone();
        undescribed.metadata.annotations =
            Some(BTreeMap::from([("keep".to_string(), "me".to_string())]));
        match plan("default", Some(&ns("Active")), Some(&undescribed), root) {
            Plan::Update(cm) => {
                let a = cm.metadata.annotations.unwrap_or_default();
                assert_eq!(a.get("keep").map(String::as_str), Some("me"));
                assert_eq!(
                    a.get(DESCRIPTION_ANNOTATION).map(String::as_str),
                    Some(DESCRIPTION)
                );
            }
            other => panic!("expected an update, got {other:?}"),
        }
        // no creation in a terminating or missing namespace
        assert_eq!(
            plan("default", Some(&ns("Terminating")), None, root),
            Plan::Nothing
        );
        assert_eq!(plan("default", None, None, root), Plan::Nothing);
    }

    #[test]
    fn pem_bundle_wraps_der_in_64_columns() {
        let der: Vec<u8> = (0..=255u8).collect();
        let pem = pem_bundle(&[der.clone(), vec![1, 2, 3]]);
        let blocks: Vec<&str> = pem.split("-----END CERTIFICATE-----\n").collect();
        assert_eq!(blocks.len(), 3, "{pem}");
        assert!(blocks[2].is_empty());
        let body: String = blocks[0]
            .strip_prefix("-----BEGIN CERTIFICATE-----\n")
            .unwrap_or_default()
            .lines()
            .inspect(|l| assert!(l.len() <= 64))
            .collect();
        assert_eq!(
            base64::engine::general_purpose::STANDARD.decode(body).ok(),
            Some(der)
        );
        assert!(blocks[1].contains("AQID"));
        assert_eq!(pem_bundle(&[]), "");
    }

    #[test]
    fn root_ca_file_must_hold_pem_certificates() {
        let dir = std::env::temp_dir().join(format!("coxswain-rootca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let good = dir.join("good.pem");
        let pem = pem_bundle(&[vec![1, 2, 3]]);
        std::fs::write(&good, &pem).unwrap_or_default();
        assert_eq!(read_root_ca_file(&good), Ok(pem));
        let bad = dir.join("bad.pem");
        std::fs::write(&bad, "hello").unwrap_or_default();
        let err = read_root_ca_file(&bad).unwrap_err();
        assert!(err.starts_with("error parsing root-ca-file at "), "{err}");
        assert!(read_root_ca_file(&dir.join("missing.pem")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn descriptor_names_follow_upstream() {
        let d = descriptor();
        assert_eq!(d.name, "root-ca-certificate-publisher-controller");
        assert_eq!(d.aliases, ["root-ca-cert-publisher"]);
        assert!(!d.disabled_by_default);
    }
}
