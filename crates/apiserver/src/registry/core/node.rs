//! Node (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["no"], &NodeStrategy);

/// What Node does differently.
pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    /// Kubelets register nodes with their status (upstream node `PrepareForCreate` keeps
    /// it).
    fn prepare_for_create(&self, _def: &ResourceDef, _obj: &mut Value) {}

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::NODE)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if phase.create() {
            if let Some(spec) = child_or_insert(o, "spec") {
                not_ready_taint(spec);
            }
        }
        if let Some(status) = child(o, "status") {
            if is_nil(status, "allocatable") {
                if let Some(cap @ Value::Object(_)) = status.get("capacity") {
                    let cap = cap.clone();
                    status.insert("allocatable".into(), cap);
                }
            }
            resource_list(status, "capacity", true);
            resource_list(status, "allocatable", true);
        }
    }

    /// What the always-on `TaintNodesByCondition` admission plugin (upstream
    /// `plugin/pkg/admission/nodetaint`) adds to a new Node: the
    /// `node.kubernetes.io/not-ready:NoSchedule` taint, unless a taint with that key and
    /// effect is there already. The node lifecycle controller removes it once the node
    /// is Ready.
    pub(crate) fn not_ready_taint(spec: &mut Obj) {
        if is_nil(spec, "taints") {
            spec.insert("taints".into(), json!([]));
        }
        let Some(Value::Array(taints)) = spec.get_mut("taints") else {
            return;
        };
        let present = taints.iter().any(|t| {
            t.get("key").and_then(Value::as_str) == Some(NOT_READY)
                && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
        });
        if !present {
            taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
        }
    }

    const NOT_READY: &str = "node.kubernetes.io/not-ready";
}

pub(crate) mod printer {
    use std::collections::BTreeSet;

    use crate::registry::table::prelude::*;

    const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";

    fn node_address(v: &Value, ty: &str) -> String {
        arr(v, "/status/addresses")
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(ty))
            .and_then(|a| a.get("address").and_then(Value::as_str))
            .unwrap_or("<none>")
            .to_string()
    }

    fn node_status(v: &Value) -> String {
        let ready = arr(v, "/status/conditions")
            .iter()
            .rev()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
        let mut status = vec![match ready {
            Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => "Ready",
            Some(_) => "NotReady",
            None => "Unknown",
        }];
        if crate::registry::table::flag(v, "/spec/unschedulable") {
            status.push("SchedulingDisabled");
        }
        status.join(",")
    }

    fn node_roles(v: &Value) -> String {
        let mut roles = BTreeSet::new();
        if let Some(labels) = v.pointer("/metadata/labels").and_then(Value::as_object) {
            for (k, val) in labels {
                if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                    if !role.is_empty() {
                        roles.insert(role.to_string());
                    }
                } else if k == "kubernetes.io/role" {
                    if let Some(r) = val.as_str().filter(|r| !r.is_empty()) {
                        roles.insert(r.to_string());
                    }
                }
            }
        }
        if roles.is_empty() {
            "<none>".into()
        } else {
            roles.into_iter().collect::<Vec<_>>().join(",")
        }
    }

    fn or_unknown(v: &Value, ptr: &str) -> Value {
        json!(opt_s(v, ptr)
            .filter(|x| !x.is_empty())
            .unwrap_or("<unknown>"))
    }

    /// Nodes.
    pub(crate) static NODE: Printer = Printer {
        columns: &[
            NAME,
            string("Status", text("The status of the node")),
            string("Roles", text("The roles of the node")),
            AGE,
            string("Version", field(NODE_INFO, "kubeletVersion")),
            wide(string(
                "Internal-IP",
                field("io.k8s.api.core.v1.NodeStatus", "addresses"),
            )),
            wide(string(
                "External-IP",
                field("io.k8s.api.core.v1.NodeStatus", "addresses"),
            )),
            wide(string("OS-Image", field(NODE_INFO, "osImage"))),
            wide(string("Kernel-Version", field(NODE_INFO, "kernelVersion"))),
            wide(string(
                "Container-Runtime",
                field(NODE_INFO, "containerRuntimeVersion"),
            )),
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(node_status(v)),
                json!(node_roles(v)),
                age(v, now),
                json!(s(v, "/status/nodeInfo/kubeletVersion")),
                json!(node_address(v, "InternalIP")),
                json!(node_address(v, "ExternalIP")),
                or_unknown(v, "/status/nodeInfo/osImage"),
                or_unknown(v, "/status/nodeInfo/kernelVersion"),
                or_unknown(v, "/status/nodeInfo/containerRuntimeVersion"),
            ])
        },
    };
}
