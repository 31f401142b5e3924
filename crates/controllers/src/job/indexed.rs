//! Indexed Jobs (upstream `indexed_job_utils.go`): the compressed interval form of
//! `status.completedIndexes` and `status.failedIndexes` (`"1,3-5,7"`), which indexes are
//! done, failed or still to run, the pods of repeated or out-of-range indexes, pod names
//! and the per-index failure counts of the backoff limit per index.
//!
//! An index is an `i64`: the completion index annotation of a pod (a non-negative
//! integer; anything else is "no index"). Two consecutive indexes print as `"3,4"`, three
//! or more as `"3-5"`, as upstream.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec,
};

use super::backoff::finished_time;
use super::pod_failure_policy::{match_pod_failure_policy, Action};
use super::spec::{
    self, has_tracking_finalizer, is_pod_failed, COMPLETION_INDEX_ENV_NAME,
    JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
};
use crate::controller_utils::pod::{is_pod_terminating, pod_phase};
use crate::controller_utils::ranking::sort_active_pods;

/// The longest `generateName` prefix the API server keeps whole (upstream
/// `names.MaxGeneratedNameLength`, 63 minus the 5 random characters).
pub const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// Indexes `first..=last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The first index.
    pub first: i64,
    /// The last index (inclusive).
    pub last: i64,
}

/// Sorted, non-overlapping intervals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderedIntervals(pub Vec<Interval>);

impl OrderedIntervals {
    /// Parse the compressed form, keeping indexes below `completions` (upstream
    /// `parseIndexesFromString`): pieces that do not parse are skipped, the first piece
    /// starting at or above `completions` ends the list, a last index beyond it is
    /// clamped, and adjacent pieces are merged.
    pub fn parse(s: &str, completions: i64) -> Self {
        let mut out: Vec<Interval> = Vec::new();
        if s.is_empty() {
            return OrderedIntervals(out);
        }
        for piece in s.split(',') {
            let mut limits = piece.split('-');
            let Ok(first) = limits.next().unwrap_or("").parse::<i64>() else {
                tracing::debug!(interval = piece, "corrupted indexes interval, ignoring");
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                Some(l) => match l.parse::<i64>() {
                    Ok(l) => l.min(completions - 1),
                    Err(_) => {
                        tracing::debug!(interval = piece, "corrupted indexes interval, ignoring");
                        continue;
                    }
                },
                None => first,
            };
            match out.last_mut() {
                Some(prev) if prev.last == first - 1 => prev.last = last,
                _ => out.push(Interval { first, last }),
            }
        }
        OrderedIntervals(out)
    }

    /// These intervals with `new` (sorted, ascending) added.
    pub fn with_ordered_indexes(&self, new: &[i64]) -> Self {
        let singles = OrderedIntervals(
            new.iter()
                .map(|&ix| Interval {
                    first: ix,
                    last: ix,
                })
                .collect(),
        );
        self.merge(&singles)
    }

    /// The union of two ordered lists, adjacent intervals coalesced.
    pub fn merge(&self, other: &Self) -> Self {
        let mut out: Vec<Interval> = Vec::with_capacity(self.0.len() + other.0.len());
        let mut push = |iv: Interval| match out.last_mut() {
            Some(last) if iv.first <= last.last.saturating_add(1) => {
                last.last = last.last.max(iv.last);
            }
            _ => out.push(iv),
        };
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            if self.0[i].first < other.0[j].first {
                push(self.0[i]);
                i += 1;
            } else {
                push(other.0[j]);
                j += 1;
            }
        }
        self.0[i..]
            .iter()
            .chain(&other.0[j..])
            .for_each(|iv| push(*iv));
        OrderedIntervals(out)
    }

    /// How many indexes the intervals hold.
    pub fn total(&self) -> i64 {
        self.0
            .iter()
            .map(|iv| (iv.last - iv.first + 1).max(0))
            .sum()
    }

    /// Whether `ix` is in one of the intervals.
    pub fn has(&self, ix: i64) -> bool {
        let pos = self.0.partition_point(|iv| iv.last < ix);
        self.0.get(pos).is_some_and(|iv| iv.first <= ix)
    }

    /// Whether there is no interval.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for OrderedIntervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, iv) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", iv.first)?;
            if iv.last > iv.first {
                let sep = if iv.last == iv.first + 1 { "," } else { "-" };
                write!(f, "{sep}{}", iv.last)?;
            }
        }
        Ok(())
    }
}

