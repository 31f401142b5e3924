//! The horizontal pod autoscaler: kube-controller-manager's
//! `horizontal-pod-autoscaler-controller` (alias `horizontalpodautoscaling`, upstream
//! `pkg/controller/podautoscaler`).
//!
//! Every HorizontalPodAutoscaler (autoscaling/v2) is reconciled once per
//! `--horizontal-pod-autoscaler-sync-period` (a change does not hurry it: upstream's
//! queue holds each HPA for a sync period). A reconcile reads the target's `scale`
//! subresource (any kind with one: Deployments, ReplicaSets, StatefulSets,
//! ReplicationControllers, custom resources, found through discovery), asks the metrics
//! APIs ([`metrics`]) for each metric of the spec, turns them into replica proposals
//! ([`replica_calculator`]), keeps the largest, normalises it (stabilization, rate
//! limits of `behavior`, min/max: [`normalize`]), writes `/scale` when the count changes
//! and the status (`currentReplicas`, `desiredReplicas`, `currentMetrics`,
//! `lastScaleTime`, conditions AbleToScale / ScalingActive /
//! ScalingLimited) when it differs. Events: `SuccessfulRescale`, `FailedGetScale`,
//! `FailedRescale`, `FailedComputeMetricsReplicas`, `FailedGet*Metric`,
//! `SelectorRequired`, `InvalidSelector`, `AmbiguousSelector`, `FailedUpdateStatus`.

pub mod metrics;
pub mod normalize;
pub mod replica_calculator;

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::quantity;
use apimachinery::selector::LabelSelector;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileResult, Reconciler,
};
use coxswain_runtime::discovery::{ResourceInfo, SharedDiscovery};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::Funcs;
use coxswain_runtime::manager::runnable;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, ExternalMetricStatus, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus, MetricIdentifier, MetricSpec,
    MetricStatus, MetricValueStatus, ObjectMetricStatus, PodsMetricStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{self as meta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::Api;
use serde_json::Value;

use metrics::{MetricsClient, RestMetricsClient};
use normalize::{History, NormalizationArg};
use replica_calculator::{ReadinessConfig, Tolerances};

/// The controller's name in logs and the event source component.
pub const CONTROLLER_NAME: &str = "horizontal-pod-autoscaler";

/// The HPA controller's options (upstream `HPAControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct HpaControllerOptions {
    /// `--horizontal-pod-autoscaler-sync-period` (15 s).
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` (5 min).
    pub downscale_stabilization_window: Duration,
    /// `--horizontal-pod-autoscaler-tolerance` (0.1).
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` (5 min).
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` (30 s).
    pub initial_readiness_delay: Duration,
    /// `--concurrent-horizontal-pod-autoscaler-syncs` (5).
    pub concurrent_syncs: usize,
}

impl Default for HpaControllerOptions {
    fn default() -> Self {
        HpaControllerOptions {
            sync_period: Duration::from_secs(15),
            downscale_stabilization_window: Duration::from_secs(300),
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            concurrent_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("horizontal-pod-autoscaler")`).
pub const SERVICE_ACCOUNT: &str = "horizontal-pod-autoscaler";

/// The registry entry: `horizontal-pod-autoscaler-controller`, alias
/// `horizontalpodautoscaling`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "horizontal-pod-autoscaler-controller",
        aliases: &["horizontalpodautoscaling"],
        disabled_by_default: false,
        constructor: |ctx| {
            let c = hpa_controller(&ctx.clients(SERVICE_ACCOUNT)?, ctx.options.hpa.clone());
            Ok(Some(Box::new(runnable(
                "horizontal-pod-autoscaler-controller",
                true,
                move |cancel| async move {
                    c.run(cancel).await;
                    Ok(())
                },
            ))))
        },
    }
}

/// The HPA controller over the manager's cache, asking the cluster's metrics APIs.
pub fn hpa_controller(
    mgr: &impl ClusterAccess,
    options: HpaControllerOptions,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let hpas = cache.informer::<HorizontalPodAutoscaler>().store().clone();
    let reconciler = HpaReconciler {
        hpas: hpas.clone(),
        pods: cache.informer::<Pod>().store().clone(),
        client: mgr.kube_client().clone(),
        discovery: mgr.discovery().clone(),
        metrics: RestMetricsClient {
            client: mgr.kube_client().clone(),
        },
        recorder: mgr.event_recorder(CONTROLLER_NAME),
        options: options.clone(),
        state: Arc::new(Mutex::new(State::default())),
    };
    let period = options.sync_period;
    let state = reconciler.state.clone();
    // upstream enqueues every add, update and resync after the sync period (a request
    // already waiting keeps its deadline); a deletion forgets the HPA's history
    let handler = Funcs::new()
        .on_add(move |h: &HorizontalPodAutoscaler, q| q.add_after(ObjectKey::of(h), period))
        .on_update(move |_, h: &HorizontalPodAutoscaler, q| q.add_after(ObjectKey::of(h), period))
        .on_delete(move |h: &HorizontalPodAutoscaler, _| {
            let key = ObjectKey::of(h).to_string();
            let mut s = state.lock().expect("hpa state");
            s.history.forget(&key);
            s.selectors.remove(&key);
        });
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .for_with::<HorizontalPodAutoscaler>(handler)
        .with_options(ControllerOptions::workers(options.concurrent_syncs.max(1)))
        .build(reconciler)
}

