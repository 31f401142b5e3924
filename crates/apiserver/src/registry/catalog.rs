//! The resource catalogue: every kind the server serves, described once.
//!
//! Discovery, OpenAPI, routing, field selectors and storage all read this table; nothing
//! else in the server hard-codes a resource. Each entry says the group, version, kind,
//! plural and singular names, short names, categories, scope, subresources and the
//! fields that field selectors accept, as upstream kube-apiserver 1.36 serves them.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// A subresource served under a resource (`deployments/status`, `deployments/scale`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// `/status`: get, update, patch of the status alone.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of `spec.replicas`.
    Scale,
    /// `/finalize` on namespaces: update of `spec.finalizers`.
    Finalize,
    /// `/approval` on certificate signing requests: update of approval conditions.
    Approval,
    /// `/binding` on pods: assign a pod to a node (create only; the scheduler's write).
    Binding,
}

impl Subresource {
    /// The path segment naming the subresource.
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Approval => "approval",
            Subresource::Binding => "binding",
        }
    }

    /// Verbs the subresource supports (discovery).
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Subresource::Finalize => &["update"],
            Subresource::Binding => &["create"],
            _ => &["get", "patch", "update"],
        }
    }
}

/// One served resource.
#[derive(Debug)]
pub struct ResourceDef {
    /// API group ("" for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural (URL) name.
    pub plural: &'static str,
    /// Singular name.
    pub singular: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`deploy`, `po`, ...).
    pub short_names: &'static [&'static str],
    /// Categories (`all`).
    pub categories: &'static [&'static str],
    /// Subresources served.
    pub subresources: &'static [Subresource],
    /// Selectable fields beyond `metadata.name` and `metadata.namespace`.
    pub field_selectors: &'static [&'static str],
    /// Whether `deletecollection` is served (namespaces do not).
    pub delete_collection: bool,
    /// The group and version whose representation is stored, when this resource serves
    /// objects stored in another version (`autoscaling/v1` HPAs are stored as
    /// `autoscaling/v2`, `events.k8s.io/v1` Events as core `v1`). `None`: this version is
    /// the storage version.
    pub storage_of: Option<(&'static str, &'static str)>,
    /// For a resource defined by a CustomResourceDefinition: what the CRD says of this
    /// version (schema, printer columns, subresource paths). `None` for built-in kinds.
    pub custom: Option<&'static CustomVersion>,
}

/// An `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub ty: String,
    /// OpenAPI format.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0: shown by default; higher: `-o wide`.
    pub priority: i64,
    /// The JSONPath of the cell, relative to the object.
    pub json_path: String,
}

/// The `/scale` subresource of a custom resource: where replicas and the selector live.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalePaths {
    /// `.spec.replicas`-style path of the desired replicas.
    pub spec_replicas: String,
    /// `.status.replicas`-style path of the observed replicas.
    pub status_replicas: String,
    /// Path of the label selector string, when given.
    pub label_selector: Option<String>,
}

/// Conversion between the versions of a custom resource.
#[derive(Clone, Debug, PartialEq)]
pub enum Conversion {
    /// Only `apiVersion` changes.
    None,
    /// A conversion webhook (`spec.conversion.webhook`).
    Webhook(Value),
}

/// What a CRD says about one version of its resource.
#[derive(Debug)]
pub struct CustomVersion {
    /// The CRD's name (`crontabs.stable.example.com`).
    pub crd_name: String,
    /// `openAPIV3Schema`, when given.
    pub schema: Option<Value>,
    /// Printer columns (upstream's defaults when the CRD gives none).
    pub columns: Vec<PrinterColumn>,
    /// The scale subresource.
    pub scale: Option<ScalePaths>,
    /// `deprecated` and the warning to send.
    pub deprecation_warning: Option<String>,
    /// How objects convert between versions.
    pub conversion: Conversion,
    /// The `List` kind.
    pub list_kind: String,
    /// Whether the CRD is being deleted (no new objects).
    pub terminating: bool,
    /// The definition of the version objects are stored in (set once all versions
    /// are built).
    pub(crate) storage: OnceLock<&'static ResourceDef>,
    /// The kind's published OpenAPI schema, built on first use.
    pub(crate) published: OnceLock<Value>,
}

impl CustomVersion {
    /// The definition of the version objects are stored in.
    pub fn storage_def(&self) -> Option<&'static ResourceDef> {
        self.storage.get().copied()
    }
}

impl ResourceDef {
    /// `apiVersion` string (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind of lists (`DeploymentList`; a CRD's `listKind`).
    pub fn list_kind(&self) -> String {
        match self.custom {
            Some(c) => c.list_kind.clone(),
            None => format!("{}List", self.kind),
        }
    }

