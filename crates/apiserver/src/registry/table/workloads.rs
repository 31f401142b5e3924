//! Printers of the workload kinds: Deployments, ReplicaSets, StatefulSets, DaemonSets,
//! Jobs, CronJobs, ReplicationControllers, PodTemplates, ControllerRevisions,
//! HorizontalPodAutoscalers and PodDisruptionBudgets.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{
    age, arr, bool_word, containers, field, format_label_selector, format_labels, int,
    int_or_string, integer, name, opt_s, s, selector_string, string, text, wide, Column, Printer,
    Row, AGE, NAME,
};
use apimachinery::time::{elapsed, parse_time, since};

const CONTAINERS: Column = wide(string(
    "Containers",
    text("Names of each container in the template."),
));
const IMAGES: Column = wide(string(
    "Images",
    text("Images referenced by each container in the template."),
));

pub(super) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    Some(match (group, kind) {
        ("apps", "Deployment") => &DEPLOYMENT,
        ("apps", "ReplicaSet") => &REPLICA_SET,
        ("apps", "StatefulSet") => &STATEFUL_SET,
        ("apps", "DaemonSet") => &DAEMON_SET,
        ("apps", "ControllerRevision") => &CONTROLLER_REVISION,
        ("batch", "Job") => &JOB,
        ("batch", "CronJob") => &CRON_JOB,
        ("", "ReplicationController") => &REPLICATION_CONTROLLER,
        ("", "PodTemplate") => &POD_TEMPLATE,
        ("autoscaling", "HorizontalPodAutoscaler") => &HPA,
        ("policy", "PodDisruptionBudget") => &PDB,
        _ => return None,
    })
}

fn template_spec(v: &Value) -> Option<&Value> {
    v.pointer("/spec/template/spec")
}

/// Deployments (`apps/v1`).
pub static DEPLOYMENT: Printer = Printer {
    columns: &[
        NAME,
        string("Ready", text("Number of the pod with ready state")),
        string(
            "Up-to-date",
            field("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
        ),
        string(
            "Available",
            field("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.apps.v1.DeploymentSpec", "selector"),
        )),
    ],
    print: |v, now| {
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(format!(
                "{}/{}",
                int(v, "/status/readyReplicas"),
                int(v, "/spec/replicas")
            )),
            json!(int(v, "/status/updatedReplicas")),
            json!(int(v, "/status/availableReplicas")),
            age(v, now),
            json!(names),
            json!(images),
            json!(selector_string(v.pointer("/spec/selector"))),
        ])
    },
};

/// ReplicaSets (`apps/v1`).
pub static REPLICA_SET: Printer = Printer {
    columns: &[
        NAME,
        integer(
            "Desired",
            field("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas"),
        ),
        integer(
            "Current",
            field("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas"),
        ),
        integer(
            "Ready",
            field("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
        )),
    ],
    print: |v, now| {
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(int(v, "/spec/replicas")),
            json!(int(v, "/status/replicas")),
            json!(int(v, "/status/readyReplicas")),
            age(v, now),
            json!(names),
            json!(images),
            json!(format_label_selector(v.pointer("/spec/selector"))),
        ])
    },
};

/// StatefulSets (`apps/v1`).
pub static STATEFUL_SET: Printer = Printer {
    columns: &[
        NAME,
        string("Ready", text("Number of the pod with ready state")),
        AGE,
        CONTAINERS,
        IMAGES,
    ],
    print: |v, now| {
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(format!(
                "{}/{}",
                int(v, "/status/readyReplicas"),
                int(v, "/spec/replicas")
            )),
            age(v, now),
            json!(names),
            json!(images),
        ])
    },
};

const DS_STATUS: &str = "io.k8s.api.apps.v1.DaemonSetStatus";

/// DaemonSets (`apps/v1`).
pub static DAEMON_SET: Printer = Printer {
    columns: &[
        NAME,
        integer("Desired", field(DS_STATUS, "desiredNumberScheduled")),
        integer("Current", field(DS_STATUS, "currentNumberScheduled")),
        integer("Ready", field(DS_STATUS, "numberReady")),
        integer("Up-to-date", field(DS_STATUS, "updatedNumberScheduled")),
        integer("Available", field(DS_STATUS, "numberAvailable")),
        string(
            "Node Selector",
            field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
        )),
    ],
    print: |v, now| {
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(int(v, "/status/desiredNumberScheduled")),
            json!(int(v, "/status/currentNumberScheduled")),
            json!(int(v, "/status/numberReady")),
            json!(int(v, "/status/updatedNumberScheduled")),
            json!(int(v, "/status/numberAvailable")),
            json!(format_labels(v.pointer("/spec/template/spec/nodeSelector"))),
            age(v, now),
            json!(names),
            json!(images),
            json!(format_label_selector(v.pointer("/spec/selector"))),
        ])
    },
};