/// What the controller remembers between syncs.
#[derive(Default)]
struct State {
    history: History,
    /// The pod selector of each HPA's target, by `namespace/name`.
    selectors: HashMap<String, (String, LabelSelector)>,
}

/// The HPA reconciler.
pub struct HpaReconciler<M: MetricsClient> {
    hpas: Arc<Store<HorizontalPodAutoscaler>>,
    pods: Arc<Store<Pod>>,
    client: kube::Client,
    discovery: SharedDiscovery,
    metrics: M,
    recorder: EventRecorder,
    options: HpaControllerOptions,
    state: Arc<Mutex<State>>,
}

/// An autoscaling/v1 Scale as read from `/scale`.
struct Scale {
    raw: Value,
    info: Arc<ResourceInfo>,
    spec_replicas: i32,
    status_replicas: i32,
    selector: String,
}

fn set_condition(
    hpa: &mut HorizontalPodAutoscaler,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
) {
    let status = if status { "True" } else { "False" }.to_string();
    let conditions = hpa
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = Some(Time(Timestamp::now()));
            }
            c.status = status;
            c.reason = Some(reason.to_string());
            c.message = Some(message);
        }
        None => conditions.push(HorizontalPodAutoscalerCondition {
            type_: type_.to_string(),
            status,
            reason: Some(reason.to_string()),
            message: Some(message),
            last_transition_time: Some(Time(Timestamp::now())),
            observed_generation: None,
        }),
    }
}

fn milli_quantity(v: i64) -> Quantity {
    Quantity(
        quantity::parse(&format!("{v}m"))
            .map(|q| q.canonical())
            .unwrap_or_else(|| format!("{v}m")),
    )
}

fn q_milli(q: Option<&Quantity>) -> Option<i64> {
    q.and_then(|q| quantity::parse(&q.0))
        .map(|q| q.milli_value() as i64)
}

/// Go's `%+v` of a `*metav1.LabelSelector` (its generated `String()`).
fn go_selector_string(s: Option<&meta::LabelSelector>) -> String {
    let Some(s) = s else {
        return "nil".into();
    };
    let labels: Vec<String> = s
        .match_labels
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| format!("{k}: {v},")).collect())
        .unwrap_or_default();
    let exprs: Vec<String> = s
        .match_expressions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e.key,
                e.operator,
                e.values.as_deref().unwrap_or_default().join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{}}},MatchExpressions:[]LabelSelectorRequirement{{{}}},}}",
        labels.join(""),
        exprs.join("")
    )
}

fn meta_selector_string(s: Option<&meta::LabelSelector>) -> Result<String, String> {
    match s {
        None => Ok(String::new()),
        Some(s) => LabelSelector::from_meta(s)
            .map(|l| l.to_string())
            .map_err(|e| e.to_string()),
    }
}

/// A per-metric failure: the ScalingActive=False condition and the error.
struct MetricFailure {
    reason: &'static str,
    message: String,
    error: String,
}

struct Proposal {
    replicas: i32,
    name: String,
}

impl<M: MetricsClient> HpaReconciler<M> {
    fn event(&self, hpa: &HorizontalPodAutoscaler, type_: EventType, reason: &str, note: &str) {
        self.recorder
            .event(&object_reference(hpa), None, type_, reason, reason, note);
    }

    fn tolerances(&self, hpa: &HorizontalPodAutoscaler) -> Tolerances {
        let mut t = Tolerances::symmetric(self.options.tolerance);
        let behavior = hpa.spec.behavior.as_ref();
        let parse = |q: Option<&Quantity>| {
            q.and_then(|q| quantity::parse(&q.0))
                .map(|q| q.nanos() as f64 / 1e9)
        };
        if let Some(v) = parse(
            behavior
                .and_then(|b| b.scale_up.as_ref())
                .and_then(|r| r.tolerance.as_ref()),
        ) {
            t.scale_up = v;
        }
        if let Some(v) = parse(
            behavior
                .and_then(|b| b.scale_down.as_ref())
                .and_then(|r| r.tolerance.as_ref()),
        ) {
            t.scale_down = v;
        }
        t
    }

