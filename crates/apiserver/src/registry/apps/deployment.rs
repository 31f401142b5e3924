//! Deployment (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&["deploy"], &DeploymentStrategy).in_all();

/// What Deployment does differently.
pub struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Scale, Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// `deploymentStrategy`: the spec or the annotations (which the controller copies
    /// to the replica sets).
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec")
            || old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations")
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&["labels"])
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.deployment(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::DEPLOYMENT)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn deployment(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            e.nonnegative("spec.replicas", int(spec, "replicas"));
            self.replica_selector_and_template(e, spec, "ReplicaSet");
            if let Some(strategy) = get(spec, "strategy") {
                deployment_strategy(e, strategy);
            }
            e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
            e.nonnegative(
                "spec.revisionHistoryLimit",
                int(spec, "revisionHistoryLimit"),
            );
            if let Some(rb) = get(spec, "rollbackTo") {
                e.nonnegative("spec.rollback.version", int(rb, "revision"));
            }
            if let Some(pds) = int(spec, "progressDeadlineSeconds") {
                e.nonnegative("spec.progressDeadlineSeconds", Some(pds));
                if pds <= int(spec, "minReadySeconds").unwrap_or(0) {
                    e.invalid(
                        "spec.progressDeadlineSeconds",
                        Bad::Int(pds),
                        "must be greater than minReadySeconds",
                    );
                }
            }
            self.selector_immutable(e, spec);
        }
    }

    /// `ValidateDeploymentStrategy`.
    pub(crate) fn deployment_strategy(e: &mut Errs, strategy: &Value) {
        let p = "spec.strategy";
        let ty = st(strategy, "type").unwrap_or("");
        let ru = get(strategy, "rollingUpdate");
        match ty {
            "Recreate" => {
                if ru.is_some() {
                    e.forbidden(
                        &child(p, "rollingUpdate"),
                        "may not be specified when strategy `type` is 'Recreate'",
                    );
                }
            }
            "RollingUpdate" | "" => {
                // Defaulting fills rollingUpdate and both fields with 25%.
                let pct = Value::from("25%");
                let ru = ru.unwrap_or(&Value::Null);
                let mu = get(ru, "maxUnavailable").unwrap_or(&pct);
                let ms = get(ru, "maxSurge").unwrap_or(&pct);
                let rp = child(p, "rollingUpdate");
                let (mup, msp) = (child(&rp, "maxUnavailable"), child(&rp, "maxSurge"));
                validate_positive_int_or_percent(e, Some(mu), &mup);
                validate_positive_int_or_percent(e, Some(ms), &msp);
                if int_or_percent_value(Some(mu)) == 0 && int_or_percent_value(Some(ms)) == 0 {
                    e.invalid(
                        &mup,
                        Bad::Json(intstr_json(Some(mu))),
                        "may not be 0 when `maxSurge` is 0",
                    );
                }
                not_more_than_100_percent(e, Some(mu), &mup);
            }
            other => {
                let mut v = Map::new();
                v.insert("Type".into(), Value::from(other));
                let ru_json = match ru {
                    None => Value::Null,
                    Some(r) => {
                        let mut m = Map::new();
                        m.insert(
                            "MaxUnavailable".into(),
                            intstr_json(get(r, "maxUnavailable")),
                        );
                        m.insert("MaxSurge".into(), intstr_json(get(r, "maxSurge")));
                        Value::Object(m)
                    }
                };
                v.insert("RollingUpdate".into(), ru_json);
                e.not_supported(
                    p,
                    Bad::Json(Value::Object(v)),
                    &["Recreate", "RollingUpdate"],
                );
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            default_ptr(spec, "replicas", json!(1));
            if let Some(strategy) = child_or_insert(spec, "strategy") {
                default_str(strategy, "type", "RollingUpdate");
                if str_at(strategy, "type") == "RollingUpdate" {
                    if let Some(ru) = child_or_insert(strategy, "rollingUpdate") {
                        default_ptr(ru, "maxUnavailable", json!("25%"));
                        default_ptr(ru, "maxSurge", json!("25%"));
                    }
                }
            }
            default_ptr(spec, "revisionHistoryLimit", json!(10));
            default_ptr(spec, "progressDeadlineSeconds", json!(600));
            if let Some(t) = child(spec, "template") {
                crate::registry::core::podspec::defaults::pod_template(t);
            }
        }
        if phase.create() {
            status_shape(o, &[]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// Deployments (`apps/v1`).
    pub(crate) static DEPLOYMENT: Printer = Printer {
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
}
