//! Per-pod behaviour chosen by annotations (see the crate documentation for the
//! table), and Go-style duration parsing for their values.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

/// Prefix of every simulator annotation.
pub const PREFIX: &str = "sim.coxswain.dev/";
/// Containers become ready this long after they start (overrides
/// [`crate::SimConfig::pod_ready_delay`]).
pub const READY_AFTER: &str = "sim.coxswain.dev/ready-after";
/// `"true"`: containers run but never become ready.
pub const NEVER_READY: &str = "sim.coxswain.dev/never-ready";
/// The pod stays `Pending` (containers `ContainerCreating`) this long after the
/// simulated kubelet first sees it, as a slow image pull would.
pub const START_AFTER: &str = "sim.coxswain.dev/start-after";
/// Containers exit with code 0 this long after they start.
pub const COMPLETE_AFTER: &str = "sim.coxswain.dev/complete-after";
/// Containers exit with this (non-zero) exit code after [`FAIL_AFTER`].
pub const FAIL: &str = "sim.coxswain.dev/fail";
/// How long containers run before [`FAIL`] or [`CRASH_LOOP`] makes them exit (default
/// [`crate::SimConfig::job_pod_run_duration`]).
pub const FAIL_AFTER: &str = "sim.coxswain.dev/fail-after";
/// Completion indexes (`"1,3-5"`): with [`FAIL`] or [`CRASH_LOOP`], only the pods of a
/// Job with one of these `batch.kubernetes.io/job-completion-index` values fail; the
/// others run as without those annotations, so one index of an Indexed Job can fail.
pub const FAIL_INDEXES: &str = "sim.coxswain.dev/fail-indexes";
/// `"true"`: containers exit with code 1 after [`FAIL_AFTER`], every time they run.
pub const CRASH_LOOP: &str = "sim.coxswain.dev/crash-loop";
/// `"true"`: containers ignore SIGTERM, so deleting the pod takes its whole grace
/// period, after which they are killed (exit code 137). Without it they exit 0 as soon
/// as their preStop hooks are done, as a process that shuts down on SIGTERM does.
pub const IGNORE_SIGTERM: &str = "sim.coxswain.dev/ignore-sigterm";
/// The lines every container writes once it starts (served by the embedded API
/// server's `pods/log`; the simulator only checks the annotations).
pub const LOG: &str = "sim.coxswain.dev/log";
/// Prefix of `sim.coxswain.dev/log.<container>`: the lines one container writes.
pub const LOG_CONTAINER_PREFIX: &str = "sim.coxswain.dev/log.";
/// A duration: containers write one log line per interval while they run.
pub const LOG_INTERVAL: &str = "sim.coxswain.dev/log-interval";
/// The pod's cpu usage, shared by its containers (a quantity or a load curve; served
/// by the embedded API server as `metrics.k8s.io`, which also checks the value).
pub const CPU_USAGE: &str = "sim.coxswain.dev/cpu-usage";
/// Prefix of `sim.coxswain.dev/cpu-usage.<container>`: one container's cpu usage.
pub const CPU_USAGE_CONTAINER_PREFIX: &str = "sim.coxswain.dev/cpu-usage.";
/// The pod's memory usage, shared by its containers (as [`CPU_USAGE`]).
pub const MEMORY_USAGE: &str = "sim.coxswain.dev/memory-usage";
/// Prefix of `sim.coxswain.dev/memory-usage.<container>`: one container's memory usage.
pub const MEMORY_USAGE_CONTAINER_PREFIX: &str = "sim.coxswain.dev/memory-usage.";

/// How a container exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// Its exit code.
    pub code: i32,
    /// How long it runs first.
    pub after: Duration,
}

/// What the simulated kubelet does with one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Behaviour {
    /// Delay from a container's start to its readiness.
    pub ready_after: Duration,
    /// Containers never become ready.
    pub never_ready: bool,
    /// Delay before containers start.
    pub start_after: Duration,
    /// How containers exit, if they do.
    pub exit: Option<Exit>,
    /// Containers ignore SIGTERM: a deleted pod runs until its grace period ends.
    pub ignore_sigterm: bool,
}

fn flag(value: &str) -> Result<bool, String> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("want \"true\" or \"false\", got {other:?}")),
    }
}

/// The indexes of a list such as `"1,3-5"`.
fn indexes(value: &str) -> Result<Vec<(u64, u64)>, String> {
    let bad = || format!("want completion indexes such as \"1,3-5\", got {value:?}");
    value
        .split(',')
        .map(|part| {
            let mut ends = part.trim().splitn(2, '-').map(|n| n.trim().parse::<u64>());
            match (ends.next(), ends.next()) {
                (Some(Ok(a)), None) => Ok((a, a)),
                (Some(Ok(a)), Some(Ok(b))) if a <= b => Ok((a, b)),
                _ => Err(bad()),
            }
        })
        .collect()
}

