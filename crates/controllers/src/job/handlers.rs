//! Which Jobs and orphan pods a change wakes, and when (upstream `addJob`, `updateJob`,
//! `deleteJob`, `addPod`, `updatePod`, `deletePod`).
//!
//! Job creations, deletions and spec changes sync at once; status changes and pod
//! changes wait [`SYNC_JOB_BATCH_PERIOD`] so a burst syncs once. A changed
//! `activeDeadlineSeconds` schedules a sync at the new deadline. Pod changes keep the
//! expectations: a new pod observes a creation, a deleted (or deleting) pod a deletion,
//! a pod without the finalizer its removal. Pods that carry the tracking finalizer but
//! no longer belong to an unfinished Job go to the orphan queue, which removes the
//! finalizer ([`super::orphan`]); a finished or deleted Job sends its whole selector
//! there.
//!
//! Each handler computes a list of [`Enqueue`] actions (tested as such) and applies it.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::handler::{EventHandler, Requests};
use coxswain_runtime::workqueue::RateLimitedQueue;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::backoff::BackoffStore;
use super::conditions::is_job_finished;
use super::orphan::OrphanPodKey;
use super::spec::{self, has_tracking_finalizer};
use super::sync::{FinishedJobs, JobState, SYNC_JOB_BATCH_PERIOD};
use crate::controller_utils::pod_key;

/// What a change asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enqueue {
    /// Sync the Job at once.
    Now(ObjectKey),
    /// Sync the Job after a delay.
    After(ObjectKey, Duration),
    /// Look at an orphan pod, or at every pod of a selector.
    Orphan(OrphanPodKey),
}

fn batched(key: ObjectKey) -> Enqueue {
    Enqueue::After(key, SYNC_JOB_BATCH_PERIOD)
}

/// Where the handlers look Jobs up: the informer's store (a map in tests).
pub trait Jobs: Send + Sync {
    /// The Job at `key`.
    fn get(&self, key: &ObjectKey) -> Option<Arc<Job>>;
    /// The Jobs of `namespace`.
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Job>>;
}

impl Jobs for Store<Job> {
    fn get(&self, key: &ObjectKey) -> Option<Arc<Job>> {
        Store::get(self, key)
    }

    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Job>> {
        self.list_namespace(namespace)
    }
}

/// The Job a controller reference points to, if it is a Job in the store with the same
/// UID (upstream `resolveControllerRef`).
pub fn resolve(jobs: &dyn Jobs, namespace: Option<&str>, r: &OwnerReference) -> Option<Arc<Job>> {
    if r.kind != "Job" {
        return None;
    }
    let job = jobs.get(&ObjectKey::from_parts(namespace, &r.name))?;
    (job.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(job)
}

/// The orphan-queue request that sweeps the pods of `job`'s selector.
pub fn selector_key(job: &Job) -> Option<OrphanPodKey> {
    let selector = match &spec::spec(job).selector {
        Some(s) => match LabelSelector::from_meta(s) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(job = %ObjectKey::of(job), error = %e, "job has an invalid label selector");
                return None;
            }
        },
        None => LabelSelector::nothing(),
    };
    Some(OrphanPodKey::Selector {
        namespace: job.metadata.namespace.clone().unwrap_or_default(),
        selector: selector.to_string(),
    })
}

/// The Jobs whose selector matches an orphan `pod` (upstream `GetPodJobs`: a pod
/// without labels or a Job without selector matches nothing).
fn matching_jobs(jobs: &dyn Jobs, pod: &Pod) -> Vec<ObjectKey> {
    let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
        return Vec::new();
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let keys: Vec<ObjectKey> = jobs
        .in_namespace(namespace)
        .into_iter()
        .filter(|j| {
            spec::spec(j)
                .selector
                .as_ref()
                .and_then(|s| LabelSelector::from_meta(s).ok())
                .is_some_and(|s| s.matches_labels(labels))
        })
        .map(|j| ObjectKey::of(j.as_ref()))
        .collect();
    if keys.len() > 1 {
        tracing::warn!(pod = %pod_key(pod), "user error: more than one job is selecting pods with the labels of this pod");
    }
    keys
}

/// Job changes.
pub struct JobHandler {
    finished: Arc<FinishedJobs>,
    backoff: Arc<BackoffStore>,
    orphans: RateLimitedQueue<OrphanPodKey>,
}