/// Whether the first condition of type `ty` is `True` (upstream `hasJobCondition`).
fn has_condition(v: &Value, ty: &str) -> bool {
    arr(v, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

fn print_job(v: &Value, now: DateTime<Utc>) -> Row {
    let succeeded = int(v, "/status/succeeded");
    let completions = match v.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(v, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = opt_s(v, "/status/startTime").and_then(parse_time);
    let done = opt_s(v, "/status/completionTime").and_then(parse_time);
    let duration = match (start, done) {
        (None, _) => String::new(),
        (Some(s), None) => elapsed(s, now),
        (Some(s), Some(d)) => elapsed(s, d),
    };
    let status = if has_condition(v, "Complete") {
        "Complete"
    } else if has_condition(v, "Failed") {
        "Failed"
    } else if super::deleting(v) {
        "Terminating"
    } else if has_condition(v, "Suspended") {
        "Suspended"
    } else if has_condition(v, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(template_spec(v));
    Row::of(vec![
        name(v),
        json!(status),
        json!(completions),
        json!(duration),
        age(v, now),
        json!(names),
        json!(images),
        json!(format_label_selector(v.pointer("/spec/selector"))),
    ])
}

/// Jobs (`batch/v1`).
pub static JOB: Printer = Printer {
    columns: &[
        NAME,
        string("Status", text("Status of the job.")),
        string(
            "Completions",
            field("io.k8s.api.batch.v1.JobStatus", "succeeded"),
        ),
        string("Duration", text("Time required to complete the job.")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.batch.v1.JobSpec", "selector"),
        )),
    ],
    print: print_job,
};

const CRON_SPEC: &str = "io.k8s.api.batch.v1.CronJobSpec";
const CRON_STATUS: &str = "io.k8s.api.batch.v1.CronJobStatus";

/// CronJobs (`batch/v1`).
pub static CRON_JOB: Printer = Printer {
    columns: &[
        NAME,
        string("Schedule", field(CRON_SPEC, "schedule")),
        string("Timezone", field(CRON_SPEC, "timeZone")),
        super::boolean("Suspend", field(CRON_SPEC, "suspend")),
        integer("Active", field(CRON_STATUS, "active")),
        string("Last Schedule", field(CRON_STATUS, "lastScheduleTime")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.batch.v1.JobSpec", "selector"),
        )),
    ],
    print: |v, now| {
        let last = match opt_s(v, "/status/lastScheduleTime") {
            Some(t) => since(Some(t), now),
            None => "<none>".into(),
        };
        let suspend = match v.pointer("/spec/suspend").and_then(Value::as_bool) {
            Some(b) => bool_word(b),
            None => "<unset>",
        };
        let (names, images) = containers(v.pointer("/spec/jobTemplate/spec/template/spec"));
        Row::of(vec![
            name(v),
            json!(s(v, "/spec/schedule")),
            json!(opt_s(v, "/spec/timeZone").unwrap_or("<none>")),
            json!(suspend),
            json!(arr(v, "/status/active").len()),
            json!(last),
            age(v, now),
            json!(names),
            json!(images),
            json!(format_label_selector(
                v.pointer("/spec/jobTemplate/spec/selector")
            )),
        ])
    },
};

/// ReplicationControllers (`core/v1`).
pub static REPLICATION_CONTROLLER: Printer = Printer {
    columns: &[
        NAME,
        integer(
            "Desired",
            field("io.k8s.api.core.v1.ReplicationControllerSpec", "replicas"),
        ),
        integer(
            "Current",
            field("io.k8s.api.core.v1.ReplicationControllerStatus", "replicas"),
        ),
        integer(
            "Ready",
            field(
                "io.k8s.api.core.v1.ReplicationControllerStatus",
                "readyReplicas",
            ),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(string(
            "Selector",
            field("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
        )),
    ],
    print: |v, now| {
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(int(v, "/spec/replicas")),
            json!(int(v, "/status/replicas")),
            json!(int(v, "/status/readyReplicas")),
            age(v, now),
            json!(names),
            json!(images),
            json!(format_labels(v.pointer("/spec/selector"))),
        ])
    },
};

/// PodTemplates (`core/v1`).
pub static POD_TEMPLATE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Containers",
            text("Names of each container in the template."),
        ),
        string(
            "Images",
            text("Images referenced by each container in the template."),
        ),
        string("Pod Labels", text("The labels for the pod template.")),
    ],
    print: |v, _| {
        let (names, images) = containers(v.pointer("/template/spec"));
        Row::of(vec![
            name(v),
            json!(names),
            json!(images),
            json!(format_labels(v.pointer("/template/metadata/labels"))),
        ])
    },
};

