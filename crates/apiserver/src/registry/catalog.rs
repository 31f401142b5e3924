//! The resource catalogue: every kind the server serves, described once.
//!
//! Discovery, OpenAPI, routing, field selectors and storage all read this table; nothing
//! else in the server hard-codes a resource. A built-in kind's entry comes from its Rust
//! type (group, version, kind, plural, scope) and its registry file's [`Kind`] (short
//! names, categories, and the [`Strategy`] that says everything it does differently:
//! subresources, selectable fields, defaults, validation, printer, ...). The list of
//! built-in kinds is [`crate::registry::builtin_kinds`]; custom resources join from their
//! CustomResourceDefinitions.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use serde_json::json;

use crate::machinery::schema::{self, Definitions, Register};
use crate::registry::table::Printer;
use crate::storage::store::View;
use apimachinery::field::Cause;
use apimachinery::status::ApiResult;

/// When defaults are applied.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// What upstream applies on every decode: updates, status and finalize writes.
    Scheme,
    /// A create: the scheme defaults plus what the kind's strategy and the always-on
    /// admission plugins add at creation (namespace finalizer, pod priority, ...).
    Create,
}

impl Phase {
    /// Whether this is a create.
    pub fn create(self) -> bool {
        self == Phase::Create
    }
}

/// What a status update takes from the request's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusMeta {
    /// Nothing (`ResetObjectMetaForStatus`): newer kinds.
    Reset,
    /// Everything but the server's own fields and the listed ones (older kinds, whose
    /// status strategy only resets the spec: Deployment keeps its labels, Pod its owner
    /// references).
    KeepExcept(&'static [&'static str]),
}

/// The parts of `DeleteOptions` a kind's delete looks at.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeleteRequest<'a> {
    /// `gracePeriodSeconds`.
    pub grace_period: Option<i64>,
    /// `propagationPolicy` (`Orphan`, `Background`, `Foreground`).
    pub propagation: Option<&'a str>,
}

/// How a kind's DELETE differs from the generic store's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// The generic rules: propagation finalizers, then gone unless finalizers hold it.
    Generic,
    /// Graceful deletion (upstream `CheckGracefulDelete`): kept for this many seconds.
    Graceful(i64),
    /// Gone at once.
    Now,
    /// Stored as the strategy changed it (a namespace becomes `Terminating`).
    Keep,
    /// Nothing changes (already being deleted).
    Unchanged,
}

