//! The simulated kubelet's pod status machine, as a pure function of the pod, its
//! [`Behaviour`] and the time.
//!
//! Everything is derived from the status the API server holds (container start and
//! finish times, restart counts), so the simulator keeps no per-pod state and picks
//! up where it left off after a restart. Timestamps have second precision, so each
//! delay is counted from the recorded second plus one: never early, at most a second
//! late. Phases, conditions and container states follow upstream kubelet
//! (`getPhase`, `GeneratePodReadyCondition` and friends): a container that exits is
//! restarted with a doubling back-off under `restartPolicy: Always` (and under
//! `OnFailure` when it failed), the pod turns `Succeeded` or `Failed` only when no
//! container will run again.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodIP, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::behaviour::Behaviour;
use crate::conditions::{conditions, merge_conditions, phase_of};

/// What the status machine needs besides the pod.
#[derive(Clone, Debug)]
pub struct Env {
    /// The current time.
    pub now: Timestamp,
    /// The node's InternalIP.
    pub host_ip: String,
    /// The pod's IP (allocated from the node's CIDR).
    pub pod_ip: Option<String>,
    /// First crash-loop back-off (upstream 10 s).
    pub backoff_base: Duration,
    /// Longest crash-loop back-off (upstream 300 s).
    pub backoff_max: Duration,
    /// Whether the pod's volumes are attached and mounted: until they are, its
    /// containers are not created (`ContainerCreating`).
    pub volumes_ready: bool,
}

/// The next status to write (if it changed) and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The new status, when it differs from the current one.
    pub status: Option<PodStatus>,
    /// Look at the pod again after this long.
    pub after: Option<Duration>,
}

const NANOS: i128 = 1_000_000_000;

fn floor_second(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// Time left until `d` after `since` (recorded with second precision, so a whole-second
/// `since` counts from its end); `None` when that moment has come.
pub fn remaining(since: Timestamp, d: Duration, now: Timestamp) -> Option<Duration> {
    if d.is_zero() {
        return None;
    }
    let mut deadline = since.as_nanosecond() + d.as_nanos() as i128;
    if since.as_nanosecond() % NANOS == 0 {
        deadline += NANOS;
    }
    let left = deadline - now.as_nanosecond();
    (left > 0).then(|| Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX)))
}

/// Crash-loop back-off before restart number `restarts + 1`.
pub fn backoff(env: &Env, restarts: i32) -> Duration {
    let factor = 2u32.saturating_pow(u32::try_from(restarts.max(0)).unwrap_or(0).min(31));
    env.backoff_base.saturating_mul(factor).min(env.backoff_max)
}

