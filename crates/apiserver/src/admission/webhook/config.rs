//! The compiled view of the stored Validating- and MutatingWebhookConfigurations
//! (upstream `configuration/{validating,mutating}_webhook_manager.go` and
//! `webhook/accessors.go`): every webhook of every configuration, in configuration name
//! order, with its selectors parsed and defaults applied, rebuilt only when the two
//! tables change (persistent maps: a pointer comparison).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::storage::store::{Store, Table};
use apimachinery::selector::LabelSelector;

use super::rules::Rule;

/// Where ValidatingWebhookConfigurations are stored.
pub const VALIDATING: &str = "admissionregistration.k8s.io/validatingwebhookconfigurations";
/// Where MutatingWebhookConfigurations are stored.
pub const MUTATING: &str = "admissionregistration.k8s.io/mutatingwebhookconfigurations";

/// A Service a webhook is reached through (`clientConfig.service`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The URL path (`/` when absent).
    pub path: String,
    /// The Service port (default 443).
    pub port: u16,
}

/// `clientConfig`: a URL or a Service, and the CA bundle that verifies the webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientConfig {
    /// `url`.
    pub url: Option<String>,
    /// `service`.
    pub service: Option<ServiceRef>,
    /// `caBundle` (PEM, already base64-decoded by the JSON form's reader).
    pub ca_bundle: Option<Vec<u8>>,
}

/// One webhook of a configuration (upstream `WebhookAccessor`).
#[derive(Debug)]
pub struct Hook {
    /// The webhook's name (`name`).
    pub name: String,
    /// The configuration it belongs to.
    pub configuration: String,
    /// A key unique among the webhooks of one kind (`configuration/index`), for
    /// reinvocation bookkeeping.
    pub uid: String,
    /// How to reach it.
    pub client: ClientConfig,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore` (default `Fail`).
    pub ignore_failures: bool,
    /// `matchPolicy: Equivalent` (the v1 default) rather than `Exact`.
    pub equivalent: bool,
    /// `namespaceSelector` (everything when absent), or why it does not parse.
    pub namespace_selector: Result<LabelSelector, String>,
    /// `objectSelector` (everything when absent), or why it does not parse.
    pub object_selector: Result<LabelSelector, String>,
    /// `sideEffects` (`None`, `NoneOnDryRun`, `Some`, `Unknown`; absent in v1beta1 data).
    pub side_effects: Option<String>,
    /// `timeoutSeconds` (default 10).
    pub timeout: Duration,
    /// `admissionReviewVersions`, in preference order.
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub reinvoke_if_needed: bool,
    /// `matchConditions` (name, CEL expression).
    pub match_conditions: Vec<(String, String)>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(s) => LabelSelector::from_label_selector_json(s).map_err(|e| e.to_string()),
    }
}

fn client_config(v: Option<&Value>) -> ClientConfig {
    let Some(v) = v else {
        return ClientConfig::default();
    };
    let service = v
        .get("service")
        .filter(|s| !s.is_null())
        .map(|s| ServiceRef {
            namespace: s
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: s
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            path: s
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string(),
            port: s
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        });
    let ca_bundle = v.get("caBundle").and_then(Value::as_str).and_then(|b| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .ok()
    });
    ClientConfig {
        url: v.get("url").and_then(Value::as_str).map(str::to_string),
        service,
        ca_bundle,
    }
}

/// The webhooks of one stored configuration object.
pub fn hooks_of(config: &Value, mutating: bool) -> Vec<Hook> {
    let configuration = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(webhooks) = config.get("webhooks").and_then(Value::as_array) else {
        return Vec::new();
    };
    webhooks
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let s = |k: &str| w.get(k).and_then(Value::as_str);
            Hook {
                name: s("name").unwrap_or("").to_string(),
                configuration: configuration.clone(),
                uid: format!("{configuration}/{i}"),
                client: client_config(w.get("clientConfig")),
                rules: w
                    .get("rules")
                    .and_then(Value::as_array)
                    .map(|rs| rs.iter().map(Rule::from_json).collect())
                    .unwrap_or_default(),
                ignore_failures: s("failurePolicy") == Some("Ignore"),
                equivalent: s("matchPolicy") != Some("Exact"),
                namespace_selector: selector(w.get("namespaceSelector")),
                object_selector: selector(w.get("objectSelector")),
                side_effects: s("sideEffects").map(str::to_string),
                timeout: Duration::from_secs(
                    w.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(10)
                        .clamp(1, 30),
                ),
                review_versions: strings(w.get("admissionReviewVersions")),
                reinvoke_if_needed: mutating && s("reinvocationPolicy") == Some("IfNeeded"),
                match_conditions: w
                    .get("matchConditions")
                    .and_then(Value::as_array)
                    .map(|cs| {
                        cs.iter()
                            .map(|c| {
                                let f = |k: &str| {
                                    c.get(k).and_then(Value::as_str).unwrap_or("").to_string()
                                };
                                (f("name"), f("expression"))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The webhooks of one kind of configuration, in upstream's order (configurations by
/// name, webhooks in their order).
#[derive(Debug, Default)]
pub struct Hooks {
    /// The webhooks.
    pub hooks: Vec<Arc<Hook>>,
}

impl Hooks {
    fn from_table(table: &Table, mutating: bool) -> Hooks {
        let mut hooks = Vec::new();
        for obj in table.values() {
            let Ok(v) = obj.value() else { continue };
            hooks.extend(hooks_of(&v, mutating).into_iter().map(Arc::new));
        }
        Hooks { hooks }
    }
}

struct Cached {
    rv: u64,
    table: Table,
    hooks: Arc<Hooks>,
}

/// The current webhooks of one kind, rebuilt when their table changed (as the RBAC
/// authorizer's policy source).
pub struct Source {
    store: Arc<Store>,
    resource: &'static str,
    mutating: bool,
    cached: RwLock<Option<Cached>>,
}

impl Source {
    /// The webhooks stored under `resource` ([`VALIDATING`] or [`MUTATING`]).
    pub fn new(store: Arc<Store>, resource: &'static str, mutating: bool) -> Source {
        Source {
            store,
            resource,
            mutating,
            cached: RwLock::new(None),
        }
    }

    /// The webhooks as stored now.
    pub fn hooks(&self) -> Arc<Hooks> {
        let rv = self.store.current_rv();
        if let Some(c) = self
            .cached
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|c| c.rv == rv)
        {
            return Arc::clone(&c.hooks);
        }
        let mut guard = self.cached.write().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_ref().filter(|c| c.rv == rv) {
            return Arc::clone(&c.hooks);
        }
        let table = self.store.snapshot(self.resource).table;
        if let Some(c) = guard.as_mut() {
            if c.table.ptr_eq(&table) {
                c.rv = rv;
                return Arc::clone(&c.hooks);
            }
        }
        let hooks = Arc::new(Hooks::from_table(&table, self.mutating));
        *guard = Some(Cached {
            rv,
            table,
            hooks: Arc::clone(&hooks),
        });
        hooks
    }
}