/// `kind.group/name` (lower-cased kind and group) of the controlling owner, `<none>`.
fn controller_name(v: &Value) -> String {
    let Some(owner) = arr(v, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".into();
    };
    let api_version = owner
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default();
    let kind = owner.get("kind").and_then(Value::as_str).unwrap_or("");
    let owner_name = owner.get("name").and_then(Value::as_str).unwrap_or("");
    let group_kind = match (kind, group) {
        ("", "") => return owner_name.to_string(),
        (k, "") => k.to_string(),
        (k, g) => format!("{k}.{g}"),
    };
    format!("{}/{owner_name}", group_kind.to_lowercase())
}

/// ControllerRevisions (`apps/v1`).
pub static CONTROLLER_REVISION: Printer = Printer {
    columns: &[
        NAME,
        string("Controller", text("Controller of the object")),
        string(
            "Revision",
            field("io.k8s.api.apps.v1.ControllerRevision", "revision"),
        ),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(controller_name(v)),
            json!(int(v, "/revision")),
            age(v, now),
        ])
    },
};

/// One HPA metric as `current/target` (upstream `formatHPAMetrics`).
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let q = |v: Option<&Value>| v.map(int_or_string).unwrap_or_default();
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let unknown = || "<unknown>".to_string();
    let src = |key: &str| spec.get(key).cloned().unwrap_or(Value::Null);
    let cur = |key: &str| status.and_then(|s| s.get(key)).filter(|v| !v.is_null());
    match ty {
        "External" | "Object" => {
            let key = if ty == "External" {
                "external"
            } else {
                "object"
            };
            let target = src(key);
            if let Some(avg) = target.pointer("/target/averageValue") {
                let current = cur(key)
                    .and_then(|c| c.pointer("/current/averageValue"))
                    .map(|v| q(Some(v)))
                    .unwrap_or_else(unknown);
                format!("{current}/{} (avg)", q(Some(avg)))
            } else {
                let current = cur(key)
                    .map(|c| q(c.pointer("/current/value")))
                    .unwrap_or_else(unknown);
                format!("{current}/{}", q(target.pointer("/target/value")))
            }
        }
        "Pods" => {
            let current = cur("pods")
                .map(|c| q(c.pointer("/current/averageValue")))
                .unwrap_or_else(unknown);
            format!("{current}/{}", q(spec.pointer("/pods/target/averageValue")))
        }
        "Resource" | "ContainerResource" => {
            let key = if ty == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let target = src(key);
            let resource = target.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(avg) = target.pointer("/target/averageValue") {
                let current = cur(key)
                    .map(|c| q(c.pointer("/current/averageValue")))
                    .unwrap_or_else(unknown);
                format!("{resource}: {current}/{}", q(Some(avg)))
            } else {
                let current = cur(key)
                    .and_then(|c| c.pointer("/current/averageUtilization"))
                    .and_then(Value::as_i64)
                    .map(|u| format!("{u}%"))
                    .unwrap_or_else(unknown);
                let target = target
                    .pointer("/target/averageUtilization")
                    .and_then(Value::as_i64)
                    .map(|u| format!("{u}%"))
                    .unwrap_or_else(|| "<auto>".into());
                format!("{resource}: {current}/{target}")
            }
        }
        _ => "<unknown type>".into(),
    }
}

fn hpa_metrics(v: &Value) -> String {
    let specs = arr(v, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = arr(v, "/status/currentMetrics");
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| hpa_metric(spec, statuses.get(i)))
        .collect();
    const MAX: usize = 2;
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

const HPA_SPEC: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec";

/// HorizontalPodAutoscalers (printed from `autoscaling/v2` storage for both versions).
pub static HPA: Printer = Printer {
    columns: &[
        NAME,
        string("Reference", field(HPA_SPEC, "scaleTargetRef")),
        string("Targets", field(HPA_SPEC, "metrics")),
        string("MinPods", field(HPA_SPEC, "minReplicas")),
        string("MaxPods", field(HPA_SPEC, "maxReplicas")),
        string(
            "Replicas",
            field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
                "currentReplicas",
            ),
        ),
        AGE,
    ],
    print: |v, now| {
        let min = v
            .pointer("/spec/minReplicas")
            .and_then(Value::as_i64)
            .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
        Row::of(vec![
            name(v),
            json!(format!(
                "{}/{}",
                s(v, "/spec/scaleTargetRef/kind"),
                s(v, "/spec/scaleTargetRef/name")
            )),
            json!(hpa_metrics(v)),
            json!(min),
            json!(int(v, "/spec/maxReplicas")),
            json!(int(v, "/status/currentReplicas")),
            age(v, now),
        ])
    },
};

