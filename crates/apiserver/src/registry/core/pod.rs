//! Pod (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{DeleteRequest, Deletion, Phase, StatusMeta, Strategy};
use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::{Bad, Cause, ErrorList};
use apimachinery::status::{ApiError, ApiResult};
use serde_json::json;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["po"], &PodStrategy).in_all();

/// Fields field selectors on pods accept (upstream `pod.ToSelectableFields`).
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

/// What Pod does differently.
pub struct PodStrategy;

impl Strategy for PodStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Binding, Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        POD_FIELDS
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&["ownerReferences"])
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            crate::registry::core::podspec::defaults::pod(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.pod(e, obj))
    }

    /// Graceful deletion (upstream `CheckGracefulDelete`): a scheduled pod that has not
    /// finished waits for its kubelet for the requested grace period, else the pod's
    /// `terminationGracePeriodSeconds`, else 30 seconds.
    fn delete(&self, obj: &mut Value, req: &DeleteRequest<'_>) -> Deletion {
        let phase = obj
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let scheduled = obj
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let g = req
            .grace_period
            .or_else(|| {
                obj.pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_i64)
            })
            .unwrap_or(30);
        if !(scheduled && g > 0 && phase != "Succeeded" && phase != "Failed") {
            return Deletion::Generic;
        }
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("terminationGracePeriodSeconds".into(), json!(g));
        }
        Deletion::Graceful(g)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    /// Upstream `BindingREST`: the Binding names this pod and a node.
    fn check_binding(&self, pod: &str, binding: &Value) -> ApiResult<()> {
        let name = binding
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if name != pod {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        let kind = binding
            .pointer("/target/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut errs = ErrorList::default();
        if !kind.is_empty() && kind != "Node" {
            errs.not_supported("target.kind", Bad::typed(kind), &["Node", "<empty>"]);
        }
        if node.is_empty() {
            errs.required("target.name", "");
        }
        errs.into_status("", "Binding", name)
    }

    /// Assign the pod to the Binding's node, merge the Binding's annotations and set
    /// `PodScheduled`; a pod already assigned or being deleted is a conflict.
    fn bind(&self, pod: &str, old: &Value, binding: &Value) -> ApiResult<Value> {
        let conflict = |detail: String| ApiError::conflict("", "pods/binding", pod, &detail);
        let assigned = old
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !assigned.is_empty() {
            return Err(conflict(format!(
                "pod {pod} is already assigned to node {}",
                json!(assigned)
            )));
        }
        if old
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return Err(conflict(format!(
                "pod {pod} is being deleted, cannot be assigned to a host"
            )));
        }
        let mut new = old.clone();
        new["spec"]["nodeName"] = binding
            .pointer("/target/name")
            .cloned()
            .unwrap_or_else(|| json!(""));
        if let Some(annotations) = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .filter(|a| !a.is_empty())
        {
            let meta = &mut new["metadata"];
            if !meta["annotations"].is_object() {
                meta["annotations"] = json!({});
            }
            for (k, v) in annotations {
                meta["annotations"][k] = v.clone();
            }
        }
        set_pod_scheduled(&mut new);
        Ok(new)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "Pod")
    }
}

/// Set the pod's `PodScheduled` condition to True (keeping its transition time when it
/// already was True).
fn set_pod_scheduled(pod: &mut Value) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let now = apimachinery::time::now_rfc3339();
    if let Some(list) = conditions.as_array_mut() {
        match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(c) if c["status"] == "True" => {}
            Some(c) => {
                c["status"] = json!("True");
                c["lastTransitionTime"] = json!(now);
                c["lastProbeTime"] = Value::Null;
                if let Some(m) = c.as_object_mut() {
                    m.remove("reason");
                    m.remove("message");
                }
            }
            None => list.push(json!({
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": null,
                "lastTransitionTime": now,
            })),
        }
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn pod(&self, e: &mut Errs, o: &Value) {
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            self.meta(e, o, NameRule::Subdomain, true);
            if self.is_update() {
                // Pod spec updates are restricted upstream with a diff-bearing message; only
                // metadata is checked here.
                return;
            }
            pod_spec(e, spec, "spec");
            for (list, path) in [
                ("containers", "spec.containers"),
                ("initContainers", "spec.initContainers"),
            ] {
                for (i, c) in items(spec, list).iter().enumerate() {
                    if let Some(img) = st(c, "image") {
                        if img.trim() != img {
                            e.invalid(
                                &child(&index(path, i), "image"),
                                s(img),
                                "must not have leading or trailing whitespace",
                            );
                        }
                    }
                }
            }
            if !items(spec, "ephemeralContainers").is_empty() {
                e.forbidden("spec.ephemeralContainers", "cannot be set on create");
            }
            if st(spec, "nodeName").is_some_and(|n| !n.is_empty())
                && !items(spec, "schedulingGates").is_empty()
            {
                e.forbidden(
                    "spec.nodeName",
                    "cannot be set until all schedulingGates have been cleared",
                );
            }
        }
    }
}
