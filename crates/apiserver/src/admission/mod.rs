//! Dynamic admission: the plugins that run on every API write after the built-in ones,
//! as kube-apiserver's admission chain does (upstream
//! `staging/src/k8s.io/apiserver/pkg/admission`).
//!
//! A write builds one [`Attributes`] (upstream's `admission.Attributes`: operation,
//! resource, subresource, namespace, name, old object, options, dry run, user) and asks the
//! [`Chain`]: first [`Chain::admit`] (the mutating plugins, in registration order, on the
//! object before the kind's strategy prepares and validates it), then, once the object
//! that would be stored is known, [`Chain::validate`] (the validating plugins). Upstream's
//! order of the dynamic plugins is MutatingAdmissionPolicy, MutatingAdmissionWebhook,
//! ValidatingAdmissionPolicy, ValidatingAdmissionWebhook; the plugins are registered in
//! that order by the server's start-up.
//!
//! The built-in plugins (LimitRanger, ServiceAccount, storage, ResourceQuota, ...) run
//! where the write path marks them (`endpoints/write.rs`), around these; those
//! [`builtin::Plugin`] names can be turned off (`--disable-admission-plugins`).
//!
//! A request no plugin [`Plugin::handles`] costs one check: the write path then stores in
//! one step under the store's lock. A handled update is read, admitted and validated
//! outside the lock, then stored only if the object did not change meanwhile (else it is
//! computed again, as upstream's `GuaranteedUpdate`).

pub mod builtin;

pub mod webhook;

pub mod policy;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::machinery::user::UserInfo;
use crate::registry::catalog::ResourceDef;
use apimachinery::status::ApiResult;