    fn readiness(&self) -> ReadinessConfig {
        ReadinessConfig {
            cpu_initialization_period: self.options.cpu_initialization_period,
            delay_of_initial_readiness_status: self.options.initial_readiness_delay,
        }
    }

    /// The REST mappings of the target's group and kind: the named version first,
    /// then every served version (upstream `RESTMappings(groupKind)`).
    async fn mappings(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Vec<Arc<ResourceInfo>>, String> {
        let (group, _) = coxswain_runtime::discovery::parse_group_version(api_version)?;
        let find = |d: &coxswain_runtime::discovery::Discovery| {
            let mut out: Vec<Arc<ResourceInfo>> =
                d.mapping(api_version, kind).cloned().into_iter().collect();
            for r in &d.preferred {
                if r.group == group && r.kind == kind && !out.contains(r) {
                    out.push(r.clone());
                }
            }
            out
        };
        let mut found = find(&self.discovery.current());
        if found.is_empty() {
            let fresh = self
                .discovery
                .fresh(Duration::from_secs(1))
                .await
                .map_err(|e| e.to_string())?;
            found = find(&fresh);
        }
        if found.is_empty() {
            return Err(format!(
                "no matches for kind \"{kind}\" in group \"{group}\""
            ));
        }
        Ok(found)
    }

    fn collection(info: &ResourceInfo, ns: &str) -> String {
        let base = if info.group.is_empty() {
            format!("/api/{}", info.version)
        } else {
            format!("/apis/{}/{}", info.group, info.version)
        };
        format!("{base}/namespaces/{ns}/{}", info.plural)
    }

    /// Upstream `scaleForResourceMappings`: the first mapping whose `/scale` answers.
    async fn get_scale(
        &self,
        ns: &str,
        name: &str,
        mappings: &[Arc<ResourceInfo>],
    ) -> Result<Scale, String> {
        let mut first_err = None;
        for info in mappings {
            let req = kube::core::Request::new(Self::collection(info, ns))
                .get_subresource("scale", name)
                .map_err(|e| e.to_string())?;
            match self.client.request::<Value>(req).await {
                Ok(raw) => {
                    return Ok(Scale {
                        spec_replicas: raw
                            .pointer("/spec/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(0) as i32,
                        status_replicas: raw
                            .pointer("/status/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(0) as i32,
                        selector: raw
                            .pointer("/status/selector")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        raw,
                        info: info.clone(),
                    })
                }
                Err(e) => {
                    let msg = match e {
                        kube::Error::Api(s) => s.message,
                        e => e.to_string(),
                    };
                    first_err.get_or_insert(msg);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| "no mappings".into()))
    }

    async fn update_scale(
        &self,
        ns: &str,
        name: &str,
        scale: &Scale,
        replicas: i32,
    ) -> Result<(), String> {
        let mut body = scale.raw.clone();
        body["spec"]["replicas"] = Value::from(replicas);
        let req = kube::core::Request::new(Self::collection(&scale.info, ns))
            .replace_subresource(
                "scale",
                name,
                &PostParams::default(),
                serde_json::to_vec(&body).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
        self.client
            .request::<Value>(req)
            .await
            .map(|_| ())
            .map_err(|e| match e {
                kube::Error::Api(s) => s.message,
                e => e.to_string(),
            })
    }

    /// Upstream `validateAndParseSelector`, with the HPAs-per-pod check.
    fn validate_selector(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        key: &str,
        selector: &str,
    ) -> Result<(LabelSelector, Vec<Arc<Pod>>), String> {
        if selector.is_empty() {
            let msg = "selector is required";
            self.event(hpa, EventType::Warning, "SelectorRequired", msg);
            set_condition(
                hpa,
                "ScalingActive",
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector".into(),
            );
            return Err(msg.into());
        }
        let parsed = match LabelSelector::parse(selector) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!(
                    "couldn't convert selector into a corresponding internal selector object: {e}"
                );
                self.event(hpa, EventType::Warning, "InvalidSelector", &msg);
                set_condition(hpa, "ScalingActive", false, "InvalidSelector", msg.clone());
                return Err(msg);
            }
        };
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let pods: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(&ns)
            .into_iter()
            .filter(|p| {
                parsed.matches_labels(p.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()))
            })
            .collect();
        let mut selecting = BTreeSet::new();
        {
            let mut state = self.state.lock().expect("hpa state");
            state
                .selectors
                .insert(key.to_string(), (ns.clone(), parsed.clone()));
            for p in &pods {
                let labels = p.metadata.labels.clone().unwrap_or_default();
                for (k, (sel_ns, sel)) in &state.selectors {
                    if *sel_ns == ns
                        && self
                            .hpas
                            .get(&ObjectKey::namespaced(
                                &ns,
                                k.rsplit('/').next().unwrap_or_default(),
                            ))
                            .is_some()
                        && sel.matches_labels(&labels)
                    {
                        selecting.insert(k.clone());
                    }
                }
            }
        }
        if selecting.len() > 1 {
            let names: Vec<String> = selecting
                .iter()
                .map(|k| {
                    let (n_ns, n) = k.split_once('/').unwrap_or(("", k));
                    format!("{{{n} {n_ns}}}")
                })
                .collect();
            let msg = format!(
                "pods by selector {selector} are controlled by multiple HPAs: [{}]",
                names.join(" ")
            );
            self.event(hpa, EventType::Warning, "AmbiguousSelector", &msg);
            set_condition(
                hpa,
                "ScalingActive",
                false,
                "AmbiguousSelector",
                msg.clone(),
            );
            return Err(msg);
        }
        Ok((parsed, pods))
    }

    fn unable(
        &self,
        hpa: &HorizontalPodAutoscaler,
        reason: &'static str,
        err: String,
        wrapped: String,
    ) -> MetricFailure {
        self.event(hpa, EventType::Warning, reason, &err);
        MetricFailure {
            reason,
            message: format!("the HPA was unable to compute the replica count: {err}"),
            error: wrapped,
        }
    }

    /// Upstream `computeReplicasForMetric`: one metric's proposal and status.
    #[allow(clippy::too_many_arguments)]
    async fn compute_metric(
        &self,
        hpa: &HorizontalPodAutoscaler,
        spec: &MetricSpec,
        spec_replicas: i32,
        status_replicas: i32,
        selector: &str,
        pods: &[&Pod],
        status: &mut MetricStatus,
    ) -> Result<Proposal, MetricFailure> {
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let tol = self.tolerances(hpa);
        let cfg = self.readiness();
        let now = Timestamp::now();
        match spec.type_.as_str() {
            "Resource" | "ContainerResource" => {
                let (resource, container, target) = if spec.type_ == "Resource" {
                    let r = spec.resource.as_ref();
                    (
                        r.map(|r| r.name.clone()).unwrap_or_default(),
                        None,
                        r.map(|r| r.target.clone()).unwrap_or_default(),
                    )
                } else {
                    let r = spec.container_resource.as_ref();
                    (
                        r.map(|r| r.name.clone()).unwrap_or_default(),
                        r.map(|r| r.container.clone()),
                        r.map(|r| r.target.clone()).unwrap_or_default(),
                    )
                };
                let (reason, outer) = if container.is_some() {
                    (
                        "FailedGetContainerResourceMetric",
                        format!(
                            "failed to get {} container metric value",
                            container.clone().unwrap_or_default()
                        ),
                    )
                } else {
                    (
                        "FailedGetResourceMetric",
                        format!("failed to get {resource} resource metric value"),
                    )
                };
                let fail = |err: String| {
                    let wrapped = format!("{outer}: {err}");
                    self.unable(hpa, reason, err, wrapped)
                };
                let fetched =
                    if target.average_value.is_some() || target.average_utilization.is_some() {
                        Some(
                            self.metrics
                                .resource_metric(&resource, &ns, selector, container.as_deref())
                                .await
                                .map_err(|e| {
                                    format!("unable to get metrics for resource {resource}: {e}")
                                }),
                        )
                    } else {
                        None
                    };
                let (current, name) = if let Some(avg) = q_milli(target.average_value.as_ref()) {
                    let (replicas, raw) = fetched
                        .expect("fetched")
                        .and_then(|(m, _)| {
                            replica_calculator::plain_metric_replicas(
                                m,
                                spec_replicas,
                                avg,
                                &tol,
                                pods,
                                &resource,
                                &cfg,
                                now,
                            )
                        })
                        .map_err(|e| fail(format!("failed to get {resource} usage: {e}")))?;
                    (
                        (
                            replicas,
                            MetricValueStatus {
                                average_value: Some(milli_quantity(raw)),
                                ..Default::default()
                            },
                        ),
                        format!("{resource} resource"),
                    )
                } else if let Some(util) = target.average_utilization {
                    let r = fetched
                        .expect("fetched")
                        .and_then(|(m, _)| {
                            replica_calculator::resource_replicas(
                                spec_replicas,
                                util,
                                &resource,
                                &tol,
                                pods,
                                m,
                                container.as_deref(),
                                &cfg,
                                now,
                            )
                        })
                        .map_err(|e| fail(format!("failed to get {resource} utilization: {e}")))?;
                    let name = if container.is_some() {
                        format!("{resource} container resource utilization (percentage of request)")
                    } else {
                        format!("{resource} resource utilization (percentage of request)")
                    };
                    (
                        (
                            r.replicas,
                            MetricValueStatus {
                                average_utilization: Some(r.utilization),
                                average_value: Some(milli_quantity(r.raw_average)),
                                value: None,
                            },
                        ),
                        name,
                    )
                } else {
                    let kind = if container.is_some() {
                        "container resource"
                    } else {
                        "resource"
                    };
                    return Err(fail(format!("invalid {kind} metric source: neither an average utilization target nor an average value (usage) target was set")));
                };
                *status = match container {
                    Some(c) => MetricStatus {
                        type_: "ContainerResource".into(),
                        container_resource: Some(ContainerResourceMetricStatus {
                            name: resource,
                            container: c,
                            current: current.1,
                        }),
                        ..Default::default()
                    },
                    None => MetricStatus {
                        type_: "Resource".into(),
                        resource: Some(ResourceMetricStatus {
                            name: resource,
                            current: current.1,
                        }),
                        ..Default::default()
                    },
                };
                Ok(Proposal {
                    replicas: current.0,
                    name,
                })
            }
            "Pods" => {
                let p = spec.pods.clone().unwrap_or_default();
                let fail = |err: String| {
                    let wrapped = format!("failed to get pods metric value: {err}");
                    self.unable(hpa, "FailedGetPodsMetric", err, wrapped)
                };
                let metric_selector =
                    meta_selector_string(p.metric.selector.as_ref()).map_err(fail)?;
                let target = q_milli(p.target.average_value.as_ref()).unwrap_or(0);
                let (replicas, usage) = self
                    .metrics
                    .raw_metric(&p.metric.name, &ns, selector, &metric_selector)
                    .await
                    .map_err(|e| format!("unable to get metric {}: {e}", p.metric.name))
                    .and_then(|(m, _)| {
                        replica_calculator::plain_metric_replicas(
                            m,
                            spec_replicas,
                            target,
                            &tol,
                            pods,
                            "",
                            &cfg,
                            now,
                        )
                    })
                    .map_err(fail)?;
                *status = MetricStatus {
                    type_: "Pods".into(),
                    pods: Some(PodsMetricStatus {
                        metric: MetricIdentifier {
                            name: p.metric.name.clone(),
                            selector: p.metric.selector.clone(),
                        },
                        current: MetricValueStatus {
                            average_value: Some(milli_quantity(usage)),
                            ..Default::default()
                        },
                    }),
                    ..Default::default()
                };
                Ok(Proposal {
                    replicas,
                    name: format!("pods metric {}", p.metric.name),
                })
            }
            "Object" => {
                let o = spec.object.clone().unwrap_or_default();
                let fail = |err: String| {
                    let wrapped = format!("failed to get object metric value: {err}");
                    self.unable(hpa, "FailedGetObjectMetric", err, wrapped)
                };
                let metric_selector =
                    meta_selector_string(o.metric.selector.as_ref()).map_err(fail)?;
                let d = &o.described_object;
                let value_target = (o.target.type_ == "Value")
                    .then(|| q_milli(o.target.value.as_ref()))
                    .flatten();
                let avg_target = (o.target.type_ == "AverageValue")
                    .then(|| q_milli(o.target.average_value.as_ref()))
                    .flatten();
                if value_target.is_none() && avg_target.is_none() {
                    return Err(fail("invalid object metric source: neither a value target nor an average value target was set".into()));
                }
                let api_version = d.api_version.clone().unwrap_or_default();
                let group_resource = match self.mappings(&api_version, &d.kind).await {
                    Ok(m) => {
                        let info = &m[0];
                        if info.group.is_empty() {
                            info.plural.clone()
                        } else {
                            format!("{}.{}", info.plural, info.group)
                        }
                    }
                    Err(e) => {
                        return Err(fail(format!(
                            "unable to get metric {}: {} on {ns} {}/{e}",
                            o.metric.name, d.kind, d.name
                        )))
                    }
                };
                let fetched = self
                    .metrics
                    .object_metric(
                        &o.metric.name,
                        &ns,
                        &group_resource,
                        &d.name,
                        &metric_selector,
                    )
                    .await
                    .map_err(|e| {
                        fail(format!(
                            "unable to get metric {}: {} on {ns} {}/{e}",
                            o.metric.name, d.kind, d.name
                        ))
                    })?;
                let (replicas, current, name) = if let Some(t) = value_target {
                    let (r, usage) = replica_calculator::object_metric_replicas(
                        spec_replicas,
                        t,
                        fetched.0,
                        &tol,
                        pods,
                    )
                    .map_err(fail)?;
                    (
                        r,
                        MetricValueStatus {
                            value: Some(milli_quantity(usage)),
                            ..Default::default()
                        },
                        format!("{} metric {}", d.kind, o.metric.name),
                    )
                } else {
                    let (r, usage) = replica_calculator::per_pod_replicas(
                        status_replicas,
                        avg_target.unwrap_or(1),
                        fetched.0,
                        &tol,
                    );
                    (
                        r,
                        MetricValueStatus {
                            average_value: Some(milli_quantity(usage)),
                            ..Default::default()
                        },
                        format!(
                            "external metric {}({})",
                            o.metric.name,
                            go_selector_string(o.metric.selector.as_ref())
                        ),
                    )
                };
                *status = MetricStatus {
                    type_: "Object".into(),
                    object: Some(ObjectMetricStatus {
                        described_object: d.clone(),
                        metric: MetricIdentifier {
                            name: o.metric.name.clone(),
                            selector: o.metric.selector.clone(),
                        },
                        current,
                    }),
                    ..Default::default()
                };
                Ok(Proposal { replicas, name })
            }
            "External" => {
                let e = spec.external.clone().unwrap_or_default();
                let mname = e.metric.name.clone();
                let fail = |err: String| {
                    let wrapped = format!("failed to get {mname} external metric value: {err}");
                    self.unable(hpa, "FailedGetExternalMetric", err, wrapped)
                };
                let avg = q_milli(e.target.average_value.as_ref());
                let value = q_milli(e.target.value.as_ref());
                if avg.is_none() && value.is_none() {
                    return Err(fail("invalid external metric source: neither a value target nor an average value target was set".into()));
                }
                let metric_selector =
                    meta_selector_string(e.metric.selector.as_ref()).map_err(fail)?;
                let values = self
                    .metrics
                    .external_metric(&mname, &ns, &metric_selector)
                    .await
                    .map_err(|err| {
                        fail(format!(
                            "unable to get external metric {ns}/{mname}/{}: {err}",
                            go_selector_string(e.metric.selector.as_ref())
                        ))
                    })?
                    .0;
                let (replicas, current) = if let Some(t) = avg {
                    let (r, usage) = replica_calculator::per_pod_replicas(
                        status_replicas,
                        t,
                        replica_calculator::sum_values(&values),
                        &tol,
                    );
                    (
                        r,
                        MetricValueStatus {
                            average_value: Some(milli_quantity(usage)),
                            ..Default::default()
                        },
                    )
                } else {
                    let (r, usage) = replica_calculator::external_metric_replicas(
                        spec_replicas,
                        value.unwrap_or(1),
                        &values,
                        &tol,
                        pods,
                    )
                    .map_err(fail)?;
                    (
                        r,
                        MetricValueStatus {
                            value: Some(milli_quantity(usage)),
                            ..Default::default()
                        },
                    )
                };
                *status = MetricStatus {
                    type_: "External".into(),
                    external: Some(ExternalMetricStatus {
                        metric: MetricIdentifier {
                            name: mname.clone(),
                            selector: e.metric.selector.clone(),
                        },
                        current,
                    }),
                    ..Default::default()
                };
                Ok(Proposal {
                    replicas,
                    name: format!(
                        "external metric {mname}({})",
                        go_selector_string(e.metric.selector.as_ref())
                    ),
                })
            }
            other => {
                let err = format!("unknown metric source type {other:?}");
                Err(self.unable(hpa, "InvalidMetricSourceType", err.clone(), err))
            }
        }
    }

    /// Upstream `computeReplicasForMetrics`: `Ok((replicas, metric name, statuses,
    /// partial error))`, or `Err((statuses, error))` when no usable proposal remains.
    async fn compute_metrics(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        key: &str,
        scale: &Scale,
    ) -> Result<(i32, String, Vec<MetricStatus>, Option<String>), (Vec<MetricStatus>, String)> {
        let (_, pods) = self
            .validate_selector(hpa, key, &scale.selector)
            .map_err(|e| (Vec::new(), e))?;
        let pod_refs: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
        let specs = hpa.spec.metrics.clone().unwrap_or_default();
        let mut statuses = vec![MetricStatus::default(); specs.len()];
        let mut replicas = 0;
        let mut metric = String::new();
        let mut invalid = 0;
        let mut first: Option<MetricFailure> = None;
        for (i, spec) in specs.iter().enumerate() {
            match self
                .compute_metric(
                    hpa,
                    spec,
                    scale.spec_replicas,
                    scale.status_replicas,
                    &scale.selector,
                    &pod_refs,
                    &mut statuses[i],
                )
                .await
            {
                Ok(p) => {
                    if replicas == 0 || p.replicas > replicas {
                        replicas = p.replicas;
                        metric = p.name;
                    }
                }
                Err(f) => {
                    invalid += 1;
                    first.get_or_insert(f);
                }
            }
        }
        let err = first.as_ref().map(|f| {
            format!(
                "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                specs.len(),
                f.error
            )
        });
        if invalid >= specs.len() || (invalid > 0 && replicas < scale.spec_replicas) {
            if let Some(f) = &first {
                set_condition(hpa, "ScalingActive", false, f.reason, f.message.clone());
            }
            return Err((statuses, err.unwrap_or_default()));
        }
        set_condition(
            hpa,
            "ScalingActive",
            true,
            "ValidMetricFound",
            format!("the HPA was able to successfully calculate a replica count from {metric}"),
        );
        Ok((replicas, metric, statuses, err))
    }

    async fn write_status(
        &self,
        original: &Option<HorizontalPodAutoscalerStatus>,
        hpa: &HorizontalPodAutoscaler,
    ) -> Result<(), String> {
        if &hpa.status == original {
            return Ok(());
        }
        let ns = hpa.metadata.namespace.as_deref().unwrap_or_default();
        let name = hpa.metadata.name.as_deref().unwrap_or_default();
        match Api::<HorizontalPodAutoscaler>::namespaced(self.client.clone(), ns)
            .replace_status(name, &PostParams::default(), hpa)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let msg = match e {
                    kube::Error::Api(s) => s.message,
                    e => e.to_string(),
                };
                self.event(hpa, EventType::Warning, "FailedUpdateStatus", &msg);
                Err(format!("failed to update status for {name}: {msg}"))
            }
        }
    }