/// The completion index of a pod from its annotations (`None` when missing, not an
/// integer or negative).
pub fn completion_index(pod: &Pod) -> Option<i64> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(JOB_COMPLETION_INDEX_ANNOTATION)?
        .parse::<i64>()
        .ok()
        .filter(|i| *i >= 0)
}

/// The index of `pod` when it is valid for a Job of `completions` indexes.
pub fn valid_index(pod: &Pod, completions: i64) -> Option<i64> {
    completion_index(pod).filter(|ix| *ix < completions)
}

/// The sort key that puts pods without an index first (upstream
/// `byCompletionIndex`).
pub fn index_order(pod: &Pod) -> i64 {
    completion_index(pod).unwrap_or(-1)
}

fn parse_int32(value: &str) -> i32 {
    match value.parse::<i64>() {
        Ok(v) if (0..=i64::from(i32::MAX)).contains(&v) => v as i32,
        _ => {
            tracing::debug!(value, "invalid index failure count, using 0");
            0
        }
    }
}

fn annotation_count(pod: &Pod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map_or(0, |v| parse_int32(v))
}

/// The failures of the pod's index before it (0 when missing or invalid).
pub fn index_failure_count(pod: &Pod) -> i32 {
    annotation_count(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION)
}

/// Failures and ignored failures of the pod's index before it.
pub fn absolute_failure_count(pod: &Pod) -> i32 {
    index_failure_count(pod).saturating_add(annotation_count(
        pod,
        JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    ))
}

/// The failure counts of the pod that replaces `replaced` (upstream
/// `getNewIndexFailureCounts`): its counts plus its own failure, as ignored when a pod
/// failure policy rule says so.
pub fn new_index_failure_counts(job: &Job, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(pod) = replaced else {
        return (0, 0);
    };
    let mut count = index_failure_count(pod);
    let mut ignored = annotation_count(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION);
    let policy = spec::spec(job).pod_failure_policy.as_ref();
    if policy.is_none() || match_pod_failure_policy(policy, pod).count_failed {
        count = count.saturating_add(1);
    } else {
        ignored = ignored.saturating_add(1);
    }
    (count, ignored)
}

/// Whether the failed `pod` fails its index (upstream `isIndexFailed`): a `FailIndex`
/// rule matched, or a counted failure reached the backoff limit per index.
pub fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    if !is_pod_failed(pod, job) {
        return false;
    }
    let counted = match &spec::spec(job).pod_failure_policy {
        Some(policy) => {
            let m = match_pod_failure_policy(Some(policy), pod);
            if m.action == Some(Action::FailIndex) {
                return true;
            }
            m.count_failed
        }
        None => true,
    };
    counted && index_failure_count(pod) >= spec::backoff_limit_per_index(job).unwrap_or(0)
}

/// The completed indexes of `status.completedIndexes`, and those plus the indexes of
/// succeeded pods not yet counted (upstream `calculateSucceededIndexes`).
pub fn calculate_succeeded_indexes(
    job: &Job,
    pods: &[Arc<Pod>],
) -> (OrderedIntervals, OrderedIntervals) {
    let completions = i64::from(spec::completions(job).unwrap_or(0));
    let prev = OrderedIntervals::parse(
        job.status
            .as_ref()
            .and_then(|s| s.completed_indexes.as_deref())
            .unwrap_or(""),
        completions,
    );
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| pod_phase(p) == "Succeeded" && has_tracking_finalizer(p))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    let all = prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>());
    (prev, all)
}

/// The failed indexes of `status.failedIndexes` plus those failed since (upstream
/// `calculateFailedIndexes`).
pub fn calculate_failed_indexes(job: &Job, pods: &[Arc<Pod>]) -> OrderedIntervals {
    let completions = i64::from(spec::completions(job).unwrap_or(0));
    let prev = job
        .status
        .as_ref()
        .and_then(|s| s.failed_indexes.as_deref())
        .map(|s| OrderedIntervals::parse(s, completions))
        .unwrap_or_default();
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| has_tracking_finalizer(p) && is_index_failed(job, p))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>())
}