/// What one kind does differently. Every method has the generic store's behaviour as
/// its default, so a kind's registry file states only its differences.
pub trait Strategy: Sync {
    /// Subresources served (`status`, `scale`, ...).
    fn subresources(&self) -> &'static [Subresource] {
        &[]
    }

    /// Fields a field selector may name besides `metadata.name` and
    /// `metadata.namespace`.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether `deletecollection` is served.
    fn delete_collection(&self) -> bool {
        true
    }

    /// Whether the kind is only created, never stored (the access and token reviews:
    /// a POST answers with the computed status; discovery lists only `create`).
    fn create_only(&self) -> bool {
        false
    }

    /// The warning every request to a deprecated built-in kind carries (upstream's
    /// `APILifecycleDeprecated`/`APILifecycleReplacement`, sent by the handler
    /// installer on every verb).
    fn deprecation_warning(&self) -> Option<&'static str> {
        None
    }

    /// Whether the kind tracks `metadata.generation`: 1 at create, bumped by the
    /// updates [`Strategy::bumps_generation`] counts. Other kinds keep what a create
    /// was given and the stored value on update (upstream's `BeforeUpdate` pins it);
    /// every kind's is bumped when a deletion starts (`BeforeDelete`, `markAsDeleting`)
    /// if it has one.
    fn uses_generation(&self) -> bool {
        false
    }

    /// Whether an update from `old` to `new` (both prepared: status restored, the
    /// kind's `prepare_for_update` applied) bumps the generation of a kind that tracks
    /// it; by default when the `spec` changed, as most strategies' `PrepareForUpdate`.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec")
    }

    /// Defaults of the object in `phase`.
    fn default(&self, _def: &ResourceDef, _obj: &mut Value, _phase: Phase) {}

    /// `PrepareForCreate` after the server's metadata is set: by default the status is
    /// reset when the kind has a status subresource.
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Value) {
        if def.has_status() {
            if let Some(o) = obj.as_object_mut() {
                o.insert("status".into(), json!({}));
            }
        }
    }

    /// `PrepareForUpdate` beyond the generic rules (server-owned metadata kept, the
    /// status kept when it has its own subresource, generation bumped).
    fn prepare_for_update(&self, _old: &Value, _new: &mut Value) {}

    /// What a status update takes from the request's metadata.
    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::Reset
    }

    /// A `/status` or `/approval` update beyond the generic rules (what the kind's
    /// status or approval strategy's `PrepareForUpdate` adds): `new` is prepared by
    /// [`crate::registry::rest::prepare_status_update`], `old` is the stored object.
    fn prepare_for_subresource_update(&self, _sub: Subresource, _old: &Value, _new: &mut Value) {}

    /// Validation of an update through subresource `sub` (upstream's status or
    /// approval strategy's `ValidateUpdate`); by default the kind's update validation.
    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        _sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        self.validate(def, obj, Some(old))
    }

    /// Validation of a create (`old` is `None`) or an update: the causes, in
    /// upstream's order, of what is wrong with `obj`.
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause>;

    /// The `kubectl get` columns; `None`: upstream's default table (name and age).
    fn printer(&self) -> Option<&'static Printer> {
        None
    }

    /// An object converted between two versions this kind is served in (`apiVersion`
    /// strings); by default only `apiVersion` changes.
    fn convert(&self, mut obj: Value, _from: &str, to: &str) -> Result<Value, String> {
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), json!(to));
        }
        Ok(obj)
    }

    /// Create-time work that reads other stored objects (a Service's cluster IP).
    fn allocate(&self, _view: &View<'_>, _obj: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Update-time work that reads other stored objects, after validation (a Service's
    /// node ports for a type change or a new port); `old` is the stored object.
    fn allocate_update(&self, _view: &View<'_>, _old: &Value, _new: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// How a DELETE of `obj` differs from the generic store's; may change `obj`.
    fn delete(&self, _obj: &mut Value, _req: &DeleteRequest<'_>) -> Deletion {
        Deletion::Generic
    }

    /// Whether a DELETE answers with the deleted object instead of a `Status`.
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// Check a `binding` subresource body for the object `name` (upstream
    /// `BindingREST`); only kinds with [`Subresource::Binding`] are asked.
    fn check_binding(&self, _name: &str, _binding: &Value) -> ApiResult<()> {
        Err(apimachinery::status::ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ))
    }

    /// The object `old` bound as `binding` says.
    fn bind(&self, _name: &str, old: &Value, _binding: &Value) -> ApiResult<Value> {
        Ok(old.clone())
    }

    /// Whether something besides `metadata.finalizers` keeps a deleted object
    /// (a namespace's `spec.finalizers`).
    fn held_by_spec(&self, _obj: &Value) -> bool {
        false
    }
}

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
    /// `/log` on pods: the container's log as text (get only; upstream `LogREST`).
    Log,
    /// `/exec` on pods: a command in a container (a streaming connection).
    Exec,
    /// `/attach` on pods: the streams of a running container (a streaming connection).
    Attach,
    /// `/portforward` on pods: forwarded ports (a streaming connection).
    PortForward,
    /// `/eviction` on pods: delete a pod as its PodDisruptionBudget allows (create only;
    /// `policy/v1` or `policy/v1beta1` Eviction bodies).
    Eviction,
    /// `/token` on service accounts: a TokenRequest (`authentication.k8s.io/v1`) for a
    /// bound token (create only; nothing is stored).
    Token,
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
            Subresource::Log => "log",
            Subresource::Exec => "exec",
            Subresource::Attach => "attach",
            Subresource::PortForward => "portforward",
            Subresource::Eviction => "eviction",
            Subresource::Token => "token",
        }
    }

    /// Verbs the subresource supports (discovery).
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Subresource::Finalize => &["update"],
            Subresource::Binding | Subresource::Eviction | Subresource::Token => &["create"],
            Subresource::Log => &["get"],
            Subresource::Exec | Subresource::Attach | Subresource::PortForward => {
                &["create", "get"]
            }
            _ => &["get", "patch", "update"],
        }
    }
}

/// One served resource.
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
    /// What the kind does differently from the generic store.
    pub strategy: &'static dyn Strategy,
    /// A built-in kind's Rust type: its schema and typed decode. `None` for custom
    /// resources (their CRD's schema describes them).
    pub typed: Option<Typed>,
}

/// What the Rust type of a built-in kind gives the server.
#[derive(Clone, Copy)]
pub struct Typed {
    /// Registers the kind's schema ([`crate::machinery::schema`]).
    pub register: Register,
    /// Whether a value decodes as the type (wrong field types are 400s).
    pub decodes: fn(&Value) -> Result<(), String>,
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} {}", self.group, self.version, self.kind)
    }
}

/// What a built-in kind's registry file declares beyond its Rust type.
pub struct Kind {
    /// Short names (`deploy`, `po`, ...).
    pub short_names: &'static [&'static str],
    /// Categories (`all`).
    pub categories: &'static [&'static str],
    /// The group and version whose representation is stored, when this version is
    /// served from another one's storage.
    pub storage_of: Option<(&'static str, &'static str)>,
    /// What the kind does differently.
    pub strategy: &'static dyn Strategy,
}

impl Kind {
    /// A kind with its short names and strategy, in no category.
    pub const fn new(
        short_names: &'static [&'static str],
        strategy: &'static dyn Strategy,
    ) -> Kind {
        Kind {
            short_names,
            categories: &[],
            storage_of: None,
            strategy,
        }
    }

    /// The same kind in the `all` category (what `kubectl get all` lists).
    pub const fn in_all(self) -> Kind {
        Kind {
            categories: &["all"],
            ..self
        }
    }

    /// The same kind in `categories`.
    pub const fn in_categories(self, categories: &'static [&'static str]) -> Kind {
        Kind { categories, ..self }
    }

    /// The same kind served from the storage of `group/version`.
    pub const fn stored_as(self, group: &'static str, version: &'static str) -> Kind {
        Kind {
            storage_of: Some((group, version)),
            ..self
        }
    }
}