    /// `plural` or `plural.group`: the name upstream uses in messages (`deployments.apps`).
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Kind` or `Kind.group`: used in Invalid messages (`Deployment.apps "x" is invalid`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The OpenAPI definition name of the kind (`io.k8s.api.apps.v1.Deployment`; for
    /// custom resources the reversed group: `com.example.stable.v1.CronTab`).
    pub fn definition(&self) -> String {
        if self.custom.is_some() {
            let reversed: Vec<&str> = self.group.split('.').rev().collect();
            return format!("{}.{}.{}", reversed.join("."), self.version, self.kind);
        }
        if self.group == "apiextensions.k8s.io" {
            return format!(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
                self.version, self.kind
            );
        }
        format!(
            "io.k8s.api.{}.{}.{}",
            self.package(),
            self.version,
            self.kind
        )
    }

    /// The k8s.io/api package of the group (`core`, `apps`, `rbac`, ...).
    pub fn package(&self) -> &'static str {
        if self.group.is_empty() {
            "core"
        } else {
            self.group.split('.').next().unwrap_or(self.group)
        }
    }

    /// Whether the kind has a `/status` subresource.
    pub fn has_status(&self) -> bool {
        self.subresources.contains(&Subresource::Status)
    }

    /// Whether the kind has the given subresource.
    pub fn has_subresource(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    /// The key under which objects of this resource are stored.
    pub fn storage_key(&self) -> String {
        let group = self.storage_of.map(|(g, _)| g).unwrap_or(self.group);
        format!("{group}/{}", self.plural)
    }

    /// All field names a field selector may use for this resource.
    pub fn selectable_fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        ["metadata.name", "metadata.namespace"]
            .into_iter()
            .chain(self.field_selectors.iter().copied())
    }

    /// Verbs of the main resource (discovery order).
    pub fn verbs(&self) -> Vec<&'static str> {
        let mut v = vec!["create", "delete"];
        if self.delete_collection {
            v.push("deletecollection");
        }
        v.extend(["get", "list", "patch", "update", "watch"]);
        v
    }
}

use Subresource::{Approval, Binding, Finalize, Scale, Status};

const NONE: &[&str] = &[];
const ALL: &[&str] = &["all"];

macro_rules! res {
    ($g:expr, $v:expr, $kind:expr, $plural:expr, $singular:expr, $ns:expr, $short:expr, $cat:expr, $subs:expr, $fields:expr) => {
        ResourceDef {
            group: $g,
            version: $v,
            kind: $kind,
            plural: $plural,
            singular: $singular,
            namespaced: $ns,
            short_names: $short,
            categories: $cat,
            subresources: $subs,
            field_selectors: $fields,
            delete_collection: true,
            storage_of: None,
            custom: None,
        }
    };
}

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

#[rustfmt::skip]
fn build() -> Vec<ResourceDef> {
    let mut v = vec![
        // core/v1
        res!("", "v1", "ConfigMap", "configmaps", "configmap", true, &["cm"], NONE, &[], NONE),
        res!("", "v1", "Endpoints", "endpoints", "endpoints", true, &["ep"], NONE, &[], NONE),
        res!("", "v1", "Event", "events", "event", true, &["ev"], NONE, &[], EVENT_FIELDS),
        res!("", "v1", "LimitRange", "limitranges", "limitrange", true, &["limits"], NONE, &[], NONE),
        ResourceDef { delete_collection: false, ..res!("", "v1", "Namespace", "namespaces", "namespace", false, &["ns"], NONE, &[Finalize, Status], &["status.phase"]) },
        res!("", "v1", "Node", "nodes", "node", false, &["no"], NONE, &[Status], &["spec.unschedulable"]),
        res!("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", true, &["pvc"], NONE, &[Status], NONE),
        res!("", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume", false, &["pv"], NONE, &[Status], NONE),
        res!("", "v1", "Pod", "pods", "pod", true, &["po"], ALL, &[Binding, Status], POD_FIELDS),
        res!("", "v1", "PodTemplate", "podtemplates", "podtemplate", true, NONE, NONE, &[], NONE),
        res!("", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller", true, &["rc"], ALL, &[Scale, Status], &["status.replicas"]),
        res!("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", true, &["quota"], NONE, &[Status], NONE),
        res!("", "v1", "Secret", "secrets", "secret", true, NONE, NONE, &[], &["type"]),
        res!("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", true, &["sa"], NONE, &[], NONE),
        res!("", "v1", "Service", "services", "service", true, &["svc"], ALL, &[Status], &["spec.clusterIP", "spec.type"]),
        // apiextensions
        ResourceDef { categories: &["api-extensions"], ..res!("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", "customresourcedefinition", false, &["crd", "crds"], NONE, &[Status], NONE) },
        // apps/v1
        res!("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", true, NONE, NONE, &[], NONE),
        res!("apps", "v1", "DaemonSet", "daemonsets", "daemonset", true, &["ds"], ALL, &[Status], NONE),
        res!("apps", "v1", "Deployment", "deployments", "deployment", true, &["deploy"], ALL, &[Scale, Status], NONE),
        res!("apps", "v1", "ReplicaSet", "replicasets", "replicaset", true, &["rs"], ALL, &[Scale, Status], &["status.replicas"]),
        res!("apps", "v1", "StatefulSet", "statefulsets", "statefulset", true, &["sts"], ALL, &[Scale, Status], NONE),
        // autoscaling
        ResourceDef { storage_of: Some(("autoscaling", "v2")), ..res!("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", true, &["hpa"], ALL, &[Status], NONE) },
        res!("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", true, &["hpa"], ALL, &[Status], NONE),
        // batch/v1
        res!("batch", "v1", "CronJob", "cronjobs", "cronjob", true, &["cj"], ALL, &[Status], NONE),
        res!("batch", "v1", "Job", "jobs", "job", true, NONE, ALL, &[Status], &["status.successful"]),
        // certificates
        res!("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", "certificatesigningrequest", false, &["csr"], NONE, &[Approval, Status], &["spec.signerName"]),
        // coordination
        res!("coordination.k8s.io", "v1", "Lease", "leases", "lease", true, NONE, NONE, &[], NONE),
        // discovery
        res!("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", true, NONE, NONE, &[], NONE),
        // events
        ResourceDef { storage_of: Some(("", "v1")), ..res!("events.k8s.io", "v1", "Event", "events", "event", true, &["ev"], NONE, &[], NONE) },
        // networking
        res!("networking.k8s.io", "v1", "IngressClass", "ingressclasses", "ingressclass", false, NONE, NONE, &[], NONE),
        res!("networking.k8s.io", "v1", "Ingress", "ingresses", "ingress", true, &["ing"], NONE, &[Status], NONE),
        res!("networking.k8s.io", "v1", "IPAddress", "ipaddresses", "ipaddress", false, &["ip"], NONE, &[], NONE),
        res!("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", "networkpolicy", true, &["netpol"], NONE, &[], NONE),
        res!("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs", "servicecidr", false, NONE, NONE, &[Status], NONE),
        // policy
        res!("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", true, &["pdb"], NONE, &[Status], NONE),
        // rbac
        res!("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", false, NONE, NONE, &[], NONE),
        res!("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", false, NONE, NONE, &[], NONE),
        res!("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", true, NONE, NONE, &[], NONE),
        res!("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", true, NONE, NONE, &[], NONE),
        // scheduling
        res!("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", false, &["pc"], NONE, &[], NONE),
        // storage
        res!("storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", false, NONE, NONE, &[], NONE),
        res!("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", false, NONE, NONE, &[], NONE),
        res!("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", "csistoragecapacity", true, NONE, NONE, &[], NONE),
        res!("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", false, &["sc"], NONE, &[], NONE),
        res!("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", "volumeattachment", false, NONE, NONE, &[Status], NONE),
        res!("storage.k8s.io", "v1", "VolumeAttributesClass", "volumeattributesclasses", "volumeattributesclass", false, &["vac"], NONE, &[], NONE),
    ];
    v.sort_by(|a, b| (a.group, a.version, a.plural).cmp(&(b.group, b.version, b.plural)));
    v
}

/// The catalogue: lookup by group/version/plural and by group/version/kind. The
/// built-in catalogue is process-wide; a server's catalogue adds the resources its
/// CustomResourceDefinitions define ([`Catalog::with_custom`]).
pub struct Catalog {
    resources: Vec<&'static ResourceDef>,
    by_path: HashMap<(&'static str, &'static str, &'static str), usize>,
}

/// Groups of built-in kinds in discovery order (upstream's group priorities).
const GROUP_ORDER: &[&str] = &[
    "",
    "apps",
    "events.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
];

impl Catalog {
    fn from_resources(mut resources: Vec<&'static ResourceDef>) -> Catalog {
        resources
            .sort_by(|a, b| (a.group, a.version, a.plural).cmp(&(b.group, b.version, b.plural)));
        let by_path = resources
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.group, r.version, r.plural), i))
            .collect();
        Catalog { resources, by_path }
    }

    /// The process-wide catalogue of built-in kinds.
    pub fn builtin() -> &'static Catalog {
        static DEFS: OnceLock<Vec<ResourceDef>> = OnceLock::new();
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| {
            let defs = DEFS.get_or_init(build);
            Catalog::from_resources(defs.iter().collect())
        })
    }

    /// The built-in catalogue plus `custom` resources (a built-in resource wins over a
    /// custom one at the same path).
    pub fn with_custom(custom: &[&'static ResourceDef]) -> Catalog {
        let builtin = Catalog::builtin();
        let mut all = builtin.resources.clone();
        all.extend(
            custom
                .iter()
                .copied()
                .filter(|r| builtin.lookup(r.group, r.version, r.plural).is_none()),
        );
        Catalog::from_resources(all)
    }

    /// Every served resource, sorted by group, version, plural.
    pub fn resources(&self) -> &[&'static ResourceDef] {
        &self.resources
    }

    /// The resource served at `group/version/plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
        self.by_path
            .get(&(group, version, plural))
            .map(|&i| self.resources[i])
    }

    /// The resource whose representation is stored for `def` (itself, or the storage
    /// version of the same objects).
    pub fn storage_def(&self, def: &'static ResourceDef) -> &'static ResourceDef {
        if let Some(c) = def.custom {
            return c.storage_def().unwrap_or(def);
        }
        def.storage_of
            .and_then(|(g, v)| Catalog::builtin().lookup(g, v, def.plural))
            .unwrap_or(def)
    }

    /// The resource for a kind in a group/version.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&'static ResourceDef> {
        self.resources
            .iter()
            .copied()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }

    /// Group names in discovery order: core first as "", the built-in groups in
    /// upstream's priority order, then the groups of custom resources by name.
    pub fn groups(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = GROUP_ORDER
            .iter()
            .copied()
            .filter(|g| self.resources.iter().any(|r| r.group == *g))
            .collect();
        let mut rest: Vec<&'static str> = self
            .resources
            .iter()
            .map(|r| r.group)
            .filter(|g| !GROUP_ORDER.contains(g))
            .collect();
        rest.sort_unstable();
        rest.dedup();
        out.extend(rest);
        out
    }

    /// Versions served for a group, preferred first (Kubernetes version priority:
    /// GA before beta before alpha, higher numbers first).
    pub fn versions(&self, group: &str) -> Vec<&'static str> {
        let mut vs: Vec<&'static str> = Vec::new();
        for r in &self.resources {
            if r.group == group && !vs.contains(&r.version) {
                vs.push(r.version);
            }
        }
        vs.sort_by(|a, b| compare_kube_versions(b, a));
        vs
    }

    /// Resources of one group/version.
    pub fn group_version(&self, group: &str, version: &str) -> Vec<&'static ResourceDef> {
        self.resources
            .iter()
            .copied()
            .filter(|r| r.group == group && r.version == version)
            .collect()
    }
}