/// The distinct indexes of `pods`, ascending.
pub fn indexes_of<'a>(pods: impl IntoIterator<Item = &'a Arc<Pod>>) -> Vec<i64> {
    let set: BTreeSet<i64> = pods
        .into_iter()
        .filter_map(|p| completion_index(p))
        .collect();
    set.into_iter().collect()
}

/// What the pending indexes are computed from.
pub struct IndexState<'a> {
    /// The Job.
    pub job: &'a Job,
    /// Its pods.
    pub pods: &'a [Arc<Pod>],
    /// Its active pods.
    pub active: &'a [Arc<Pod>],
    /// Succeeded indexes.
    pub succeeded: &'a OrderedIntervals,
    /// Failed indexes (with a backoff limit per index).
    pub failed: Option<&'a OrderedIntervals>,
}

/// The first `count` indexes below `completions` that have no active pod and did not
/// succeed or fail; with `podReplacementPolicy: Failed` an index whose pod is still
/// terminating is not pending either (upstream `firstPendingIndexes`).
pub fn first_pending_indexes(st: &IndexState<'_>, count: usize, completions: i64) -> Vec<i64> {
    if count == 0 {
        return Vec::new();
    }
    let mut non_pending = st.succeeded.with_ordered_indexes(&indexes_of(st.active));
    if spec::only_replace_failed_pods(st.job) {
        let terminating = indexes_of(st.pods.iter().filter(|p| is_pod_terminating(p)));
        non_pending = non_pending.with_ordered_indexes(&terminating);
    }
    if let Some(failed) = st.failed {
        non_pending = non_pending.merge(failed);
    }
    let mut out = Vec::with_capacity(count);
    let mut candidate = 0i64;
    for iv in &non_pending.0 {
        while candidate < completions && out.len() < count && candidate < iv.first {
            out.push(candidate);
            candidate += 1;
        }
        if candidate < iv.last + 1 {
            candidate = iv.last + 1;
        }
    }
    while candidate < completions && out.len() < count {
        out.push(candidate);
        candidate += 1;
    }
    out
}

/// Split active `pods` into those to remove and those left (upstream
/// `appendDuplicatedIndexPodsForRemoval`): pods without an index or with an index at or
/// above `completions` are removed, and of several pods of one index all but the one
/// most worth keeping (last in `ActivePods` order).
pub fn duplicated_index_pods_for_removal(
    pods: &[Arc<Pod>],
    completions: i64,
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut sorted = pods.to_vec();
    sorted.sort_by_key(|p| index_order(p));
    let (mut rm, mut left) = (Vec::new(), Vec::new());
    let mut groups: BTreeMap<i64, Vec<Arc<Pod>>> = BTreeMap::new();
    let mut out_of_range = Vec::new();
    for p in sorted {
        let ix = index_order(&p);
        if ix >= completions {
            out_of_range.push(p);
        } else {
            groups.entry(ix).or_default().push(p);
        }
    }
    // as upstream, the pods out of range come before those of the last group in range
    let last = groups.pop_last();
    let mut split = |ix: i64, mut group: Vec<Arc<Pod>>, rm: &mut Vec<Arc<Pod>>| {
        if ix < 0 {
            rm.extend(group);
        } else if group.len() == 1 {
            left.extend(group);
        } else {
            sort_active_pods(&mut group);
            let keep = group.pop();
            rm.extend(group);
            left.extend(keep);
        }
    };
    for (ix, group) in groups {
        split(ix, group, &mut rm);
    }
    rm.extend(out_of_range);
    if let Some((ix, group)) = last {
        split(ix, group, &mut rm);
    }
    (rm, left)
}