impl JobHandler {
    /// Job changes for a controller with `state`, sweeping orphans into `orphans`.
    pub fn new(state: &JobState, orphans: RateLimitedQueue<OrphanPodKey>) -> Self {
        JobHandler {
            finished: state.finished.clone(),
            backoff: state.backoff.clone(),
            orphans,
        }
    }

    /// What `change` asks for at `now`.
    pub fn actions(&self, change: &Change<Job>, now: Timestamp) -> Vec<Enqueue> {
        match change {
            Change::Added(job) => vec![Enqueue::Now(ObjectKey::of(job.as_ref()))],
            Change::Updated { old, new } => update_actions(old, new, now),
            Change::Deleted(job) => {
                let key = ObjectKey::of(job.as_ref());
                self.finished
                    .remove(job.metadata.uid.as_deref().unwrap_or(""));
                self.backoff.remove(&key);
                let mut out = vec![Enqueue::Now(key)];
                out.extend(selector_key(job).map(Enqueue::Orphan));
                out
            }
        }
    }
}

/// What a Job update asks for (upstream `updateJob`).
pub fn update_actions(old: &Job, new: &Job, now: Timestamp) -> Vec<Enqueue> {
    let key = ObjectKey::of(new);
    if is_job_finished(new) {
        // finished Jobs are not synced; their pods' finalizers are swept as a backup
        return selector_key(new).map(Enqueue::Orphan).into_iter().collect();
    }
    let mut out = vec![if new.metadata.generation == old.metadata.generation {
        batched(key.clone())
    } else {
        Enqueue::Now(key.clone())
    }];
    let start = new.status.as_ref().and_then(|s| s.start_time.as_ref());
    let (old_ads, new_ads) = (
        spec::spec(old).active_deadline_seconds,
        spec::spec(new).active_deadline_seconds,
    );
    if let (Some(start), Some(ads)) = (start, new_ads) {
        if old_ads != Some(ads) {
            let left = SignedDuration::from_secs(ads).saturating_sub(now.duration_since(start.0));
            out.push(Enqueue::After(
                key,
                Duration::try_from(left).unwrap_or(Duration::ZERO),
            ));
        }
    }
    out
}

impl EventHandler<Job> for JobHandler {
    fn handle(&self, change: &Change<Job>, queue: &Requests<'_, ObjectKey>) {
        apply(self.actions(change, Timestamp::now()), queue, &self.orphans);
    }
}

fn apply(
    actions: Vec<Enqueue>,
    queue: &Requests<'_, ObjectKey>,
    orphans: &RateLimitedQueue<OrphanPodKey>,
) {
    for a in actions {
        match a {
            Enqueue::Now(k) => queue.add(k),
            Enqueue::After(k, d) => queue.add_after(k, d),
            Enqueue::Orphan(k) => orphans.add(k),
        }
    }
}

/// Pod changes.
pub struct PodHandler {
    state: JobState,
    jobs: Arc<dyn Jobs>,
    orphans: RateLimitedQueue<OrphanPodKey>,
}

fn orphan_name(pod: &Pod) -> Enqueue {
    Enqueue::Orphan(OrphanPodKey::Name {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
    })
}

impl PodHandler {
    /// Pod changes for a controller with `state`, looking Jobs up in `jobs`.
    pub fn new(
        state: &JobState,
        jobs: Arc<dyn Jobs>,
        orphans: RateLimitedQueue<OrphanPodKey>,
    ) -> Self {
        PodHandler {
            state: state.clone(),
            jobs,
            orphans,
        }
    }

    /// What `change` asks for (and the expectations it observes).
    pub fn actions(&self, change: &Change<Pod>) -> Vec<Enqueue> {
        match change {
            Change::Added(p) => self.added(p),
            Change::Updated { old, new } => self.updated(old, new),
            Change::Deleted(p) => self.deleted(p, true),
        }
    }

    fn resolve(&self, pod: &Pod, r: &OwnerReference) -> Option<ObjectKey> {
        resolve(self.jobs.as_ref(), pod.metadata.namespace.as_deref(), r)
            .map(|j| ObjectKey::of(j.as_ref()))
    }

    fn added(&self, pod: &Pod) -> Vec<Enqueue> {
        if pod.metadata.deletion_timestamp.is_some() {
            // a restarted controller may first see a pod being deleted: not a creation
            return self.deleted(pod, false);
        }
        if let Some(r) = get_controller_of(&pod.metadata) {
            return match self.resolve(pod, r) {
                Some(key) => {
                    self.state.expectations.creation_observed(&key);
                    vec![batched(key)]
                }
                None => self.gone_job_orphan(pod, r),
            };
        }
        let mut out = Vec::new();
        if has_tracking_finalizer(pod) {
            out.push(orphan_name(pod));
        }
        // wake the Jobs that may adopt it; observe nothing
        out.extend(
            matching_jobs(self.jobs.as_ref(), pod)
                .into_iter()
                .map(batched),
        );
        out
    }

