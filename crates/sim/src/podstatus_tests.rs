use super::*;
use crate::behaviour::Exit;
use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate, PodSpec};

fn pod(policy: &str, init: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some("web".into());
    p.metadata.namespace = Some("default".into());
    p.metadata.uid = Some("uid-1".into());
    p.spec = Some(PodSpec {
        restart_policy: Some(policy.into()),
        node_name: Some("n1".into()),
        containers: vec![Container {
            name: "app".into(),
            image: Some("nginx:1.27".into()),
            ..Default::default()
        }],
        init_containers: init.then(|| {
            vec![Container {
                name: "setup".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }]
        }),
        ..Default::default()
    });
    p
}

fn env(now: Timestamp) -> Env {
    Env {
        now,
        host_ip: "172.18.0.2".into(),
        pod_ip: Some("10.244.0.5".into()),
        backoff_base: Duration::from_secs(10),
        backoff_max: Duration::from_secs(300),
    }
}

fn t(secs: f64) -> Timestamp {
    Timestamp::from_nanosecond(1_700_000_000_000_000_000 + (secs * 1e9) as i128)
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Apply a step at `secs`; return the step.
fn run(p: &mut Pod, b: &Behaviour, secs: f64) -> Step {
    let s = step(p, b, &env(t(secs)));
    if let Some(st) = &s.status {
        p.status = Some(st.clone());
    }
    s
}

fn cond<'a>(p: &'a Pod, t: &str) -> &'a PodCondition {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == t))
        .unwrap_or_else(|| panic!("condition {t}"))
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn container(p: &Pod) -> &ContainerStatus {
    &p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .expect("statuses")[0]
}

#[test]
fn a_pod_starts_running_and_ready() {
    let mut p = pod("Always", true);
    let s = run(&mut p, &Behaviour::default(), 0.3);
    assert!(s.status.is_some());
    assert_eq!(s.after, None, "nothing more to do");
    assert_eq!(phase(&p), "Running");
    let st = p.status.clone().expect("status");
    assert_eq!(st.pod_ip.as_deref(), Some("10.244.0.5"));
    assert_eq!(st.host_ip.as_deref(), Some("172.18.0.2"));
    assert!(st.start_time.is_some());
    for c in [
        "PodScheduled",
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
    ] {
        assert_eq!(cond(&p, c).status, "True", "{c}");
    }
    let c = container(&p);
    assert!(c.ready);
    assert_eq!(c.started, Some(true));
    assert_eq!(c.restart_count, 0);
    assert!(
        c.image_id.starts_with("docker.io/library/nginx@sha256:"),
        "{}",
        c.image_id
    );
    assert!(c
        .container_id
        .as_deref()
        .is_some_and(|id| id.starts_with("containerd://")));
    assert!(c.state.as_ref().and_then(|s| s.running.as_ref()).is_some());
    let init = &st.init_container_statuses.expect("init")[0];
    let term = init
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("terminated");
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
    // nothing changes on the next look
    assert_eq!(run(&mut p, &Behaviour::default(), 5.0).status, None);
}

#[test]
fn readiness_waits_for_the_delay() {
    let mut p = pod("Always", false);
    let b = Behaviour {
        ready_after: Duration::from_secs(5),
        ..Default::default()
    };
    let s = run(&mut p, &b, 0.3);
    assert!(!container(&p).ready);
    assert_eq!(cond(&p, "Ready").status, "False");
    assert_eq!(
        cond(&p, "Ready").reason.as_deref(),
        Some("ContainersNotReady")
    );
    assert_eq!(
        cond(&p, "Ready").message.as_deref(),
        Some("containers with unready status: [app]")
    );
    // started at second 0 (recorded), so ready at 0 + 1 + 5 = 6 s: 5.7 s from 0.3
    let after = s.after.expect("wake-up");
    assert!((after.as_secs_f64() - 5.7).abs() < 1e-6, "{after:?}");
    assert_eq!(run(&mut p, &b, 4.0).status, None);
    let s = run(&mut p, &b, 6.0);
    assert!(s.status.is_some());
    assert!(container(&p).ready);
    assert_eq!(cond(&p, "Ready").status, "True");
}

#[test]
fn never_ready_stays_unready() {
    let mut p = pod("Always", false);
    let b = Behaviour {
        never_ready: true,
        ..Default::default()
    };
    let s = run(&mut p, &b, 0.0);
    assert_eq!(s.after, None);
    assert_eq!(phase(&p), "Running");
    assert_eq!(cond(&p, "ContainersReady").status, "False");
}

