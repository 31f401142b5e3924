//! Pod (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{
    DeleteRequest, Deletion, Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource,
};
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
        &[
            Subresource::Attach,
            Subresource::Binding,
            Subresource::Eviction,
            Subresource::Exec,
            Subresource::Log,
            Subresource::PortForward,
            Subresource::Status,
        ]
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
        Some(&printer::POD)
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

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const POD_SPEC: &str = "io.k8s.api.core.v1.PodSpec";

    const POD_STATUS: &str = "io.k8s.api.core.v1.PodStatus";

    /// Pods (`core/v1`).
    pub(crate) static POD: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Ready",
                text("The aggregate readiness state of this pod for accepting traffic."),
            ),
            string(
                "Status",
                text("The aggregate status of the containers in this pod."),
            ),
            string("Restarts", text("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.")),
            AGE,
            wide(string("IP", field(POD_STATUS, "podIP"))),
            wide(string("Node", field(POD_SPEC, "nodeName"))),
            wide(string("Nominated Node", field(POD_STATUS, "nominatedNodeName"))),
            wide(string("Readiness Gates", field(POD_SPEC, "readinessGates"))),
        ],
        print: print_pod,
    };

    /// The state of a container status: `waiting`, `running` or `terminated`.
    fn state<'a>(c: &'a Value, which: &str) -> Option<&'a Value> {
        c.get("state")?.get(which).filter(|v| v.is_object())
    }

    fn last_terminated_at(c: &Value) -> Option<DateTime<Utc>> {
        let t = c.get("lastState")?.get("terminated")?;
        // a terminated state without finishedAt is Go's zero time: never later than another
        Some(
            t.get("finishedAt")
                .and_then(Value::as_str)
                .and_then(parse_time)
                .unwrap_or(DateTime::<Utc>::MIN_UTC),
        )
    }

    fn restart_count(c: &Value) -> i64 {
        c.get("restartCount").and_then(Value::as_i64).unwrap_or(0)
    }

    fn str_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn terminated_reason(prefix: &str, t: &Value) -> String {
        let reason = str_of(Some(t), "reason");
        if !reason.is_empty() {
            return format!("{prefix}{reason}");
        }
        let signal = t.get("signal").and_then(Value::as_i64).unwrap_or(0);
        if signal != 0 {
            format!("{prefix}Signal:{signal}")
        } else {
            let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
            format!("{prefix}ExitCode:{code}")
        }
    }

    fn condition_true(pod: &Value, ty: &str) -> bool {
        arr(pod, "/status/conditions").iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    }

    fn latest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    fn print_pod(pod: &Value, now: DateTime<Utc>) -> Row {
        let init_specs = arr(pod, "/spec/initContainers");
        // init containers with restartPolicy Always are sidecars: they count as containers
        let restartable = |name: &str| {
            init_specs.iter().any(|c| {
                c.get("name").and_then(Value::as_str) == Some(name)
                    && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
            })
        };
        let total = arr(pod, "/spec/containers").len()
            + init_specs
                .iter()
                .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
                .count();
        let mut ready = 0usize;
        let mut restarts = 0i64;
        let mut sidecar_restarts = 0i64;
        let mut last_restart: Option<DateTime<Utc>> = None;
        let mut last_sidecar_restart: Option<DateTime<Utc>> = None;

        let phase = s(pod, "/status/phase");
        let mut reason = match s(pod, "/status/reason") {
            "" => phase.to_string(),
            r => r.to_string(),
        };
        let gated = arr(pod, "/status/conditions").iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some("PodScheduled")
                && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
        });
        if gated {
            reason = "SchedulingGated".into();
        }
        let conditions = match phase {
            "Succeeded" => Some(
                json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
            ),
            "Failed" => Some(
                json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
            ),
            _ => None,
        };

        let mut initializing = false;
        let init_statuses = arr(pod, "/status/initContainerStatuses");
        for (i, c) in init_statuses.iter().enumerate() {
            let is_sidecar = restartable(str_of(Some(c), "name"));
            restarts += restart_count(c);
            last_restart = latest(last_restart, last_terminated_at(c));
            if is_sidecar {
                sidecar_restarts += restart_count(c);
                last_sidecar_restart = latest(last_sidecar_restart, last_terminated_at(c));
            }
            let terminated = state(c, "terminated");
            let waiting_reason = str_of(state(c, "waiting"), "reason");
            if terminated
                .is_some_and(|t| t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) == 0)
            {
                continue;
            }
            if is_sidecar && c.get("started").and_then(Value::as_bool) == Some(true) {
                if c.get("ready").and_then(Value::as_bool) == Some(true) {
                    ready += 1;
                }
                continue;
            }
            if let Some(t) = terminated {
                reason = terminated_reason("Init:", t);
            } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
                reason = format!("Init:{waiting_reason}");
            } else {
                reason = format!("Init:{i}/{}", init_specs.len());
            }
            initializing = true;
            break;
        }

        if !initializing || condition_true(pod, "Initialized") {
            restarts = sidecar_restarts;
            last_restart = last_sidecar_restart;
            let mut has_running = false;
            for c in arr(pod, "/status/containerStatuses").iter().rev() {
                restarts += restart_count(c);
                last_restart = latest(last_restart, last_terminated_at(c));
                let waiting_reason = str_of(state(c, "waiting"), "reason");
                let terminated = state(c, "terminated");
                if !waiting_reason.is_empty() {
                    reason = waiting_reason.to_string();
                } else if let Some(t) = terminated {
                    reason = terminated_reason("", t);
                } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                    && state(c, "running").is_some()
                {
                    has_running = true;
                    ready += 1;
                }
            }
            // a pod whose last container completed while another still runs is not done
            if reason == "Completed" && has_running {
                reason = if condition_true(pod, "Ready") {
                    "Running".into()
                } else {
                    "NotReady".into()
                };
            }
        }

        if deleting(pod) && s(pod, "/status/reason") == "NodeLost" {
            reason = "Unknown".into();
        } else if deleting(pod) && phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".into();
        }

        // the zero time counts as no restart date
        let last_restart = last_restart.filter(|t| *t != DateTime::<Utc>::MIN_UTC);
        let restarts_cell = match last_restart {
            Some(t) if restarts != 0 => format!("{restarts} ({} ago)", elapsed(t, now)),
            _ => restarts.to_string(),
        };

        let pod_ip = arr(pod, "/status/podIPs")
            .first()
            .and_then(|p| p.get("ip"))
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty())
            .unwrap_or("<none>");
        let node = opt_s(pod, "/spec/nodeName")
            .filter(|n| !n.is_empty())
            .unwrap_or("<none>");
        let nominated = opt_s(pod, "/status/nominatedNodeName")
            .filter(|n| !n.is_empty())
            .unwrap_or("<none>");
        let gates = arr(pod, "/spec/readinessGates");
        let readiness_gates = if gates.is_empty() {
            "<none>".to_string()
        } else {
            let conditions = arr(pod, "/status/conditions");
            let true_count = gates
                .iter()
                .filter(|g| {
                    let ty = str_of(Some(g), "conditionType");
                    conditions
                        .iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
                        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
                })
                .count();
            format!("{true_count}/{}", gates.len())
        };

        Row {
            cells: vec![
                name(pod),
                json!(format!("{ready}/{total}")),
                json!(reason),
                json!(restarts_cell),
                crate::registry::table::age(pod, now),
                json!(pod_ip),
                json!(node),
                json!(nominated),
                json!(readiness_gates),
            ],
            conditions,
        }
    }
}
