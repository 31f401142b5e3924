//! Service (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, StatusMeta, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use crate::storage::store::View;
use apimachinery::field::Cause;
use apimachinery::status::{ApiError, ApiResult};
use serde_json::json;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["svc"], &ServiceStrategy).in_all();

/// What Service does differently.
pub struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.clusterIP", "spec.type"]
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).legacy(obj)
    }

    fn allocate(&self, view: &View<'_>, obj: &mut Value) -> ApiResult<()> {
        assign_cluster_ip(view, obj)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "Service")
    }
}

/// The service CIDR cluster IPs come from (upstream default 10.96.0.0/12).
const SERVICE_CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_CIDR_SIZE: u32 = 1 << 20;

/// Pick a free cluster IP (random probe over the service CIDR, skipping .0 and .1).
fn allocate_cluster_ip(view: &View<'_>) -> ApiResult<String> {
    let used: std::collections::HashSet<String> = view
        .table("/services")
        .map(|t| {
            t.values()
                .filter_map(|o| o.field("spec.clusterIP").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    use rand::Rng;
    let mut rng = rand::rng();
    for _ in 0..64 {
        let off = rng.random_range(2..SERVICE_CIDR_SIZE - 1);
        let ip = std::net::Ipv4Addr::from(SERVICE_CIDR_BASE + off).to_string();
        if !used.contains(&ip) {
            return Ok(ip);
        }
    }
    Err(ApiError::internal(
        "failed to allocate a serviceIP: range is full",
    ))
}

fn assign_cluster_ip(view: &View<'_>, obj: &mut Value) -> ApiResult<()> {
    let ty = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if ty == "ExternalName" {
        return Ok(());
    }
    let given = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if given == "None" {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("clusterIPs".into(), json!(["None"]));
        }
        return Ok(());
    }
    let ip = if given.is_empty() {
        allocate_cluster_ip(view)?
    } else {
        let in_use = view.table("/services").is_some_and(|t| {
            t.values()
                .any(|o| o.field("spec.clusterIP") == Some(given.as_str()))
        });
        if in_use {
            return Err(ApiError::invalid(
                "",
                "Service",
                crate::registry::rest::meta_str(obj, "name").unwrap_or(""),
                vec![apimachinery::status::Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: [\"{given}\"]: failed to allocate IP {given}: provided IP is already allocated"),
                    field: "spec.clusterIPs".into(),
                }],
            ));
        }
        given
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    Ok(())
}