/// A boxed future (the plugins' methods are object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The operation a request performs (upstream `admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `CREATE` (also POSTs to subresources such as `pods/binding`, `pods/eviction`).
    Create,
    /// `UPDATE` (PUT, PATCH, apply, status and scale writes).
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT` (exec, attach, port-forward, proxy).
    Connect,
}

impl Operation {
    /// The name used in rules and AdmissionReviews (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// A group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gvk {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// What a plugin is told about one request (upstream `admission.Attributes`).
#[derive(Clone, Debug)]
pub struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// The resource as requested (group, version, plural, kind, scope).
    pub resource: &'static ResourceDef,
    /// The subresource (`status`, `scale`, `binding`, `eviction`, ...).
    pub subresource: Option<&'static str>,
    /// The kind of the object the request carries: the resource's kind, or the
    /// subresource's (`autoscaling/v1 Scale`, `policy/v1 Eviction`, `v1 Binding`).
    pub kind: Gvk,
    /// The namespace (`None` for cluster-scoped resources).
    pub namespace: Option<String>,
    /// The object's name (empty on a create with `generateName` before a name is chosen).
    pub name: String,
    /// The stored object an update or delete starts from, as served at the request's
    /// version.
    pub old_object: Option<Value>,
    /// The request's options object (`CreateOptions`, `UpdateOptions`, `DeleteOptions`,
    /// as JSON with `kind` and `apiVersion`).
    pub options: Option<Value>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// Who sends the request (`None` for the server's own writes).
    pub user: Option<Arc<UserInfo>>,
    /// Whether this call is a reinvocation (upstream `ReinvocationContext.IsReinvoke`):
    /// the mutating pass runs again because a later plugin changed the object.
    pub reinvocation: bool,
    /// What plugins keep about this request between their first call and a reinvocation
    /// (upstream `ReinvocationContext.Value`); shared by the clones of one request's
    /// attributes.
    pub context: RequestContext,
}

/// Per-request state of the plugins, by plugin name (upstream's reinvocation context
/// values): shared between the clones of one request's [`Attributes`].
#[derive(Clone, Default)]
pub struct RequestContext(
    Arc<std::sync::Mutex<BTreeMap<&'static str, Box<dyn std::any::Any + Send>>>>,
);

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestContext")
    }
}

impl RequestContext {
    /// Forget every plugin's state (a new admission of the request: an update computed
    /// again after a conflict).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Run `f` on the state `plugin` keeps for this request (created by `Default` on
    /// first use).
    pub fn with<T: Default + Send + 'static, R>(
        &self,
        plugin: &'static str,
        f: impl FnOnce(&mut T) -> R,
    ) -> R {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let slot = map.entry(plugin).or_insert_with(|| Box::new(T::default()));
        if !slot.is::<T>() {
            *slot = Box::new(T::default());
        }
        match slot.downcast_mut::<T>() {
            Some(t) => f(t),
            None => f(&mut T::default()),
        }
    }
}

impl Attributes {
    /// Attributes of a request on `resource` (kind = the resource's kind), by the
    /// current request's user.
    pub fn new(
        operation: Operation,
        resource: &'static ResourceDef,
        subresource: Option<&'static str>,
        namespace: Option<String>,
        name: String,
    ) -> Attributes {
        Attributes {
            operation,
            resource,
            subresource,
            kind: Gvk {
                group: resource.group.to_string(),
                version: resource.version.to_string(),
                kind: resource.kind.to_string(),
            },
            namespace,
            name,
            old_object: None,
            options: None,
            dry_run: false,
            user: crate::machinery::user::current(),
            reinvocation: false,
            context: RequestContext::default(),
        }
    }
}

/// What plugins add to the answer of an admitted request.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// `Warning` headers for the client.
    pub warnings: Vec<String>,
    /// Audit annotations (`<plugin or webhook>/<key>` → value).
    pub audit_annotations: BTreeMap<String, String>,
}

/// One admission plugin. Every method has a do-nothing default, so a plugin states only
/// the phases it takes part in.
pub trait Plugin: Send + Sync {
    /// The plugin's name (`MutatingAdmissionWebhook`, ...).
    #[allow(dead_code)] // for logs and metrics
    fn name(&self) -> &'static str;

    /// Whether the plugin may act on this request at all (cheap: read from the plugin's
    /// compiled view of its configuration). The chain skips the plugin, and the write
    /// path its slow path, when this is false.
    fn handles(&self, attrs: &Attributes) -> bool;

    /// The mutating phase: may change `obj` (`null` on a delete and nothing to
    /// mutate: its object is `attrs.old_object`).
    fn admit<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: &'a mut Value,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        let _ = (attrs, obj, out);
        Box::pin(async { Ok(()) })
    }

    /// Whether, after a mutating pass in which a later plugin changed the object, this
    /// plugin wants to be called again for this request (upstream's reinvocation:
    /// `reinvocationPolicy: IfNeeded`). The default: never.
    fn wants_reinvocation(&self, attrs: &Attributes) -> bool {
        let _ = attrs;
        false
    }

    /// Whether the plugin, though no later plugin changed the object, wants to be called
    /// again: a plugin dispatching to several parties (the webhooks of a configuration)
    /// may need one of them called again because a later one of its own changed the
    /// object. Asked of plugins up to and including the last one that changed the
    /// object (with `attrs.reinvocation` set). The default: never.
    fn wants_own_reinvocation(&self, attrs: &Attributes) -> bool {
        let _ = attrs;
        false
    }

    /// The validating phase: `obj` is what would be stored (`None` on a delete, whose
    /// object is `attrs.old_object`).
    fn validate<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: Option<&'a Value>,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        let _ = (attrs, obj, out);
        Box::pin(async { Ok(()) })
    }
}

/// The dynamic admission plugins, in upstream's order.
#[derive(Default)]
pub struct Chain {
    plugins: RwLock<Vec<Arc<dyn Plugin>>>,
}

impl Chain {
    /// An empty chain: admits everything.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Add `plugin` after the ones registered so far.
    pub fn register(&self, plugin: Arc<dyn Plugin>) {
        self.plugins
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(plugin);
    }

    fn snapshot(&self) -> Vec<Arc<dyn Plugin>> {
        self.plugins
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether any plugin handles the request (if none does, the write takes the fast
    /// path and the chain is not asked again).
    pub fn handles(&self, attrs: &Attributes) -> bool {
        self.plugins
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|p| p.handles(attrs))
    }

    /// The mutating phase over `obj`: each plugin in order, then once more those that
    /// want reinvocation if the object changed after them.
    pub async fn admit(&self, attrs: &Attributes, obj: &mut Value) -> ApiResult<Outcome> {
        let plugins = self.snapshot();
        attrs.context.clear();
        let mut out = Outcome::default();
        // the index of the last plugin that changed the object
        let mut last_change = None;
        for (i, p) in plugins.iter().enumerate() {
            if !p.handles(attrs) {
                continue;
            }
            let before = obj.clone();
            p.admit(attrs, obj, &mut out).await?;
            if *obj != before {
                last_change = Some(i);
            }
        }
        if let Some(last) = last_change {
            let mut again = attrs.clone();
            again.reinvocation = true;
            for (i, p) in plugins.iter().enumerate().take(last + 1) {
                if !p.handles(&again) {
                    continue;
                }
                let wants =
                    (i < last && p.wants_reinvocation(&again)) || p.wants_own_reinvocation(&again);
                if wants {
                    p.admit(&again, obj, &mut out).await?;
                }
            }
        }
        Ok(out)
    }

    /// The validating phase; `obj` is what would be stored (`None` on a delete).
    pub async fn validate(
        &self,
        attrs: &Attributes,
        obj: Option<&Value>,
        out: &mut Outcome,
    ) -> ApiResult<()> {
        for p in self.snapshot() {
            if p.handles(attrs) {
                p.validate(attrs, obj, out).await?;
            }
        }
        Ok(())
    }
}

tokio::task_local! {
    /// The warnings of the request being served (upstream's `warning.AddWarning(ctx)`).
    static WARNINGS: std::sync::Mutex<Vec<String>>;
}

/// Add warnings to the answer of the request being served (a no-op outside
/// [`collect_warnings`], e.g. for the server's own writes).
pub fn warn(warnings: impl IntoIterator<Item = String>) {
    let _ = WARNINGS.try_with(|w| w.lock().unwrap_or_else(|e| e.into_inner()).extend(warnings));
}

/// Run `f` (serving one request) and return what it answered with the warnings
/// [`warn`] recorded meanwhile.
pub async fn collect_warnings<F: Future>(f: F) -> (F::Output, Vec<String>) {
    WARNINGS
        .scope(std::sync::Mutex::new(Vec::new()), async {
            let out = f.await;
            let warnings = WARNINGS
                .try_with(|w| std::mem::take(&mut *w.lock().unwrap_or_else(|e| e.into_inner())))
                .unwrap_or_default();
            (out, warnings)
        })
        .await
}
