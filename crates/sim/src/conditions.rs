//! Pod phase and conditions as the kubelet computes them (upstream `getPhase`,
//! `GeneratePodReadyCondition`, `GenerateContainersReadyCondition`,
//! `GeneratePodInitializedCondition`).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Upstream `getPhase` once the init containers are done.
pub(crate) fn phase_of(statuses: &[ContainerStatus], restart_policy: &str) -> &'static str {
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for cs in statuses {
        let st = cs.state.clone().unwrap_or_default();
        if st.running.is_some() {
            running += 1;
        } else if let Some(t) = &st.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if cs
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some()
        {
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    if waiting > 0 {
        "Pending"
    } else if running > 0 {
        "Running"
    } else if stopped > 0 {
        if restart_policy == "Always" {
            "Running"
        } else if stopped == succeeded {
            "Succeeded"
        } else if restart_policy == "Never" {
            "Failed"
        } else {
            "Running"
        }
    } else {
        "Pending"
    }
}

fn condition(type_: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.map(str::to_string),
        message,
        ..Default::default()
    }
}

/// The kubelet-owned conditions for `phase` and the container statuses; `sandbox`:
/// whether the pod's sandbox exists (not while the kubelet still waits for its volumes,
/// so `PodReadyToStartContainers` is False then, as upstream's).
pub(crate) fn conditions(
    pod: &Pod,
    phase: &str,
    sandbox: bool,
    init_done: bool,
    inits: &[String],
    cs: &[ContainerStatus],
) -> Vec<PodCondition> {
    let terminal = phase == "Succeeded" || phase == "Failed";
    let unready: Vec<&str> = cs
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    let not_ready = |t: &str| {
        condition(
            t,
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        )
    };
    let containers_ready = match phase {
        "Succeeded" => condition("ContainersReady", false, Some("PodCompleted"), None),
        "Failed" => condition("ContainersReady", false, Some("PodFailed"), None),
        _ if unready.is_empty() => condition("ContainersReady", true, None, None),
        _ => not_ready("ContainersReady"),
    };
    let mut ready = match phase {
        "Succeeded" => condition("Ready", false, Some("PodCompleted"), None),
        "Failed" => condition("Ready", false, Some("PodFailed"), None),
        _ if unready.is_empty() => condition("Ready", true, None, None),
        _ => not_ready("Ready"),
    };
    if ready.status == "True" {
        let existing = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
        for gate in pod
            .spec
            .as_ref()
            .and_then(|s| s.readiness_gates.as_ref())
            .into_iter()
            .flatten()
        {
            let got = existing.and_then(|cs| cs.iter().find(|c| c.type_ == gate.condition_type));
            let msg = match got {
                None => Some(format!(
                    "corresponding condition of pod readiness gate \"{}\" does not exist.",
                    gate.condition_type
                )),
                Some(c) if c.status != "True" => Some(format!(
                    "the status of pod readiness gate \"{}\" is not \"True\", but {}",
                    gate.condition_type, c.status
                )),
                Some(_) => None,
            };
            if let Some(m) = msg {
                ready = condition("Ready", false, Some("ReadinessGatesNotReady"), Some(m));
                break;
            }
        }
    }
    let initialized = if phase == "Succeeded" {
        condition("Initialized", true, Some("PodCompleted"), None)
    } else if init_done || inits.is_empty() {
        // upstream's GeneratePodInitializedCondition: no init containers, nothing to wait for
        condition("Initialized", true, None, None)
    } else {
        condition(
            "Initialized",
            false,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                inits.join(" ")
            )),
        )
    };
    vec![
        condition(
            "PodReadyToStartContainers",
            !terminal && sandbox,
            None,
            None,
        ),
        initialized,
        ready,
        containers_ready,
    ]
}

/// Merge kubelet-owned `new` conditions into `old` ones: others are kept, a condition
/// whose status did not change keeps its lastTransitionTime.
pub(crate) fn merge_conditions(
    old: &[PodCondition],
    new: Vec<PodCondition>,
    stamp: &Time,
    generation: Option<i64>,
) -> Vec<PodCondition> {
    let mut out: Vec<PodCondition> = Vec::with_capacity(old.len() + new.len());
    if !old.iter().any(|c| c.type_ == "PodScheduled") {
        out.push(PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            last_transition_time: Some(stamp.clone()),
            ..Default::default()
        });
    }
    let owned = |t: &str| new.iter().any(|n| n.type_ == t);
    out.extend(old.iter().filter(|c| !owned(&c.type_)).cloned());
    for mut n in new {
        let prev = old.iter().find(|c| c.type_ == n.type_);
        n.last_transition_time = match prev {
            Some(p) if p.status == n.status => p.last_transition_time.clone(),
            _ => Some(stamp.clone()),
        };
        n.observed_generation = generation;
        out.push(n);
    }
    out
}