/// A stable fake hex digest of `parts` (64 characters).
pub fn digest(parts: &[&str]) -> String {
    let mut out = String::with_capacity(64);
    for round in 0u64..4 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for p in parts {
            for b in p.bytes().chain(std::iter::once(0)) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// The `imageID` a container runtime would report for `image`.
pub fn image_id(image: &str) -> String {
    let repo = match image.split_once('@') {
        Some((r, _)) => r,
        None => match image.rfind(':') {
            Some(i) if !image[i..].contains('/') => &image[..i],
            _ => image,
        },
    };
    let first = repo.split('/').next().unwrap_or("");
    let full = if !repo.contains('/') {
        format!("docker.io/library/{repo}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        repo.to_string()
    } else {
        format!("docker.io/{repo}")
    };
    format!("{full}@sha256:{}", digest(&[image]))
}

struct PodCtx<'a> {
    pod: &'a Pod,
    b: &'a Behaviour,
    env: &'a Env,
    stamp: Time,
    restart_policy: &'a str,
    next: Option<Duration>,
}

impl PodCtx<'_> {
    fn wake_in(&mut self, d: Duration) {
        self.next = Some(self.next.map_or(d, |n| n.min(d)));
    }

    fn container_id(&self, name: &str, restarts: i32) -> String {
        let uid = self.pod.metadata.uid.as_deref().unwrap_or("");
        format!(
            "containerd://{}",
            digest(&[uid, name, &restarts.to_string()])
        )
    }

    fn base(&self, c: &Container, old: Option<&ContainerStatus>) -> ContainerStatus {
        let image = c.image.clone().unwrap_or_default();
        ContainerStatus {
            name: c.name.clone(),
            image_id: image_id(&image),
            image,
            restart_count: old.map_or(0, |o| o.restart_count),
            last_state: old.and_then(|o| o.last_state.clone()),
            ..Default::default()
        }
    }

    fn running(
        &mut self,
        c: &Container,
        old: Option<&ContainerStatus>,
        restarts: i32,
    ) -> ContainerStatus {
        let mut cs = self.base(c, old);
        cs.restart_count = restarts;
        cs.container_id = Some(self.container_id(&c.name, restarts));
        cs.state = Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(self.stamp.clone()),
            }),
            ..Default::default()
        });
        cs.started = Some(true);
        cs.ready = self.readiness(self.stamp.0);
        if let Some(exit) = self.b.exit {
            if let Some(left) = remaining(self.stamp.0, exit.after, self.env.now) {
                self.wake_in(left);
            }
        }
        cs
    }

    /// Whether a container running since `since` is ready now (and a wake-up for when
    /// it becomes so).
    fn readiness(&mut self, since: Timestamp) -> bool {
        if self.b.never_ready {
            return false;
        }
        match remaining(since, self.b.ready_after, self.env.now) {
            None => true,
            Some(left) => {
                self.wake_in(left);
                false
            }
        }
    }

    fn waiting(
        &self,
        c: &Container,
        old: Option<&ContainerStatus>,
        reason: &str,
    ) -> ContainerStatus {
        let mut cs = self.base(c, old);
        cs.state = Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.to_string()),
                message: None,
            }),
            ..Default::default()
        });
        cs.started = Some(false);
        cs
    }

    /// Advance one regular container that has been started before.
    fn advance(&mut self, c: &Container, old: &ContainerStatus) -> ContainerStatus {
        let state = old.state.clone().unwrap_or_default();
        if let Some(run) = &state.running {
            let since = run.started_at.as_ref().map_or(self.env.now, |t| t.0);
            if let Some(exit) = self.b.exit {
                match remaining(since, exit.after, self.env.now) {
                    None => return self.terminate(c, old, exit.code, since),
                    Some(left) => self.wake_in(left),
                }
            }
            let mut cs = old.clone();
            cs.ready = self.readiness(since);
            return cs;
        }
        if state.terminated.is_some() {
            return old.clone();
        }
        let backing_off = state
            .waiting
            .as_ref()
            .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"));
        let finished = old
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
            .map(|t| t.0);
        match (backing_off, finished) {
            (true, Some(f)) => {
                match remaining(f, backoff(self.env, old.restart_count), self.env.now) {
                    Some(left) => {
                        self.wake_in(left);
                        old.clone()
                    }
                    None => self.running(c, Some(old), old.restart_count.saturating_add(1)),
                }
            }
            _ => self.running(c, Some(old), old.restart_count),
        }
    }

    fn terminate(
        &mut self,
        c: &Container,
        old: &ContainerStatus,
        code: i32,
        since: Timestamp,
    ) -> ContainerStatus {
        let term = ContainerStateTerminated {
            exit_code: code,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.to_string()),
            started_at: Some(Time(since)),
            finished_at: Some(self.stamp.clone()),
            container_id: old.container_id.clone(),
            ..Default::default()
        };
        let restart = match self.restart_policy {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        };
        let mut cs = old.clone();
        cs.ready = false;
        cs.started = Some(false);
        if restart {
            let wait = backoff(self.env, old.restart_count);
            let meta = &self.pod.metadata;
            cs.state = Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("CrashLoopBackOff".into()),
                    message: Some(format!(
                        "back-off {} restarting failed container={} pod={}_{}({})",
                        apimachinery::duration::format_std(wait),
                        c.name,
                        meta.name.as_deref().unwrap_or(""),
                        meta.namespace.as_deref().unwrap_or(""),
                        meta.uid.as_deref().unwrap_or("")
                    )),
                }),
                ..Default::default()
            });
            cs.last_state = Some(ContainerState {
                terminated: Some(term),
                ..Default::default()
            });
            if let Some(left) = remaining(self.stamp.0, wait, self.env.now) {
                self.wake_in(left);
            }
        } else {
            cs.state = Some(ContainerState {
                terminated: Some(term),
                ..Default::default()
            });
        }
        cs
    }
}