    fn updated(&self, old: &Pod, new: &Pod) -> Vec<Enqueue> {
        if old.metadata.resource_version == new.metadata.resource_version {
            return Vec::new();
        }
        if new.metadata.deletion_timestamp.is_some() {
            return self.deleted(new, false);
        }
        let uid = new.metadata.uid.as_deref().unwrap_or("");
        let finalizer_removed = !has_tracking_finalizer(new);
        let (old_ref, new_ref) = (
            get_controller_of(&old.metadata),
            get_controller_of(&new.metadata),
        );
        let ref_changed = old_ref != new_ref;
        let mut out = Vec::new();
        if ref_changed {
            if let Some(key) = old_ref.and_then(|r| self.resolve(old, r)) {
                if finalizer_removed {
                    self.state
                        .finalizer_expectations
                        .finalizer_removal_observed(&key, uid);
                }
                out.push(batched(key));
            }
        }
        if let Some(r) = new_ref {
            match self.resolve(new, r) {
                Some(key) => {
                    if finalizer_removed {
                        self.state
                            .finalizer_expectations
                            .finalizer_removal_observed(&key, uid);
                    }
                    out.push(batched(key));
                }
                None => out.extend(self.gone_job_orphan(new, r)),
            }
            return out;
        }
        if has_tracking_finalizer(new) {
            out.push(orphan_name(new));
        }
        if ref_changed || old.metadata.labels != new.metadata.labels {
            out.extend(
                matching_jobs(self.jobs.as_ref(), new)
                    .into_iter()
                    .map(batched),
            );
        }
        out
    }

    /// A pod with the tracking finalizer whose controller is a Job this controller does
    /// not know (not upstream, whose `addPod`/`updatePod` drop it): the Job was deleted
    /// before this controller's pod informer saw the pod (a lagging watch, a restart), so
    /// the sweep of the Job's deletion missed it and nothing else would remove the
    /// finalizer. The orphan queue checks with the API server before removing it.
    fn gone_job_orphan(&self, pod: &Pod, r: &OwnerReference) -> Vec<Enqueue> {
        if r.kind == "Job" && r.api_version == "batch/v1" && has_tracking_finalizer(pod) {
            vec![orphan_name(pod)]
        } else {
            Vec::new()
        }
    }

    fn deleted(&self, pod: &Pod, is_final: bool) -> Vec<Enqueue> {
        let has_finalizer = has_tracking_finalizer(pod);
        let Some(r) = get_controller_of(&pod.metadata) else {
            // the garbage collector may have removed the reference of a Job's pod
            return if has_finalizer {
                vec![orphan_name(pod)]
            } else {
                Vec::new()
            };
        };
        let job = resolve(self.jobs.as_ref(), pod.metadata.namespace.as_deref(), r);
        let Some(job) = job.filter(|j| !is_job_finished(j)) else {
            // syncJob will not remove this finalizer
            return if has_finalizer {
                vec![orphan_name(pod)]
            } else {
                Vec::new()
            };
        };
        let key = ObjectKey::of(job.as_ref());
        self.state
            .expectations
            .deletion_observed(&key, &pod_key(pod));
        if is_final || !has_finalizer {
            self.state
                .finalizer_expectations
                .finalizer_removal_observed(&key, pod.metadata.uid.as_deref().unwrap_or(""));
        }
        vec![batched(key)]
    }
}