fn duration(value: &str) -> Result<Duration, String> {
    apimachinery::duration::parse_std(value)
        .map_err(|_| format!("want a duration such as \"5s\" or \"1m30s\", got {value:?}"))
}

/// Whether the pod is controlled by a Job (an owner reference of kind Job in
/// `batch/v1`).
pub fn owned_by_job(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Job" && o.api_version.starts_with("batch/"))
}

/// Defaults that annotations override.
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    /// Readiness delay.
    pub ready_after: Duration,
    /// Run time of Job pods and of failing containers.
    pub run_duration: Duration,
}

/// The behaviour of `pod`, and one message per annotation whose value could not be
/// used (those are ignored).
pub fn behaviour_of(pod: &Pod, defaults: Defaults) -> (Behaviour, Vec<String>) {
    let empty = BTreeMap::new();
    let ann = pod.metadata.annotations.as_ref().unwrap_or(&empty);
    let mut problems = Vec::new();
    let mut get = |key: &str, parse: &dyn Fn(&str) -> Result<(), String>| -> Option<String> {
        let v = ann.get(key)?;
        match parse(v) {
            Ok(()) => Some(v.clone()),
            Err(e) => {
                problems.push(format!("annotation {key}: {e}; ignored"));
                None
            }
        }
    };
    let dur = |v: &str| duration(v).map(|_| ());
    let flg = |v: &str| flag(v).map(|_| ());
    let code = |v: &str| match v.trim().parse::<i32>() {
        Ok(c) if c != 0 => Ok(()),
        Ok(_) => Err(format!(
            "exit code 0 is not a failure (use {COMPLETE_AFTER})"
        )),
        Err(_) => Err(format!("want a non-zero exit code, got {v:?}")),
    };
    let ready_after =
        get(READY_AFTER, &dur).and_then(|v| apimachinery::duration::parse_std(&v).ok());
    let never_ready = get(NEVER_READY, &flg).is_some_and(|v| v.trim() == "true");
    let start_after =
        get(START_AFTER, &dur).and_then(|v| apimachinery::duration::parse_std(&v).ok());
    let complete_after =
        get(COMPLETE_AFTER, &dur).and_then(|v| apimachinery::duration::parse_std(&v).ok());
    let mut fail = get(FAIL, &code).and_then(|v| v.trim().parse::<i32>().ok());
    let fail_after = get(FAIL_AFTER, &dur).and_then(|v| apimachinery::duration::parse_std(&v).ok());
    let mut crash_loop = get(CRASH_LOOP, &flg).is_some_and(|v| v.trim() == "true");
    let ixs = |v: &str| indexes(v).map(|_| ());
    if let Some(list) = get(FAIL_INDEXES, &ixs).and_then(|v| indexes(&v).ok()) {
        let index = ann
            .get("batch.kubernetes.io/job-completion-index")
            .and_then(|v| v.trim().parse::<u64>().ok());
        if !index.is_some_and(|i| list.iter().any(|&(a, b)| a <= i && i <= b)) {
            fail = None;
            crash_loop = false;
        }
    }
    let ignore_sigterm = get(IGNORE_SIGTERM, &flg).is_some_and(|v| v.trim() == "true");
    let interval = |v: &str| match apimachinery::duration::parse(v.trim()) {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "want a positive duration such as \"1s\" or \"500ms\", got {v:?}"
        )),
    };
    get(LOG_INTERVAL, &interval);
    let run = fail_after.unwrap_or(defaults.run_duration);
    let exit = if let Some(code) = fail {
        Some(Exit { code, after: run })
    } else if crash_loop {
        Some(Exit {
            code: 1,
            after: run,
        })
    } else if let Some(after) = complete_after {
        Some(Exit { code: 0, after })
    } else if owned_by_job(pod) {
        Some(Exit {
            code: 0,
            after: defaults.run_duration,
        })
    } else {
        None
    };
    for key in ann.keys().filter(|k| k.starts_with(PREFIX)) {
        let known = [
            READY_AFTER,
            NEVER_READY,
            START_AFTER,
            COMPLETE_AFTER,
            FAIL,
            FAIL_AFTER,
            FAIL_INDEXES,
            CRASH_LOOP,
            IGNORE_SIGTERM,
            LOG,
            LOG_INTERVAL,
            CPU_USAGE,
            MEMORY_USAGE,
        ];
        let per_container = [
            LOG_CONTAINER_PREFIX,
            CPU_USAGE_CONTAINER_PREFIX,
            MEMORY_USAGE_CONTAINER_PREFIX,
        ];
        if !known.contains(&key.as_str()) && !per_container.iter().any(|p| key.starts_with(p)) {
            problems.push(format!(
                "annotation {key} is not known to the simulator; ignored"
            ));
        }
    }
    (
        Behaviour {
            ready_after: ready_after.unwrap_or(defaults.ready_after),
            never_ready,
            start_after: start_after.unwrap_or(Duration::ZERO),
            exit,
            ignore_sigterm,
        },
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn pod(ann: &[(&str, &str)]) -> Pod {
        let mut p = Pod::default();
        p.metadata.annotations = Some(
            ann.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        p
    }

    const D: Defaults = Defaults {
        ready_after: Duration::from_secs(2),
        run_duration: Duration::from_secs(1),
    };

    #[test]
    fn fail_indexes_pick_the_failing_pods_of_an_indexed_job() {
        let of = |ix: Option<&str>, list: &str| {
            let mut ann = vec![(FAIL, "3"), (FAIL_INDEXES, list)];
            if let Some(ix) = ix {
                ann.push(("batch.kubernetes.io/job-completion-index", ix));
            }
            behaviour_of(&pod(&ann), D)
        };
        let fails = |ix: Option<&str>, list: &str| of(ix, list).0.exit.is_some_and(|e| e.code == 3);
        assert!(fails(Some("1"), "1"));
        assert!(fails(Some("4"), "1,3-5"));
        assert!(!fails(Some("2"), "1,3-5"));
        assert!(!fails(Some("6"), "1,3-5"));
        assert!(!fails(None, "1"));
        let (b, problems) = of(Some("1"), "x-2");
        assert_eq!(b.exit.map(|e| e.code), Some(3), "a bad list is ignored");
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn annotations_choose_the_behaviour() {
        let (b, p) = behaviour_of(&pod(&[]), D);
        assert!(p.is_empty());
        assert_eq!(b.ready_after, Duration::from_secs(2));
        assert_eq!(b.exit, None);

        let (b, p) = behaviour_of(
            &pod(&[
                (READY_AFTER, "5s"),
                (COMPLETE_AFTER, "3s"),
                (START_AFTER, "1m"),
            ]),
            D,
        );
        assert!(p.is_empty());
        assert_eq!(b.ready_after, Duration::from_secs(5));
        assert_eq!(b.start_after, Duration::from_secs(60));
        assert_eq!(
            b.exit,
            Some(Exit {
                code: 0,
                after: Duration::from_secs(3)
            })
        );

        let (b, _) = behaviour_of(&pod(&[(FAIL, "42"), (FAIL_AFTER, "2s")]), D);
        assert_eq!(
            b.exit,
            Some(Exit {
                code: 42,
                after: Duration::from_secs(2)
            })
        );
        let (b, _) = behaviour_of(&pod(&[(CRASH_LOOP, "true")]), D);
        assert_eq!(
            b.exit,
            Some(Exit {
                code: 1,
                after: Duration::from_secs(1)
            })
        );
        let (b, _) = behaviour_of(&pod(&[(NEVER_READY, "true")]), D);
        assert!(b.never_ready);
        assert!(!b.ignore_sigterm);
        let (b, p) = behaviour_of(&pod(&[(IGNORE_SIGTERM, "true")]), D);
        assert!(b.ignore_sigterm && p.is_empty());
        let (b, p) = behaviour_of(&pod(&[(IGNORE_SIGTERM, "always")]), D);
        assert!(!b.ignore_sigterm);
        assert_eq!(p.len(), 1, "{p:?}");
    }

    #[test]
    fn bad_values_are_reported_and_ignored() {
        let (b, problems) = behaviour_of(
            &pod(&[
                (READY_AFTER, "soon"),
                (FAIL, "0"),
                (CRASH_LOOP, "yes"),
                ("sim.coxswain.dev/typo", "1"),
            ]),
            D,
        );
        assert_eq!(b.ready_after, Duration::from_secs(2));
        assert_eq!(b.exit, None);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains(READY_AFTER), "{problems:?}");
    }

    #[test]
    fn log_annotations_are_known_and_their_interval_checked() {
        let (_, p) = behaviour_of(
            &pod(&[
                (LOG, "a\nb"),
                ("sim.coxswain.dev/log.app", "c"),
                (LOG_INTERVAL, "500ms"),
            ]),
            D,
        );
        assert!(p.is_empty(), "{p:?}");
        for bad in ["soon", "0s", "-1s"] {
            let (_, p) = behaviour_of(&pod(&[(LOG_INTERVAL, bad)]), D);
            assert_eq!(p.len(), 1, "{bad}: {p:?}");
            assert!(p[0].contains(LOG_INTERVAL), "{p:?}");
        }
    }

    #[test]
    fn usage_annotations_are_known() {
        let (_, p) = behaviour_of(
            &pod(&[
                (CPU_USAGE, "250m"),
                (MEMORY_USAGE, "64Mi,1m=128Mi"),
                ("sim.coxswain.dev/cpu-usage.app", "1"),
                ("sim.coxswain.dev/memory-usage.app", "1Gi"),
            ]),
            D,
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn job_pods_complete_after_the_run_duration() {
        let mut p = pod(&[]);
        p.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
            uid: "u".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        let (b, _) = behaviour_of(&p, D);
        assert_eq!(
            b.exit,
            Some(Exit {
                code: 0,
                after: Duration::from_secs(1)
            })
        );
    }
}