    fn failed_get_scale(&self, hpa: &mut HorizontalPodAutoscaler, err: &str) {
        self.event(hpa, EventType::Warning, "FailedGetScale", err);
        set_condition(
            hpa,
            "AbleToScale",
            false,
            "FailedGetScale",
            format!("the HPA controller was unable to get the target's current scale: {err}"),
        );
    }

    fn set_status(
        hpa: &mut HorizontalPodAutoscaler,
        current: i32,
        desired: i32,
        metrics: Vec<MetricStatus>,
        rescale: bool,
    ) {
        // upstream `setStatus` rebuilds the status from these alone (so, as upstream,
        // without observedGeneration)
        let old = hpa.status.take().unwrap_or_default();
        hpa.status = Some(HorizontalPodAutoscalerStatus {
            current_replicas: Some(current),
            desired_replicas: desired,
            current_metrics: if metrics.is_empty() {
                None
            } else {
                Some(metrics)
            },
            conditions: old.conditions,
            last_scale_time: if rescale {
                Some(Time(Timestamp::now()))
            } else {
                old.last_scale_time
            },
            observed_generation: None,
        });
    }

    /// Upstream `reconcileAutoscaler`.
    async fn reconcile_autoscaler(
        &self,
        shared: &HorizontalPodAutoscaler,
        key: &str,
    ) -> Result<(), String> {
        let mut hpa = shared.clone();
        let original = hpa.status.clone();
        let spec = hpa.spec.clone();
        let target = spec.scale_target_ref.clone();
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let reference = format!("{}/{ns}/{}", target.kind, target.name);
        let api_version = target.api_version.clone().unwrap_or_default();
        if let Err(e) = coxswain_runtime::discovery::parse_group_version(&api_version) {
            self.failed_get_scale(&mut hpa, &e);
            let _ = self.write_status(&original, &hpa).await;
            return Err(format!(
                "invalid API version in scale target reference: {e}"
            ));
        }
        let mappings = match self.mappings(&api_version, &target.kind).await {
            Ok(m) => m,
            Err(e) => {
                self.failed_get_scale(&mut hpa, &e);
                let _ = self.write_status(&original, &hpa).await;
                return Err(format!(
                    "unable to determine resource for scale target reference: {e}"
                ));
            }
        };
        let scale = match self.get_scale(&ns, &target.name, &mappings).await {
            Ok(s) => s,
            Err(e) => {
                self.failed_get_scale(&mut hpa, &e);
                let _ = self.write_status(&original, &hpa).await;
                return Err(format!(
                    "failed to query scale subresource for {reference}: {e}"
                ));
            }
        };
        set_condition(
            &mut hpa,
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale".into(),
        );
        let current = scale.spec_replicas;
        let now = Timestamp::now();
        {
            let mut state = self.state.lock().expect("hpa state");
            let recs = state
                .history
                .recommendations
                .entry(key.to_string())
                .or_default();
            if recs.is_empty() {
                recs.push(normalize::Recommendation {
                    replicas: current,
                    timestamp: now,
                });
            }
        }
        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;
        let mut statuses = Vec::new();
        let mut ret_err = None;
        let mut reason = String::new();
        let desired;
        let rescale;
        if current == 0 && min != 0 {
            desired = 0;
            rescale = false;
            set_condition(
                &mut hpa,
                "ScalingActive",
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero".into(),
            );
        } else {
            let d = if current > max {
                reason = "Current number of replicas above Spec.MaxReplicas".into();
                max
            } else if current < min {
                reason = "Current number of replicas below Spec.MinReplicas".into();
                min
            } else {
                let (proposal, metric, st, err) = match self
                    .compute_metrics(&mut hpa, key, &scale)
                    .await
                {
                    Ok(v) => v,
                    Err((st, err)) => {
                        Self::set_status_current(&mut hpa, current, st);
                        let _ = self.write_status(&original, &hpa).await;
                        self.event(
                            &hpa,
                            EventType::Warning,
                            "FailedComputeMetricsReplicas",
                            &err,
                        );
                        return Err(format!("failed to compute desired number of replicas based on listed metrics for {reference}: {err}"));
                    }
                };
                statuses = st;
                ret_err = err;
                let mut d = 0;
                let mut rescale_metric = String::new();
                if proposal > d {
                    d = proposal;
                    rescale_metric = metric;
                }
                if d > current {
                    reason = format!("{rescale_metric} above target");
                }
                if d < current {
                    reason = "All metrics below target".into();
                }
                let mut state = self.state.lock().expect("hpa state");
                let n = match spec.behavior.as_ref() {
                    None => state.history.normalize(
                        key,
                        current,
                        d,
                        min,
                        max,
                        self.options.downscale_stabilization_window,
                        now,
                    ),
                    Some(b) => {
                        let mut down = normalize::scale_down_rules(b.scale_down.as_ref());
                        if down.stabilization_window_seconds.is_none() {
                            down.stabilization_window_seconds =
                                Some(self.options.downscale_stabilization_window.as_secs() as i32);
                        }
                        let arg = NormalizationArg {
                            key: key.to_string(),
                            scale_up: normalize::scale_up_rules(b.scale_up.as_ref()),
                            scale_down: down,
                            min_replicas: min,
                            max_replicas: max,
                            desired: d,
                            current,
                        };
                        state.history.normalize_with_behaviors(&arg, now)
                    }
                };
                drop(state);
                set_condition(
                    &mut hpa,
                    "AbleToScale",
                    true,
                    n.able_to_scale.0,
                    n.able_to_scale.1.into(),
                );
                set_condition(
                    &mut hpa,
                    "ScalingLimited",
                    n.limited,
                    n.limit_reason.0,
                    n.limit_reason.1.into(),
                );
                n.replicas
            };
            desired = d;
            rescale = desired != current;
        }
        let desired = if rescale {
            if let Err(e) = self.update_scale(&ns, &target.name, &scale, desired).await {
                self.event(
                    &hpa,
                    EventType::Warning,
                    "FailedRescale",
                    &format!("New size: {desired}; reason: {reason}; error: {e}"),
                );
                set_condition(
                    &mut hpa,
                    "AbleToScale",
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {e}"),
                );
                Self::set_status_current(&mut hpa, current, statuses);
                let _ = self.write_status(&original, &hpa).await;
                return Err(format!("failed to rescale {reference}: {e}"));
            }
            set_condition(
                &mut hpa,
                "AbleToScale",
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
            );
            self.event(
                &hpa,
                EventType::Normal,
                "SuccessfulRescale",
                &format!("New size: {desired}; reason: {reason}"),
            );
            self.state
                .lock()
                .expect("hpa state")
                .history
                .store_scale_event(
                    spec.behavior.as_ref(),
                    key,
                    current,
                    desired,
                    Timestamp::now(),
                );
            tracing::info!(hpa = %key, current, desired, reason = %reason, "Successfully rescaled");
            desired
        } else {
            current
        };
        Self::set_status(&mut hpa, current, desired, statuses, rescale);
        self.write_status(&original, &hpa).await?;
        match ret_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Upstream `setCurrentReplicasAndMetricsInStatus`.
    fn set_status_current(
        hpa: &mut HorizontalPodAutoscaler,
        current: i32,
        metrics: Vec<MetricStatus>,
    ) {
        let desired = hpa.status.as_ref().map(|s| s.desired_replicas).unwrap_or(0);
        Self::set_status(hpa, current, desired, metrics, false);
    }
}

impl<M: MetricsClient + 'static> Reconciler for HpaReconciler<M> {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(hpa) = self.hpas.get(&key) else {
            let mut s = self.state.lock().expect("hpa state");
            s.history.forget(&key.to_string());
            s.selectors.remove(&key.to_string());
            return Ok(Action::Done);
        };
        if let Err(e) = self.reconcile_autoscaler(&hpa, &key.to_string()).await {
            tracing::warn!(hpa = %key, error = %e, "HPA sync failed");
        }
        // every HPA comes back once per sync period, whatever happened
        Ok(Action::RequeueAfter(self.options.sync_period))
    }
}
