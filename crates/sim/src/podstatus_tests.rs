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
        volumes_ready: true,
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

/// `kubectl delete` at `at` seconds with a grace period: the API server records the
/// end of the grace period, to the second.
fn delete_at(p: &mut Pod, at: f64, grace: i64) {
    p.metadata.deletion_grace_period_seconds = Some(grace);
    p.metadata.deletion_timestamp = Some(Time(floor_second(t(at + grace as f64))));
}

fn terminated(cs: &ContainerStatus) -> ContainerStateTerminated {
    cs.state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("{} not terminated: {:?}", cs.name, cs.state))
}

fn stopped(p: &Pod, b: &Behaviour, secs: f64) -> Pod {
    match stopping(p, b, t(secs)) {
        Stopping::Stopped(st) => {
            let mut p = p.clone();
            p.status = Some(*st);
            p
        }
        other => panic!("not stopped at {secs}: {other:?}"),
    }
}

fn waits(p: &Pod, b: &Behaviour, secs: f64) -> Duration {
    match stopping(p, b, t(secs)) {
        Stopping::Wait(d) => d,
        other => panic!("stopped at {secs}: {other:?}"),
    }
}

#[test]
fn a_deleted_pod_exits_on_sigterm_at_once() {
    let b = Behaviour::default();
    let mut p = pod("Always", false);
    run(&mut p, &b, 0.0);
    delete_at(&mut p, 5.3, 30);
    let done = stopped(&p, &b, 5.4);
    assert_eq!(phase(&done), "Succeeded");
    let term = terminated(container(&done));
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert_eq!(term.finished_at, Some(Time(floor_second(t(5.4)))));
    assert_eq!(term.started_at, Some(Time(floor_second(t(0.0)))));
    assert!(term.container_id.is_some());
    assert!(!container(&done).ready);
    let ready = cond(&done, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("PodCompleted"))
    );
    assert_eq!(cond(&done, "PodReadyToStartContainers").status, "False");
}

#[test]
fn ignoring_sigterm_runs_out_the_grace_period_and_is_killed() {
    let b = Behaviour {
        ignore_sigterm: true,
        ..Default::default()
    };
    let mut p = pod("Always", false);
    run(&mut p, &b, 0.0);
    // deleted at 5.3 s with 30 s: deletionTimestamp 35 s, whole: it ends at 36 s
    delete_at(&mut p, 5.3, 30);
    assert_eq!(waits(&p, &b, 5.4), Duration::from_millis(30_600));
    assert_eq!(waits(&p, &b, 35.9), Duration::from_millis(100));
    let done = stopped(&p, &b, 36.0);
    assert_eq!(phase(&done), "Failed");
    let term = terminated(container(&done));
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (137, Some("Error"))
    );
    assert_eq!(cond(&done, "Ready").reason.as_deref(), Some("PodFailed"));
    // a 1 s grace period still leaves the container 2 s between SIGTERM and SIGKILL
    delete_at(&mut p, 5.3, 1);
    assert_eq!(waits(&p, &b, 5.4), Duration::from_millis(2_600));
}

#[test]
fn pre_stop_sleep_hooks_delay_the_exit_within_the_grace_period() {
    let mut p = pod("Always", false);
    let with_sleep = |p: &mut Pod, secs: i64| {
        let c = &mut p.spec.as_mut().expect("spec").containers[0];
        c.lifecycle = Some(
            serde_json::from_value(serde_json::json!({
            "preStop": {"sleep": {"seconds": secs}}}))
            .expect("lifecycle"),
        );
    };
    with_sleep(&mut p, 5);
    let b = Behaviour::default();
    run(&mut p, &b, 0.0);
    // the grace period counts from 6 s (36 s − 30 s): the hook ends at 11 s
    delete_at(&mut p, 5.3, 30);
    assert_eq!(waits(&p, &b, 5.4), Duration::from_millis(5_600));
    let done = stopped(&p, &b, 11.0);
    assert_eq!(terminated(container(&done)).exit_code, 0);
    // a hook longer than the grace period is cut at its end; SIGTERM then ends the
    // container at once, or (ignored) 2 s later with SIGKILL
    with_sleep(&mut p, 60);
    assert_eq!(waits(&p, &b, 35.0), Duration::from_secs(1));
    assert_eq!(terminated(container(&stopped(&p, &b, 36.0))).exit_code, 0);
    let stubborn = Behaviour {
        ignore_sigterm: true,
        ..Default::default()
    };
    assert_eq!(waits(&p, &stubborn, 36.0), Duration::from_secs(2));
    assert_eq!(
        terminated(container(&stopped(&p, &stubborn, 38.0))).exit_code,
        137
    );
}

#[test]
fn stopping_ends_crashed_containers_with_their_last_exit_and_stops_sidecars() {
    let mut p = pod("Always", true);
    let spec = p.spec.as_mut().expect("spec");
    if let Some(inits) = spec.init_containers.as_mut() {
        inits[0].restart_policy = Some("Always".into());
    }
    let b = Behaviour {
        exit: Some(Exit {
            code: 1,
            after: Duration::from_secs(1),
        }),
        ..Default::default()
    };
    run(&mut p, &b, 0.0);
    // the app crashed at 2 s and is backing off; the sidecar runs
    run(&mut p, &b, 2.0);
    delete_at(&mut p, 3.0, 30);
    let done = stopped(&p, &b, 3.0);
    assert_eq!(phase(&done), "Failed");
    let app = terminated(container(&done));
    assert_eq!((app.exit_code, app.reason.as_deref()), (1, Some("Error")));
    let sidecar = done
        .status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .map(|l| terminated(&l[0]))
        .expect("sidecar status");
    assert_eq!(sidecar.exit_code, 0);
}

/// While the kubelet waits for a pod's volumes there is no sandbox yet:
/// PodReadyToStartContainers is False and the containers are ContainerCreating; a pod
/// without init containers is Initialized all the same (upstream's
/// GeneratePodInitializedCondition), one with them is not.
#[test]
fn waiting_for_volumes_has_no_sandbox_yet() {
    for init in [false, true] {
        let mut p = pod("Always", init);
        let waiting = Env {
            volumes_ready: false,
            ..env(t(0.0))
        };
        let s = step(&p, &Behaviour::default(), &waiting);
        p.status = s.status;
        assert_eq!(phase(&p), "Pending");
        assert_eq!(cond(&p, "PodReadyToStartContainers").status, "False");
        let initialized = cond(&p, "Initialized");
        if init {
            assert_eq!(initialized.status, "False");
            assert_eq!(
                initialized.message.as_deref(),
                Some("containers with incomplete status: [setup]")
            );
        } else {
            assert_eq!(initialized.status, "True", "{initialized:?}");
        }
        run(&mut p, &Behaviour::default(), 1.0);
        assert_eq!(phase(&p), "Running");
        assert_eq!(cond(&p, "PodReadyToStartContainers").status, "True");
        assert_eq!(cond(&p, "Initialized").status, "True");
    }
}