impl EventHandler<Pod> for PodHandler {
    fn handle(&self, change: &Change<Pod>, queue: &Requests<'_, ObjectKey>) {
        apply(self.actions(change), queue, &self.orphans);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::testutil::{t0, J, P};
    use std::collections::{BTreeMap, HashMap};

    #[derive(Default)]
    struct Map(HashMap<ObjectKey, Arc<Job>>);

    impl Jobs for Map {
        fn get(&self, key: &ObjectKey) -> Option<Arc<Job>> {
            self.0.get(key).cloned()
        }
        fn in_namespace(&self, namespace: &str) -> Vec<Arc<Job>> {
            let mut v: Vec<_> = self
                .0
                .values()
                .filter(|j| j.metadata.namespace.as_deref() == Some(namespace))
                .cloned()
                .collect();
            v.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            v
        }
    }

    fn job(name: &str, uid: &str, labels: &[(&str, &str)]) -> Arc<Job> {
        let mut j = J::new(name, 1, Some(1)).build();
        j.metadata.uid = Some(uid.into());
        if let Some(s) = j.spec.as_mut() {
            s.selector = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(
                        labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                    ),
                    match_expressions: None,
                },
            );
        }
        Arc::new(j)
    }

    fn handler(jobs: &[Arc<Job>]) -> (PodHandler, JobState) {
        let state = JobState::default();
        let map = Map(jobs
            .iter()
            .map(|j| (ObjectKey::of(j.as_ref()), j.clone()))
            .collect());
        (
            PodHandler::new(&state, Arc::new(map), RateLimitedQueue::new()),
            state,
        )
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::namespaced("default", name)
    }

    fn labelled(p: P, l: &[(&str, &str)]) -> P {
        let mut p = p;
        p.0.metadata.labels = Some(
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
        p
    }

    // After upstream TestAddPod, TestAddPodOrphan, TestUpdatePod, TestDeletePod and
    // TestDeletePodOrphan (job_controller_test.go).
    #[test]
    fn pod_events_wake_the_owner_or_matching_jobs() {
        let j1 = job("foobar1", "uid1", &[("foo", "bar")]);
        let j2 = job("foobar2", "uid2", &[("foo", "bar")]);
        let j3 = job("other", "uid3", &[("foo", "baz")]);
        let (h, state) = handler(&[j1.clone(), j2.clone(), j3.clone()]);
        state.expectations.expect_creations(&key("foobar1"), 1);
        let owned = P::new("p1").owned_by(&j1).finalizer().arc();
        assert_eq!(
            h.actions(&Change::Added(owned.clone())),
            vec![batched(key("foobar1"))]
        );
        assert!(
            state.expectations.satisfied(&key("foobar1")),
            "creation observed"
        );
        // an orphan wakes every job whose selector matches, observes nothing
        let orphan = labelled(P::new("o"), &[("foo", "bar")]).arc();
        assert_eq!(
            h.actions(&Change::Added(orphan.clone())),
            vec![batched(key("foobar1")), batched(key("foobar2"))]
        );
        // deleting an orphan wakes nobody
        assert!(h.actions(&Change::Deleted(orphan)).is_empty());
        // an orphan with the finalizer also goes to the orphan queue
        let tracked = labelled(P::new("t"), &[("foo", "baz")]).finalizer().arc();
        assert_eq!(
            h.actions(&Change::Added(tracked)),
            vec![
                Enqueue::Orphan(OrphanPodKey::Name {
                    namespace: "default".into(),
                    name: "t".into()
                }),
                batched(key("other"))
            ]
        );
        // a pod of a job of the same name but another uid is not that job's
        let mut stranger = P::new("s").owned_by(&j1);
        if let Some(r) = stranger
            .0
            .metadata
            .owner_references
            .as_mut()
            .and_then(|r| r.first_mut())
        {
            r.uid = "someone-else".into();
        }
        assert!(h.actions(&Change::Added(stranger.arc())).is_empty());
    }

    // After upstream TestUpdatePodChangeControllerRef, TestUpdatePodRelease and
    // TestUpdatePodOrphanWithNewLabels.
    #[test]
    fn pod_updates_wake_old_and_new_owners() {
        let j1 = job("foobar1", "uid1", &[("foo", "bar")]);
        let j2 = job("foobar2", "uid2", &[("foo", "bar")]);
        let (h, state) = handler(&[j1.clone(), j2.clone()]);
        let mut old = P::new("p").owned_by(&j1).finalizer();
        old.0.metadata.resource_version = Some("1".into());
        let old = old.arc();
        // same resourceVersion: a resync
        assert!(h
            .actions(&Change::Updated {
                old: old.clone(),
                new: old.clone()
            })
            .is_empty());
        let mut moved = P::new("p").owned_by(&j2);
        moved.0.metadata.resource_version = Some("2".into());
        // the finalizer is gone: both jobs observe its removal
        state
            .finalizer_expectations
            .expect_finalizers_removed(&key("foobar1"), ["p"]);
        state
            .finalizer_expectations
            .expect_finalizers_removed(&key("foobar2"), ["p"]);
        assert_eq!(
            h.actions(&Change::Updated {
                old: old.clone(),
                new: moved.arc()
            }),
            vec![batched(key("foobar1")), batched(key("foobar2"))]
        );
        assert!(state
            .finalizer_expectations
            .expected_uids(&key("foobar1"))
            .is_empty());
        assert!(state
            .finalizer_expectations
            .expected_uids(&key("foobar2"))
            .is_empty());
        // released: the old owner and every matching job wake
        let mut released = labelled(P::new("p"), &[("foo", "bar")]);
        released.0.metadata.resource_version = Some("3".into());
        assert_eq!(
            h.actions(&Change::Updated {
                old: old.clone(),
                new: released.arc()
            }),
            vec![
                batched(key("foobar1")),
                batched(key("foobar1")),
                batched(key("foobar2"))
            ]
        );
        // an orphan whose labels changed wakes the jobs it now matches
        let mut o1 = labelled(P::new("o"), &[("x", "y")]);
        o1.0.metadata.resource_version = Some("1".into());
        let mut o2 = labelled(P::new("o"), &[("foo", "bar")]);
        o2.0.metadata.resource_version = Some("2".into());
        assert_eq!(
            h.actions(&Change::Updated {
                old: o1.arc(),
                new: o2.arc()
            }),
            vec![batched(key("foobar1")), batched(key("foobar2"))]
        );
    }

    #[test]
    fn pod_deletions_observe_deletions_and_finalizer_removals() {
        let j = job("foobar", "uid1", &[("foo", "bar")]);
        let (h, state) = handler(std::slice::from_ref(&j));
        let pod = P::new("p").owned_by(&j).finalizer();
        state
            .expectations
            .expect_deletions(&key("foobar"), [pod_key(&pod.0)]);
        state
            .finalizer_expectations
            .expect_finalizers_removed(&key("foobar"), ["p"]);
        let mut deleting = pod.clone().deleting(t0());
        deleting.0.metadata.resource_version = Some("2".into());
        let mut before = pod.clone();
        before.0.metadata.resource_version = Some("1".into());
        assert_eq!(
            h.actions(&Change::Updated {
                old: before.arc(),
                new: deleting.clone().arc()
            }),
            vec![batched(key("foobar"))]
        );
        assert!(state.expectations.satisfied(&key("foobar")));
        // the finalizer is still there: its removal is not observed until the final delete
        assert_eq!(
            state
                .finalizer_expectations
                .expected_uids(&key("foobar"))
                .len(),
            1
        );
        h.actions(&Change::Deleted(deleting.arc()));
        assert!(state
            .finalizer_expectations
            .expected_uids(&key("foobar"))
            .is_empty());
        // the pod of a finished job goes to the orphan queue instead
        let mut finished = (*j).clone();
        finished.status = Some(Default::default());
        if let Some(s) = finished.status.as_mut() {
            s.conditions = Some(vec![crate::job::conditions::new_condition(
                "Complete",
                "True",
                "",
                "",
                t0(),
            )]);
        }
        let (h, _) = handler(&[Arc::new(finished)]);
        assert_eq!(
            h.actions(&Change::Deleted(pod.arc())),
            vec![Enqueue::Orphan(OrphanPodKey::Name {
                namespace: "default".into(),
                name: "p".into()
            })]
        );
    }

    // After upstream TestUpdateJobRequeue and the activeDeadlineSeconds resync of
    // updateJob.
    #[test]
    fn job_updates() {
        let old = J::new("foo", 1, Some(1)).start_time(t0()).build();
        let mut status_only = old.clone();
        if let Some(s) = status_only.status.as_mut() {
            s.active = Some(1);
        }
        assert_eq!(
            update_actions(&old, &status_only, t0()),
            vec![batched(key("foo"))]
        );
        let mut spec_change = old.clone();
        spec_change.metadata.generation = Some(2);
        assert_eq!(
            update_actions(&old, &spec_change, t0()),
            vec![Enqueue::Now(key("foo"))]
        );
        let with_ads = J::new("foo", 1, Some(1))
            .start_time(t0())
            .deadline(10)
            .build();
        assert_eq!(
            update_actions(&old, &with_ads, crate::job::testutil::at(4)),
            vec![
                batched(key("foo")),
                Enqueue::After(key("foo"), Duration::from_secs(6))
            ]
        );
        // a finished job sweeps its selector's pods instead of syncing
        let done = J::new("foo", 1, Some(1))
            .condition("Failed", "True", "", "")
            .build();
        let got = update_actions(&old, &done, t0());
        assert!(
            matches!(
                got.as_slice(),
                [Enqueue::Orphan(OrphanPodKey::Selector { .. })]
            ),
            "{got:?}"
        );
    }
}