/// Upstream's `version.CompareKubeAwareVersionStrings`: `v<major>` > `v<major>beta<n>` >
/// `v<major>alpha<n>` > anything else (compared as strings, reversed), higher numbers
/// first. Returns the ordering of `a` relative to `b` in priority (Greater = preferred).
pub fn compare_kube_versions(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || digits.starts_with('0') {
            return None;
        }
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) || num.starts_with('0') {
            return None;
        }
        Some((major, level, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => la.cmp(&lb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_schema() {
        use crate::machinery::schema::definition;
        for r in Catalog::builtin().resources() {
            assert!(
                definition(&r.definition()).is_some(),
                "no schema for {}",
                r.definition()
            );
        }
        assert!(definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").is_some());
    }

    #[test]
    fn lookups() {
        let c = Catalog::builtin();
        let d = c.lookup("apps", "v1", "deployments").expect("deployments");
        assert_eq!(d.kind, "Deployment");
        assert_eq!(d.qualified_plural(), "deployments.apps");
        assert_eq!(d.definition(), "io.k8s.api.apps.v1.Deployment");
        assert!(d.has_status());
        assert_eq!(c.versions("autoscaling"), vec!["v2", "v1"]);
        let r = c
            .lookup("rbac.authorization.k8s.io", "v1", "roles")
            .expect("roles");
        assert_eq!(r.definition(), "io.k8s.api.rbac.v1.Role");
        assert!(c.lookup("", "v1", "nonsense").is_none());
        let mut vs = vec![
            "v1alpha1",
            "v2",
            "v1beta1",
            "v1",
            "v10",
            "v11alpha2",
            "foo",
            "v2beta3",
        ];
        vs.sort_by(|a, b| compare_kube_versions(b, a));
        assert_eq!(
            vs,
            [
                "v10",
                "v2",
                "v1",
                "v2beta3",
                "v1beta1",
                "v11alpha2",
                "v1alpha1",
                "foo"
            ]
        );
        assert!(!c
            .lookup("", "v1", "namespaces")
            .expect("ns")
            .verbs()
            .contains(&"deletecollection"));
    }
}