/// One step of the pod's life: the status to write now and when to look again.
/// A terminal pod never changes.
pub fn step(pod: &Pod, b: &Behaviour, env: &Env) -> Step {
    let old = pod.status.clone().unwrap_or_default();
    let phase = old.phase.as_deref().unwrap_or("Pending");
    if phase == "Succeeded" || phase == "Failed" {
        return Step {
            status: None,
            after: None,
        };
    }
    let spec = pod.spec.clone().unwrap_or_default();
    let mut ctx = PodCtx {
        pod,
        b,
        env,
        stamp: Time(floor_second(env.now)),
        restart_policy: spec.restart_policy.as_deref().unwrap_or("Always"),
        next: None,
    };
    let start = old.start_time.as_ref().map_or(ctx.stamp.0, |t| t.0);
    let started = old.start_time.is_some() && phase != "Pending";
    let waiting_to_start = !started
        && (remaining(start, b.start_after, env.now)
            .inspect(|left| ctx.wake_in(*left))
            .is_some()
            || !env.volumes_ready);
    let old_cs = old.container_statuses.clone().unwrap_or_default();
    let find = |list: &[ContainerStatus], name: &str| list.iter().find(|c| c.name == name).cloned();

    // init containers: done at once (restartable ones keep running)
    let inits: Vec<Container> = spec.init_containers.clone().unwrap_or_default();
    let old_init = old.init_container_statuses.clone().unwrap_or_default();
    let mut init_statuses = Vec::with_capacity(inits.len());
    for c in &inits {
        let prev = find(&old_init, &c.name);
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        let cs = if waiting_to_start {
            ctx.waiting(
                c,
                prev.as_ref(),
                if sidecar {
                    "PodInitializing"
                } else {
                    "ContainerCreating"
                },
            )
        } else if sidecar {
            match &prev {
                Some(p) if p.state.as_ref().is_some_and(|s| s.running.is_some()) => {
                    let since = p
                        .state
                        .as_ref()
                        .and_then(|s| s.running.as_ref())
                        .and_then(|r| r.started_at.as_ref())
                        .map_or(env.now, |t| t.0);
                    let mut cs = p.clone();
                    cs.ready = ctx.readiness(since);
                    cs
                }
                _ => ctx.running(
                    c,
                    prev.as_ref(),
                    prev.as_ref().map_or(0, |p| p.restart_count),
                ),
            }
        } else {
            match &prev {
                Some(p) if p.state.as_ref().is_some_and(|s| s.terminated.is_some()) => p.clone(),
                _ => {
                    let mut cs = ctx.base(c, prev.as_ref());
                    cs.container_id = Some(ctx.container_id(&c.name, 0));
                    cs.state = Some(ContainerState {
                        terminated: Some(ContainerStateTerminated {
                            exit_code: 0,
                            reason: Some("Completed".into()),
                            started_at: Some(ctx.stamp.clone()),
                            finished_at: Some(ctx.stamp.clone()),
                            container_id: cs.container_id.clone(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                    cs.ready = true;
                    cs.started = Some(false);
                    cs
                }
            }
        };
        init_statuses.push(cs);
    }

    let mut statuses = Vec::with_capacity(spec.containers.len());
    for c in &spec.containers {
        let prev = find(&old_cs, &c.name);
        let cs = if waiting_to_start {
            let reason = if inits.is_empty() {
                "ContainerCreating"
            } else {
                "PodInitializing"
            };
            ctx.waiting(c, prev.as_ref(), reason)
        } else {
            match &prev {
                Some(p) if started => ctx.advance(c, p),
                _ => ctx.running(
                    c,
                    prev.as_ref(),
                    prev.as_ref().map_or(0, |p| p.restart_count),
                ),
            }
        };
        statuses.push(cs);
    }

    let new_phase = if waiting_to_start {
        "Pending"
    } else {
        phase_of(&statuses, ctx.restart_policy)
    };
    let init_names: Vec<String> = inits.iter().map(|c| c.name.clone()).collect();
    let conds = conditions(
        pod,
        new_phase,
        started || env.volumes_ready,
        !waiting_to_start,
        &init_names,
        &statuses,
    );
    let generation = pod.metadata.generation;
    let mut status = old.clone();
    status.phase = Some(new_phase.to_string());
    status.conditions = Some(merge_conditions(
        old.conditions.as_deref().unwrap_or(&[]),
        conds,
        &ctx.stamp,
        generation,
    ));
    status.start_time = Some(Time(start));
    status.host_ip = Some(env.host_ip.clone());
    status.host_ips = Some(vec![HostIP {
        ip: env.host_ip.clone(),
    }]);
    if old.pod_ip.is_none() {
        if let Some(ip) = &env.pod_ip {
            status.pod_ip = Some(ip.clone());
            status.pod_ips = Some(vec![PodIP { ip: ip.clone() }]);
        }
    }
    status.container_statuses = Some(statuses);
    status.init_container_statuses = (!init_statuses.is_empty()).then_some(init_statuses);
    if generation.is_some() {
        status.observed_generation = generation;
    }
    let after = if matches!(new_phase, "Succeeded" | "Failed") {
        None
    } else {
        ctx.next
    };
    Step {
        status: (status != old).then_some(status),
        after,
    }
}

/// What happens next to a running pod that is being deleted.
#[derive(Clone, Debug, PartialEq)]
pub enum Stopping {
    /// Its containers are still stopping (a preStop sleep, or a process that ignores
    /// SIGTERM): look again after this long.
    Wait(Duration),
    /// They have stopped: the status to report before the pod is removed.
    Stopped(Box<PodStatus>),
}

/// Upstream kubelet's `killContainer` floor: a container gets at least 2 s between
/// SIGTERM and SIGKILL, even when its preStop hook used up the grace period.
const MIN_GRACE_NANOS: i128 = 2 * NANOS;

/// The longest `preStop` sleep action of the containers that run (regular and sidecar
/// containers), in seconds; exec and HTTP hooks take no time here.
fn pre_stop_sleep(spec: &PodSpec) -> i64 {
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers
        .iter()
        .chain(sidecars)
        .filter_map(|c| c.lifecycle.as_ref()?.pre_stop.as_ref()?.sleep.as_ref())
        .map(|s| s.seconds.max(0))
        .max()
        .unwrap_or(0)
}

/// The kubelet stopping a running pod that has a `deletionTimestamp`, as upstream
/// `killPod` does: each container's preStop hook runs (a `sleep` action takes its
/// seconds, at most the grace period), then the container gets SIGTERM and, as a
/// well-behaved process, exits 0 at once (`Completed`); with `ignore_sigterm` it runs
/// on until the grace period is over (and at least 2 s after its hook) and is killed:
/// exit code 137, `Error`. The grace period started `deletionGracePeriodSeconds`
/// before the `deletionTimestamp` (second precision, so a whole second counts from its
/// end: never early). Once stopped, the pod is terminal, `Succeeded` when every
/// container exited 0 and `Failed` otherwise, as kubelets since 1.27 report deleted
/// pods.
pub fn stopping(pod: &Pod, b: &Behaviour, now: Timestamp) -> Stopping {
    let spec = pod.spec.clone().unwrap_or_default();
    let sleep = pre_stop_sleep(&spec);
    let code = if b.ignore_sigterm { 137 } else { 0 };
    if sleep == 0 && !b.ignore_sigterm {
        return Stopping::Stopped(Box::new(stopped_status(pod, code, now)));
    }
    let grace = i128::from(
        pod.metadata
            .deletion_grace_period_seconds
            .unwrap_or(0)
            .max(0),
    );
    let mut end = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .map_or(now.as_nanosecond(), |t| t.0.as_nanosecond());
    if end % NANOS == 0 {
        end += NANOS;
    }
    let start = end - grace * NANOS;
    let hook_end = start + i128::from(sleep).min(grace) * NANOS;
    let stop_at = if b.ignore_sigterm {
        end.max(hook_end + MIN_GRACE_NANOS)
    } else {
        hook_end
    };
    let left = stop_at - now.as_nanosecond();
    if left > 0 {
        Stopping::Wait(Duration::from_nanos(
            u64::try_from(left).unwrap_or(u64::MAX),
        ))
    } else {
        Stopping::Stopped(Box::new(stopped_status(pod, code, now)))
    }
}

/// `pod`'s status once its containers were stopped at `now`, the running ones exiting
/// with `code`.
fn stopped_status(pod: &Pod, code: i32, now: Timestamp) -> PodStatus {
    let old = pod.status.clone().unwrap_or_default();
    let stamp = Time(floor_second(now));
    let stop = |cs: &ContainerStatus| -> ContainerStatus {
        let mut cs = cs.clone();
        let state = cs.state.clone().unwrap_or_default();
        let term = if let Some(run) = state.running {
            ContainerStateTerminated {
                exit_code: code,
                reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
                started_at: run.started_at,
                finished_at: Some(stamp.clone()),
                container_id: cs.container_id.clone(),
                ..Default::default()
            }
        } else if let Some(t) = state.terminated {
            t
        } else if let Some(t) = cs.last_state.as_ref().and_then(|s| s.terminated.clone()) {
            // backing off: its last run is its end
            t
        } else {
            ContainerStateTerminated {
                exit_code: 137,
                reason: Some("ContainerStatusUnknown".into()),
                message: Some(
                    "The container could not be located when the pod was terminated".into(),
                ),
                ..Default::default()
            }
        };
        cs.state = Some(ContainerState {
            terminated: Some(term),
            ..Default::default()
        });
        cs.ready = false;
        cs.started = Some(false);
        cs
    };
    let statuses: Vec<ContainerStatus> =
        old.container_statuses.iter().flatten().map(stop).collect();
    let spec = pod.spec.clone().unwrap_or_default();
    let inits = old.init_container_statuses.as_ref().map(|list| {
        list.iter()
            .map(|cs| {
                let sidecar =
                    spec.init_containers.iter().flatten().any(|c| {
                        c.name == cs.name && c.restart_policy.as_deref() == Some("Always")
                    });
                if sidecar {
                    stop(cs)
                } else {
                    cs.clone()
                }
            })
            .collect::<Vec<_>>()
    });
    let succeeded = statuses.iter().all(|cs| {
        cs.state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0)
    });
    let phase = if succeeded { "Succeeded" } else { "Failed" };
    let init_names: Vec<String> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    let conds = conditions(pod, phase, true, true, &init_names, &statuses);
    let mut status = old.clone();
    status.phase = Some(phase.into());
    status.conditions = Some(merge_conditions(
        old.conditions.as_deref().unwrap_or(&[]),
        conds,
        &stamp,
        pod.metadata.generation,
    ));
    status.container_statuses = Some(statuses);
    status.init_container_statuses = inits;
    status
}

#[cfg(test)]
#[path = "podstatus_tests.rs"]
mod tests;