/// The catalogue entry of the built-in kind `T` (names and scope from the type) as its
/// registry file declares it.
pub fn builtin<T>(kind: &'static Kind) -> ResourceDef
where
    T: k8s_openapi::Resource + schemars::JsonSchema + serde::de::DeserializeOwned,
    T::Scope: 'static,
{
    let namespaced = std::any::TypeId::of::<T::Scope>()
        == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
    ResourceDef {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        singular: leak_lowercase(T::KIND),
        namespaced,
        short_names: kind.short_names,
        categories: kind.categories,
        subresources: kind.strategy.subresources(),
        field_selectors: kind.strategy.selectable_fields(),
        delete_collection: kind.strategy.delete_collection(),
        storage_of: kind.storage_of,
        custom: None,
        strategy: kind.strategy,
        typed: Some(Typed {
            register: schema::register::<T>,
            decodes: schema::decodes_as::<T>,
        }),
    }
}

/// The schemas of every built-in kind and of the other API types requests and answers
/// carry (Binding, Scale, Eviction, Status, DeleteOptions, discovery documents), generated
/// at first use.
pub fn definitions() -> &'static Definitions {
    use k8s_openapi::api::{authentication, autoscaling, core, policy};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(|| {
        let kinds = Catalog::builtin()
            .resources()
            .iter()
            .filter_map(|r| r.typed.map(|t| t.register));
        let others: [Register; 12] = [
            schema::register::<core::v1::Binding>,
            schema::register::<autoscaling::v1::Scale>,
            schema::register::<policy::v1::Eviction>,
            schema::register::<authentication::v1::TokenRequest>,
            schema::register::<meta::Status>,
            schema::register::<meta::DeleteOptions>,
            schema::register::<meta::WatchEvent<Value>>,
            schema::register::<meta::APIResourceList>,
            schema::register::<meta::APIGroupList>,
            schema::register::<meta::APIGroup>,
            schema::register::<meta::APIVersions>,
            schema::register::<meta::ListMeta>,
        ];
        Definitions::generate(kinds.chain(others))
    })
}

/// The singular name of a built-in kind: its kind in lower case (built once per kind,
/// for the life of the process).
fn leak_lowercase(kind: &str) -> &'static str {
    Box::leak(kind.to_ascii_lowercase().into_boxed_str())
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
        if self.group == "apiregistration.k8s.io" {
            return format!(
                "io.k8s.kube-aggregator.pkg.apis.apiregistration.{}.{}",
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
        if self.strategy.create_only() {
            return vec!["create"];
        }
        let mut v = vec!["create", "delete"];
        if self.delete_collection {
            v.push("deletecollection");
        }
        v.extend(["get", "list", "patch", "update", "watch"]);
        v
    }
}

/// The catalogue: lookup by group/version/plural and by group/version/kind. The
/// built-in catalogue is process-wide; a server's catalogue adds the resources its
/// CustomResourceDefinitions define ([`Catalog::with_custom`]).
pub struct Catalog {
    resources: Vec<&'static ResourceDef>,
    by_path: HashMap<(&'static str, &'static str, &'static str), usize>,
}

/// Groups of built-in kinds in discovery order (upstream's group priorities): the order
/// in which [`crate::registry::builtin_kinds`] first names them.
fn group_order() -> &'static [&'static str] {
    static ORDER: OnceLock<Vec<&'static str>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let mut order: Vec<&'static str> = Vec::new();
        for r in builtin_defs() {
            if !order.contains(&r.group) {
                order.push(r.group);
            }
        }
        order
    })
}

/// The built-in kinds in catalogue order.
fn builtin_defs() -> &'static [ResourceDef] {
    static DEFS: OnceLock<Vec<ResourceDef>> = OnceLock::new();
    DEFS.get_or_init(crate::registry::builtin_kinds)
}

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
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| Catalog::from_resources(builtin_defs().iter().collect()))
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
    #[cfg(test)]
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&'static ResourceDef> {
        self.resources
            .iter()
            .copied()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }

    /// Group names in discovery order: core first as "", the built-in groups in
    /// upstream's priority order, then the groups of custom resources by name.
    pub fn groups(&self) -> Vec<&'static str> {
        let order = group_order();
        let mut out: Vec<&'static str> = order
            .iter()
            .copied()
            .filter(|g| self.resources.iter().any(|r| r.group == *g))
            .collect();
        let mut rest: Vec<&'static str> = self
            .resources
            .iter()
            .map(|r| r.group)
            .filter(|g| !order.contains(g))
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
        let defs = definitions();
        for r in Catalog::builtin().resources() {
            assert!(
                defs.get(&r.definition()).is_some(),
                "no schema for {}",
                r.definition()
            );
        }
        assert!(defs
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .is_some());
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