/// PodDisruptionBudgets (`policy/v1`).
pub static PDB: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Min Available",
            text("The minimum number of pods that must be available."),
        ),
        string(
            "Max Unavailable",
            text("The maximum number of pods that may be unavailable."),
        ),
        integer(
            "Allowed Disruptions",
            text("Calculated number of pods that may be disrupted at this time."),
        ),
        AGE,
    ],
    print: |v, now| {
        let or_na = |ptr: &str| {
            v.pointer(ptr)
                .filter(|x| !x.is_null())
                .map_or_else(|| "N/A".to_string(), int_or_string)
        };
        Row::of(vec![
            name(v),
            json!(or_na("/spec/minAvailable")),
            json!(or_na("/spec/maxUnavailable")),
            json!(int(v, "/status/disruptionsAllowed")),
            age(v, now),
        ])
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        parse_time("2026-01-10T12:00:00Z").expect("time")
    }

    #[test]
    fn job_status_completions_and_duration() {
        let job = |spec: Value, status: Value| {
            let v = json!({"metadata": {"name": "j"}, "spec": spec, "status": status});
            let row = print_job(&v, now());
            (
                row.cells[1].as_str().unwrap_or_default().to_string(),
                row.cells[2].as_str().unwrap_or_default().to_string(),
                row.cells[3].as_str().unwrap_or_default().to_string(),
            )
        };
        assert_eq!(
            job(json!({"completions": 3}), json!({"succeeded": 1})),
            ("Running".into(), "1/3".into(), String::new())
        );
        assert_eq!(job(json!({"parallelism": 4}), json!({})).1, "0/1 of 4");
        assert_eq!(job(json!({"parallelism": 1}), json!({})).1, "0/1");
        let done = job(
            json!({"completions": 1}),
            json!({"succeeded": 1, "startTime": "2026-01-10T11:00:00Z", "completionTime": "2026-01-10T11:03:10Z",
                "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(done, ("Complete".into(), "1/1".into(), "3m10s".into()));
        let running = job(json!({}), json!({"startTime": "2026-01-10T11:59:15Z"}));
        assert_eq!(running.2, "45s");
        assert_eq!(
            job(
                json!({}),
                json!({"conditions": [{"type": "Failed", "status": "True"}]})
            )
            .0,
            "Failed"
        );
        assert_eq!(
            job(
                json!({}),
                json!({"conditions": [{"type": "Suspended", "status": "True"}]})
            )
            .0,
            "Suspended"
        );
        assert_eq!(
            job(
                json!({}),
                json!({"conditions": [{"type": "FailureTarget", "status": "True"}]})
            )
            .0,
            "FailureTarget"
        );
        assert_eq!(
            job(
                json!({}),
                json!({"conditions": [{"type": "Complete", "status": "False"}]})
            )
            .0,
            "Running"
        );
    }

    #[test]
    fn hpa_targets() {
        let v = json!({"spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}]},
            "status": {"currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "12m"}}}]}});
        assert_eq!(
            hpa_metrics(&v),
            "cpu: 12%/80%, memory: <unknown>/100Mi + 1 more..."
        );
        assert_eq!(hpa_metrics(&json!({"spec": {}})), "<none>");
        let ext = json!({"spec": {"metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}}]}});
        assert_eq!(hpa_metrics(&ext), "<unknown>/10");
    }

    #[test]
    fn controller_revision_owner() {
        let v = json!({"metadata": {"name": "r", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}, "revision": 2});
        let row = (CONTROLLER_REVISION.print)(&v, now());
        assert_eq!(row.cells[1], json!("daemonset.apps/agent"));
        assert_eq!(row.cells[2], json!(2));
        let orphan = (CONTROLLER_REVISION.print)(&json!({"metadata": {"name": "r"}}), now());
        assert_eq!(orphan.cells[1], json!("<none>"));
    }

    #[test]
    fn pdb_and_cronjob_defaults() {
        let pdb = (PDB.print)(
            &json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "25%"}}),
            now(),
        );
        assert_eq!(pdb.cells[1..4], [json!("N/A"), json!("25%"), json!(0)]);
        let cj = (CRON_JOB.print)(
            &json!({"metadata": {"name": "c"}, "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC"},
                "status": {"lastScheduleTime": "2026-01-10T11:00:00Z", "active": [{"name": "x"}]}}),
            now(),
        );
        assert_eq!(
            cj.cells[1..6],
            [
                json!("@hourly"),
                json!("Etc/UTC"),
                json!("<unset>"),
                json!(1),
                json!("60m")
            ]
        );
    }
}
