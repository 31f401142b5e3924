//! What upstream's API Priority and Fairness configuration controllers do, run by the
//! server after every write of a FlowSchema or PriorityLevelConfiguration and at start:
//! the bootstrap configuration is ensured (mandatory objects restored, suggested ones
//! created and kept up to date while their `apf.kubernetes.io/autoupdate-spec`
//! annotation allows, field manager `api-priority-and-fairness-config-producer-v1`),
//! then every FlowSchema's `Dangling` condition says whether its priority level exists
//! (field manager `api-priority-and-fairness-config-consumer-v1`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Value};

use crate::endpoints::request::{Query, Target};
use crate::endpoints::{Api, WriteHook};
use crate::machinery::user::{self, UserInfo};
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};
use crate::registry::flowcontrol::bootstrap::{self, Revision};
use crate::registry::flowcontrol::{dangling_condition, DANGLING};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

fn def(plural: &str) -> Option<&'static ResourceDef> {
    Catalog::builtin().lookup(GROUP, "v1", plural)
}

/// The storage keys whose writes re-run the controller.
pub(crate) fn storage_keys() -> Vec<String> {
    ["flowschemas", "prioritylevelconfigurations"]
        .iter()
        .filter_map(|p| def(p).map(ResourceDef::storage_key))
        .collect()
}

/// The APF configuration controller: one pass at a time; writes during a pass (its own
/// included) ask for another.
#[derive(Default)]
pub(crate) struct ApfController {
    running: AtomicBool,
    dirty: AtomicBool,
}

impl WriteHook for Arc<ApfController> {
    fn after_write<'a>(
        &'a self,
        api: &'a Arc<Api>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(self.reconcile(api))
    }
}

impl ApfController {
    /// Ensure the bootstrap configuration and the FlowSchemas' status.
    pub(crate) async fn reconcile(&self, api: &Arc<Api>) {
        self.dirty.store(true, Ordering::SeqCst);
        loop {
            if self.running.swap(true, Ordering::SeqCst) {
                return;
            }
            // bounded: a pass that changes nothing ends it
            let mut passes = 0;
            while self.dirty.swap(false, Ordering::SeqCst) && passes < 5 {
                passes += 1;
                user::scope(Arc::new(UserInfo::apiserver()), pass(api)).await;
            }
            self.running.store(false, Ordering::SeqCst);
            if passes >= 5 || !self.dirty.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}

fn stored(api: &Api, def: &ResourceDef) -> Vec<Value> {
    api.store
        .snapshot(&def.storage_key())
        .table
        .values()
        .filter_map(|o| o.value().ok())
        .collect()
}

async fn pass(api: &Arc<Api>) {
    let (Some(fs_def), Some(pl_def)) = (def("flowschemas"), def("prioritylevelconfigurations"))
    else {
        return;
    };
    ensure(api, pl_def, bootstrap::mandatory_priority_levels(), true).await;
    ensure(api, pl_def, bootstrap::suggested_priority_levels(), false).await;
    ensure(api, fs_def, bootstrap::mandatory_flow_schemas(), true).await;
    ensure(api, fs_def, bootstrap::suggested_flow_schemas(), false).await;
    let levels: Vec<String> = stored(api, pl_def)
        .iter()
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    for fs in stored(api, fs_def) {
        if fs.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let pl = fs
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (status, reason, message) = dangling_condition(pl, levels.iter().any(|l| l == pl));
        let conditions = fs
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let current = conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(DANGLING));
        if current.is_some_and(|c| {
            c.get("status").and_then(Value::as_str) == Some(status)
                && c.get("reason").and_then(Value::as_str) == Some(reason)
                && c.get("message").and_then(Value::as_str) == Some(message.as_str())
        }) {
            continue;
        }
        let condition = json!({
            "type": DANGLING,
            "status": status,
            "lastTransitionTime": apimachinery::time::now_rfc3339(),
            "reason": reason,
            "message": message,
        });
        let mut new_conditions: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c.get("type").and_then(Value::as_str) != Some(DANGLING))
            .collect();
        new_conditions.push(condition);
        let mut obj = fs.clone();
        obj["status"] = json!({"conditions": new_conditions});
        let name = fs
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        write(
            api,
            fs_def,
            Method::PUT,
            Some(&name),
            Some(Subresource::Status),
            &obj,
            CONSUMER,
        )
        .await;
    }
}

async fn ensure(api: &Arc<Api>, def: &'static ResourceDef, objects: Vec<Value>, mandatory: bool) {
    for wanted in objects {
        let name = wanted["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let current = api
            .store
            .get(&def.storage_key(), &name)
            .and_then(|o| o.value().ok());
        if current
            .as_ref()
            .is_some_and(|c| c.pointer("/metadata/deletionTimestamp").is_some())
        {
            continue;
        }
        match bootstrap::revise(current.as_ref(), &wanted, mandatory) {
            Revision::Keep => {}
            Revision::Create(o) => write(api, def, Method::POST, None, None, &o, PRODUCER).await,
            Revision::Update(o) => {
                write(api, def, Method::PUT, Some(&name), None, &o, PRODUCER).await
            }
        }
    }
}

async fn write(
    api: &Arc<Api>,
    def: &'static ResourceDef,
    method: Method,
    name: Option<&str>,
    subresource: Option<Subresource>,
    body: &Value,
    manager: &str,
) {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "user-agent",
        HeaderValue::from_static("kube-apiserver/v1.36.0"),
    );
    let target = Target {
        resource: def,
        namespace: None,
        name: name.map(str::to_string),
        subresource,
        legacy_watch: false,
    };
    let query = Query::parse(Some(&format!("fieldManager={manager}")));
    let what = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Err(e) = api
        .serve(&method, target, &query, &headers, body.to_string().into())
        .await
    {
        tracing::warn!(resource = def.plural, name = %what, %method, error = %e, "APF configuration");
    }
}