#[test]
fn a_completing_container_ends_the_pod_under_never() {
    let mut p = pod("Never", false);
    let b = Behaviour {
        exit: Some(Exit {
            code: 0,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    let s = run(&mut p, &b, 0.0);
    assert!(s.after.is_some());
    run(&mut p, &b, 3.0);
    assert_eq!(phase(&p), "Succeeded");
    let term = container(&p)
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert!(!container(&p).ready);
    assert_eq!(cond(&p, "Ready").reason.as_deref(), Some("PodCompleted"));
    assert_eq!(cond(&p, "PodReadyToStartContainers").status, "False");
    assert_eq!(
        run(&mut p, &b, 100.0),
        Step {
            status: None,
            after: None
        }
    );
}

#[test]
fn a_failing_container_fails_the_pod_under_never() {
    let mut p = pod("Never", false);
    let b = Behaviour {
        exit: Some(Exit {
            code: 3,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    run(&mut p, &b, 0.0);
    run(&mut p, &b, 2.5);
    assert_eq!(phase(&p), "Failed");
    let term = container(&p)
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!((term.exit_code, term.reason.as_deref()), (3, Some("Error")));
    assert_eq!(cond(&p, "Ready").reason.as_deref(), Some("PodFailed"));
}

#[test]
fn a_crash_loop_backs_off_and_counts_restarts() {
    let mut p = pod("Always", false);
    let b = Behaviour {
        exit: Some(Exit {
            code: 1,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    run(&mut p, &b, 0.0);
    // crash at 2 s: waiting with a 10 s back-off
    let s = run(&mut p, &b, 2.0);
    assert_eq!(phase(&p), "Running");
    let c = container(&p).clone();
    let waiting = c
        .state
        .as_ref()
        .and_then(|s| s.waiting.clone())
        .expect("waiting");
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(
        waiting.message.as_deref(),
        Some("back-off 10s restarting failed container=app pod=web_default(uid-1)")
    );
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("last state");
    assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
    assert_eq!(c.restart_count, 0);
    assert!(!c.ready);
    assert!(s.after.is_some_and(|d| d > Duration::from_secs(9)));
    assert_eq!(run(&mut p, &b, 8.0).status, None, "still backing off");
    // restart after 2 + 1 + 10 s
    run(&mut p, &b, 13.0);
    assert_eq!(container(&p).restart_count, 1);
    assert!(container(&p)
        .state
        .as_ref()
        .is_some_and(|s| s.running.is_some()));
    // second crash backs off 20 s
    run(&mut p, &b, 15.0);
    let msg = container(&p)
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.message.clone());
    assert!(msg.is_some_and(|m| m.starts_with("back-off 20s")));
}

#[test]
fn on_failure_restarts_failures_but_completes_successes() {
    let mut p = pod("OnFailure", false);
    let fail = Behaviour {
        exit: Some(Exit {
            code: 2,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    run(&mut p, &fail, 0.0);
    run(&mut p, &fail, 2.0);
    assert_eq!(phase(&p), "Running", "a failed container restarts");
    let mut p = pod("OnFailure", false);
    let ok = Behaviour {
        exit: Some(Exit {
            code: 0,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    run(&mut p, &ok, 0.0);
    run(&mut p, &ok, 2.0);
    assert_eq!(phase(&p), "Succeeded");
}

#[test]
fn start_after_keeps_the_pod_pending() {
    let mut p = pod("Always", true);
    let b = Behaviour {
        start_after: Duration::from_secs(30),
        ..Default::default()
    };
    let s = run(&mut p, &b, 0.0);
    assert_eq!(phase(&p), "Pending");
    let w = container(&p)
        .state
        .as_ref()
        .and_then(|s| s.waiting.clone())
        .expect("waiting");
    assert_eq!(w.reason.as_deref(), Some("PodInitializing"));
    assert_eq!(cond(&p, "Initialized").status, "False");
    assert!(s.after.is_some_and(|d| d > Duration::from_secs(29)));
    assert_eq!(run(&mut p, &b, 10.0).status, None);
    run(&mut p, &b, 32.0);
    assert_eq!(phase(&p), "Running");
    assert_eq!(cond(&p, "Ready").status, "True");
}

#[test]
fn readiness_gates_hold_ready() {
    let mut p = pod("Always", false);
    if let Some(s) = p.spec.as_mut() {
        s.readiness_gates = Some(vec![PodReadinessGate {
            condition_type: "example.com/lb".into(),
        }]);
    }
    run(&mut p, &Behaviour::default(), 0.0);
    assert_eq!(cond(&p, "ContainersReady").status, "True");
    assert_eq!(
        cond(&p, "Ready").reason.as_deref(),
        Some("ReadinessGatesNotReady")
    );
    // someone sets the gate's condition: Ready follows, the gate is kept
    if let Some(cs) = p.status.as_mut().and_then(|s| s.conditions.as_mut()) {
        cs.push(PodCondition {
            type_: "example.com/lb".into(),
            status: "True".into(),
            ..Default::default()
        });
    }
    run(&mut p, &Behaviour::default(), 1.0);
    assert_eq!(cond(&p, "Ready").status, "True");
    assert_eq!(cond(&p, "example.com/lb").status, "True");
}

#[test]
fn helpers() {
    assert_eq!(
        image_id("quay.io/org/app:v1").split('@').next(),
        Some("quay.io/org/app")
    );
    assert_eq!(
        image_id("org/app").split('@').next(),
        Some("docker.io/org/app")
    );
    assert_eq!(
        image_id("localhost:5000/app").split('@').next(),
        Some("localhost:5000/app")
    );
    assert_eq!(digest(&["a"]).len(), 64);
    assert_ne!(digest(&["a", "b"]), digest(&["ab"]));
    let e = env(t(0.0));
    assert_eq!(backoff(&e, 0), Duration::from_secs(10));
    assert_eq!(backoff(&e, 3), Duration::from_secs(80));
    assert_eq!(backoff(&e, 40), Duration::from_secs(300));
}