/// Per index, the failed pod whose finalizer removal waits for its replacement, so the
/// replacement can carry the index's failure count (upstream
/// `getPodsWithDelayedDeletionPerIndex`): only indexes that are neither succeeded,
/// failed nor active; of several failed pods the one with the most failures, finished
/// last.
pub fn pods_with_delayed_deletion_per_index(
    st: &IndexState<'_>,
    expected_rm_finalizers: &HashSet<String>,
) -> BTreeMap<i64, Arc<Pod>> {
    let completions = i64::from(spec::completions(st.job).unwrap_or(0));
    let active: BTreeSet<i64> = indexes_of(st.active).into_iter().collect();
    let empty = OrderedIntervals::default();
    let failed = st.failed.unwrap_or(&empty);
    let mut out: BTreeMap<i64, Arc<Pod>> = BTreeMap::new();
    for p in st.pods {
        if !has_tracking_finalizer(p)
            || expected_rm_finalizers.contains(spec::uid(p))
            || !is_pod_failed(p, st.job)
        {
            continue;
        }
        let Some(ix) = valid_index(p, completions) else {
            continue;
        };
        if st.succeeded.has(ix) || failed.has(ix) || active.contains(&ix) {
            continue;
        }
        match out.get(&ix) {
            Some(kept)
                if !(absolute_failure_count(kept) <= absolute_failure_count(p)
                    && finished_time(p) >= finished_time(kept)) => {}
            _ => {
                out.insert(ix, p.clone());
            }
        }
    }
    out
}

/// The `generateName` of the pod of index `index` (upstream `podGenerateNameWithIndex`):
/// `<job>-<index>-`, the Job name cut so the prefix stays within
/// [`MAX_GENERATED_NAME_LENGTH`].
pub fn pod_generate_name_with_index(job_name: &str, index: i64) -> String {
    let suffix = format!("-{index}-");
    let whole = format!("{job_name}{suffix}");
    if whole.len() <= MAX_GENERATED_NAME_LENGTH {
        return whole;
    }
    let keep = MAX_GENERATED_NAME_LENGTH.saturating_sub(suffix.len());
    let mut cut = keep.min(job_name.len());
    while !job_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &job_name[..cut])
}

fn add_index_env(container: &mut Container) {
    let env = container.env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV_NAME) {
        return;
    }
    env.push(EnvVar {
        name: COMPLETION_INDEX_ENV_NAME.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.labels['{JOB_COMPLETION_INDEX_ANNOTATION}']"),
            }),
            ..Default::default()
        }),
    });
}

/// Give every container and init container of `template` the `JOB_COMPLETION_INDEX`
/// variable (from the index label), unless it has one.
pub fn add_completion_index_env(template: &mut PodTemplateSpec) {
    if let Some(spec) = template.spec.as_mut() {
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(add_index_env);
        spec.containers.iter_mut().for_each(add_index_env);
    }
}

/// Make `template` the template of index `index` of the Job `job_name`: the index
/// annotation and label, and the hostname `<job>-<index>`.
pub fn set_completion_index(template: &mut PodTemplateSpec, job_name: &str, index: i64) {
    let meta = template.metadata.get_or_insert_with(Default::default);
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(
            JOB_COMPLETION_INDEX_ANNOTATION.to_string(),
            index.to_string(),
        );
    meta.labels.get_or_insert_with(Default::default).insert(
        JOB_COMPLETION_INDEX_ANNOTATION.to_string(),
        index.to_string(),
    );
    template.spec.get_or_insert_with(Default::default).hostname =
        Some(format!("{job_name}-{index}"));
}

/// Set the failure-count annotations of the pod replacing `replaced` (upstream
/// `addIndexFailureCountAnnotation`): the count always, the ignored count when not 0.
pub fn set_index_failure_counts(template: &mut PodTemplateSpec, job: &Job, replaced: Option<&Pod>) {
    let (count, ignored) = new_index_failure_counts(job, replaced);
    let ann = template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default);
    ann.insert(
        JOB_INDEX_FAILURE_COUNT_ANNOTATION.to_string(),
        count.to_string(),
    );
    if ignored > 0 {
        ann.insert(
            JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.to_string(),
            ignored.to_string(),
        );
    }
}

#[cfg(test)]
#[path = "indexed_tests.rs"]
mod tests;
