//! Upstream's tables of `indexed_job_utils_test.go`, one test per upstream test.

#![allow(clippy::type_complexity)]

use super::*;
use crate::job::testutil::{at, cond_rule, exit_rule, names, t0, J, P};

fn iv(pairs: &[(i64, i64)]) -> OrderedIntervals {
    OrderedIntervals(
        pairs
            .iter()
            .map(|&(first, last)| Interval { first, last })
            .collect(),
    )
}

/// A pod with index `ix` ("" for none), `phase` and the tracking finalizer.
fn ipod(name: &str, ix: &str, phase: &str) -> Arc<Pod> {
    let p = P::new(name).phase(phase).finalizer();
    if ix.is_empty() { p } else { p.index(ix) }.arc()
}

#[test]
fn intervals_print_as_upstream() {
    assert_eq!(iv(&[(0, 1)]).to_string(), "0,1");
    assert_eq!(iv(&[(0, 2)]).to_string(), "0-2");
    assert_eq!(iv(&[(2, 2), (4, 5), (7, 9)]).to_string(), "2,4,5,7-9");
    assert_eq!(iv(&[(0, 4), (6, 6)]).to_string(), "0-4,6");
    assert_eq!(iv(&[(0, 1), (3, 3)]).to_string(), "0,1,3");
    assert_eq!(iv(&[]).to_string(), "");
    // parsing and printing round-trip, adjacent pieces merged
    let p = OrderedIntervals::parse("0,1,3-5,6,9", 10);
    assert_eq!(p, iv(&[(0, 1), (3, 6), (9, 9)]));
    assert_eq!(p.to_string(), "0,1,3-6,9");
    assert_eq!(p.total(), 7);
}

// Upstream TestCalculateSucceededIndexes.
#[test]
fn calculate_succeeded_indexes_table() {
    type Case = (
        &'static str,
        &'static str,
        Vec<(&'static str, &'static str)>,
        i32,
        Vec<(i64, i64)>,
        Vec<(i64, i64)>,
    );
    let cases: Vec<Case> = vec![
        (
            "one index",
            "",
            vec![("1", "Succeeded")],
            2,
            vec![],
            vec![(1, 1)],
        ),
        (
            "two separate",
            "",
            vec![
                ("2", "Failed"),
                ("5", "Succeeded"),
                ("5", "Succeeded"),
                ("10", "Failed"),
                ("10", "Succeeded"),
            ],
            11,
            vec![],
            vec![(5, 5), (10, 10)],
        ),
        (
            "two intervals",
            "",
            vec![
                ("0", "Running"),
                ("1", "Pending"),
                ("2", "Succeeded"),
                ("3", "Succeeded"),
                ("5", "Succeeded"),
                ("6", "Succeeded"),
                ("7", "Succeeded"),
            ],
            8,
            vec![],
            vec![(2, 3), (5, 7)],
        ),
        (
            "one index and one interval",
            "",
            vec![
                ("0", "Succeeded"),
                ("1", "Failed"),
                ("2", "Succeeded"),
                ("3", "Succeeded"),
                ("4", "Succeeded"),
                ("5", "Succeeded"),
                ("", "Succeeded"),
                ("-2", "Succeeded"),
            ],
            6,
            vec![],
            vec![(0, 0), (2, 5)],
        ),
        (
            "out of range",
            "",
            vec![
                ("0", "Succeeded"),
                ("1", "Succeeded"),
                ("2", "Succeeded"),
                ("3", "Failed"),
                ("4", "Succeeded"),
                ("5", "Succeeded"),
                ("", "Succeeded"),
                ("-2", "Succeeded"),
            ],
            5,
            vec![],
            vec![(0, 2), (4, 4)],
        ),
        (
            "prev interval out of range",
            "0-5,8-10",
            vec![],
            8,
            vec![(0, 5)],
            vec![(0, 5)],
        ),
        (
            "prev interval partially out of range",
            "0-5,8-10",
            vec![],
            10,
            vec![(0, 5), (8, 9)],
            vec![(0, 5), (8, 9)],
        ),
        (
            "prev and new separate",
            "0,4,5,10-12",
            vec![("2", "Succeeded"), ("7", "Succeeded"), ("8", "Succeeded")],
            13,
            vec![(0, 0), (4, 5), (10, 12)],
            vec![(0, 0), (2, 2), (4, 5), (7, 8), (10, 12)],
        ),
        (
            "prev between new",
            "3,4,6",
            vec![("2", "Succeeded"), ("7", "Succeeded"), ("8", "Succeeded")],
            9,
            vec![(3, 4), (6, 6)],
            vec![(2, 4), (6, 8)],
        ),
        (
            "new between prev",
            "2,7,8",
            vec![("3", "Succeeded"), ("4", "Succeeded"), ("6", "Succeeded")],
            9,
            vec![(2, 2), (7, 8)],
            vec![(2, 4), (6, 8)],
        ),
        (
            "new within prev",
            "2-7",
            vec![
                ("0", "Succeeded"),
                ("3", "Succeeded"),
                ("5", "Succeeded"),
                ("9", "Succeeded"),
            ],
            10,
            vec![(2, 7)],
            vec![(0, 0), (2, 7), (9, 9)],
        ),
        (
            "corrupted interval",
            "0,1-foo,bar",
            vec![("3", "Succeeded")],
            4,
            vec![(0, 0)],
            vec![(0, 0), (3, 3)],
        ),
    ];
    for (name, prev, pods, completions, want_prev, want) in cases {
        let job = J::new("job", 1, Some(completions))
            .indexed()
            .completed_indexes(prev)
            .build();
        let pods: Vec<Arc<Pod>> = pods
            .iter()
            .enumerate()
            .map(|(i, (ix, phase))| ipod(&format!("p{i}"), ix, phase))
            .collect();
        let (got_prev, got) = calculate_succeeded_indexes(&job, &pods);
        assert_eq!(got_prev, iv(&want_prev), "{name}: prev");
        assert_eq!(got, iv(&want), "{name}");
    }
}

// Upstream TestIsIndexFailed: every case fails its index.
#[test]
fn is_index_failed_table() {
    let cases = [
        (
            "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=0",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("0")
                .finalizer()
                .arc(),
        ),
        (
            "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=1",
            J::new("j", 2, Some(2)).indexed().blpi(1).build(),
            P::new("a")
                .failure_count("1")
                .phase("Failed")
                .index("1")
                .finalizer()
                .arc(),
        ),
        (
            "matching FailIndex pod failure policy",
            J::new("j", 2, Some(2))
                .indexed()
                .blpi(1)
                .rules(vec![exit_rule("FailIndex", "In", &[3], None)])
                .build(),
            P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("0")
                .exit("main-container", 3, None)
                .finalizer()
                .arc(),
        ),
    ];
    for (name, job, pod) in cases {
        assert!(is_index_failed(&job, &pod), "{name}");
    }
}

// Upstream TestCalculateFailedIndexes.
#[test]
fn calculate_failed_indexes_table() {
    let cases: Vec<(&str, Job, Vec<Arc<Pod>>, Vec<(i64, i64)>)> = vec![
        (
            "one new index failed",
            J::new("j", 2, Some(2)).indexed().blpi(1).build(),
            vec![
                P::new("a")
                    .failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .finalizer()
                    .arc(),
                P::new("b")
                    .failure_count("1")
                    .phase("Failed")
                    .index("1")
                    .finalizer()
                    .arc(),
            ],
            vec![(1, 1)],
        ),
        (
            "pod without finalizer is ignored",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            vec![P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("0")
                .arc()],
            vec![],
        ),
        (
            "pod outside completions is ignored",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            vec![P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("3")
                .arc()],
            vec![],
        ),
        (
            "extend the failed indexes",
            J::new("j", 2, Some(2))
                .indexed()
                .blpi(0)
                .failed_indexes("0")
                .build(),
            vec![P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("1")
                .finalizer()
                .arc()],
            vec![(0, 1)],
        ),
        (
            "prev failed indexes empty",
            J::new("j", 2, Some(2))
                .indexed()
                .blpi(0)
                .failed_indexes("")
                .build(),
            vec![P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("1")
                .finalizer()
                .arc()],
            vec![(1, 1)],
        ),
        (
            "prev failed indexes outside the completions",
            J::new("j", 2, Some(2))
                .indexed()
                .blpi(0)
                .failed_indexes("9")
                .build(),
            vec![P::new("a")
                .failure_count("0")
                .phase("Failed")
                .index("1")
                .finalizer()
                .arc()],
            vec![(1, 1)],
        ),
    ];
    for (name, job, pods, want) in cases {
        assert_eq!(calculate_failed_indexes(&job, &pods), iv(&want), "{name}");
    }
}

// Upstream TestGetPodsWithDelayedDeletionPerIndex.
#[test]
fn pods_with_delayed_deletion_per_index_table() {
    let now = t0();
    let f = |name: &str, fc: &str, ix: &str| {
        P::new(name)
            .failure_count(fc)
            .phase("Failed")
            .index(ix)
            .finalizer()
    };
    let cases: Vec<(&str, Job, Vec<Arc<Pod>>, Vec<&str>, Vec<&str>)> = vec![
        (
            "failed pods corresponding to non-failed indexes are kept",
            J::new("j", 3, Some(3)).indexed().blpi(1).build(),
            vec![f("a", "0", "0").arc(), f("b", "1", "1").arc(), f("c", "0", "2").arc()],
            vec![],
            vec!["a", "c"],
        ),
        (
            "failed pod without finalizer; the pod's deletion is not delayed as it already started",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            vec![P::new("a").failure_count("0").phase("Failed").index("0").arc()],
            vec![],
            vec![],
        ),
        (
            "failed pod with expected finalizer removal; the pod's deletion is not delayed as it already started",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            vec![f("a", "0", "0").arc()],
            vec!["a"],
            vec![],
        ),
        (
            "failed pod with index outside of completions; the pod's deletion is not delayed",
            J::new("j", 2, Some(2)).indexed().blpi(0).build(),
            vec![f("a", "0", "4").arc()],
            vec![],
            vec![],
        ),
        (
            "failed pod for active index; the pod's deletion is not delayed as it is already replaced",
            J::new("j", 2, Some(2)).indexed().blpi(1).build(),
            vec![
                f("a1", "0", "0").arc(),
                P::new("a2").failure_count("1").phase("Running").index("0").finalizer().arc(),
            ],
            vec![],
            vec![],
        ),
        (
            "failed pod for succeeded index; the pod's deletion is not delayed as it is already replaced",
            J::new("j", 2, Some(2)).indexed().blpi(1).build(),
            vec![
                f("a1", "0", "0").arc(),
                P::new("a2").failure_count("1").phase("Succeeded").index("0").finalizer().arc(),
            ],
            vec![],
            vec![],
        ),
        (
            "multiple failed pods for index with different failure count; only the pod with highest failure count is kept",
            J::new("j", 2, Some(2)).indexed().blpi(4).build(),
            vec![f("a1", "0", "0").arc(), f("a3", "2", "0").arc(), f("a2", "1", "0").arc()],
            vec![],
            vec!["a3"],
        ),
        (
            "multiple failed pods for index with different finish times; only the last failed pod is kept",
            J::new("j", 2, Some(2)).indexed().blpi(4).build(),
            vec![
                f("a1", "1", "0").deleting(at(-1)).arc(),
                f("a3", "1", "0").deleting(now).arc(),
                f("a2", "1", "0").deleting(at(-2)).arc(),
            ],
            vec![],
            vec!["a3"],
        ),
    ];
    for (name, job, pods, expected_rm, want) in cases {
        let active: Vec<Arc<Pod>> = pods
            .iter()
            .filter(|p| crate::controller_utils::is_pod_active(p))
            .cloned()
            .collect();
        let (_, succeeded) = calculate_succeeded_indexes(&job, &pods);
        let failed = calculate_failed_indexes(&job, &pods);
        let st = IndexState {
            job: &job,
            pods: &pods,
            active: &active,
            succeeded: &succeeded,
            failed: Some(&failed),
        };
        let rm: HashSet<String> = expected_rm.iter().map(|s| s.to_string()).collect();
        let got: BTreeSet<String> = pods_with_delayed_deletion_per_index(&st, &rm)
            .values()
            .map(|p| spec::uid(p).to_string())
            .collect();
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{name}");
    }
}

// Upstream TestGetNewIndexFailureCountValue.
#[test]
fn new_index_failure_count_table() {
    let ignore_dt = J::new("j", 2, Some(2))
        .indexed()
        .blpi(1)
        .rules(vec![cond_rule("Ignore", "DisruptionTarget", "True")])
        .build();
    let plain = J::new("j", 2, Some(2)).indexed().blpi(1).build();
    let cases: Vec<(&str, &Job, Option<Pod>, (i32, i32))> = vec![
        ("first pod created", &plain, None, (0, 0)),
        (
            "failed pod being replaced with 0 index failure count",
            &plain,
            Some(P::new("a").failure_count("0").phase("Failed").index("0").0),
            (1, 0),
        ),
        (
            "failed pod being replaced with >0 index failure count",
            &plain,
            Some(P::new("a").failure_count("3").phase("Failed").index("0").0),
            (4, 0),
        ),
        (
            "failed pod being replaced, matching the ignore rule",
            &ignore_dt,
            Some(
                P::new("a")
                    .failure_count("3")
                    .phase("Failed")
                    .index("3")
                    .condition("DisruptionTarget", "True")
                    .0,
            ),
            (3, 1),
        ),
    ];
    for (name, job, pod, want) in cases {
        assert_eq!(new_index_failure_counts(job, pod.as_ref()), want, "{name}");
    }
}

// Upstream TestIntervalsHaveIndex.
#[test]
fn intervals_have_index_table() {
    let cases = [
        (iv(&[]), 4, false),
        (iv(&[(2, 4), (5, 7)]), 1, false),
        (iv(&[(2, 4), (6, 8)]), 9, false),
        (iv(&[(2, 4), (6, 8)]), 5, false),
        (iv(&[(2, 4), (6, 8)]), 2, true),
        (iv(&[(2, 4), (6, 8)]), 8, true),
    ];
    for (intervals, ix, want) in cases {
        assert_eq!(intervals.has(ix), want, "{intervals} has {ix}");
    }
}

// Upstream TestFirstPendingIndexes.
#[test]
fn first_pending_indexes_table() {
    type Case = (
        &'static str,
        usize,
        i32,
        Vec<(&'static str, &'static str)>,
        Vec<(i64, i64)>,
        Option<Vec<(i64, i64)>>,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "cnt greater than completions",
            5,
            3,
            vec![],
            vec![],
            None,
            vec![0, 1, 2],
        ),
        (
            "cnt less than completions",
            2,
            5,
            vec![],
            vec![],
            None,
            vec![0, 1],
        ),
        (
            "first pods active",
            3,
            10,
            vec![("0", "Running"), ("1", "Pending")],
            vec![],
            None,
            vec![2, 3, 4],
        ),
        (
            "last pods active or succeeded",
            6,
            6,
            vec![("6", "Pending")],
            vec![(4, 5)],
            None,
            vec![0, 1, 2, 3],
        ),
        (
            "mixed",
            5,
            20,
            vec![
                ("3", "Pending"),
                ("5", "Running"),
                ("8", "Pending"),
                ("", "Running"),
                ("-3", "Running"),
            ],
            vec![(2, 4), (9, 9)],
            None,
            vec![0, 1, 6, 7, 10],
        ),
        (
            "with failed indexes",
            5,
            20,
            vec![("3", "Pending"), ("9", "Pending")],
            vec![(1, 1), (5, 5), (9, 9)],
            Some(vec![(2, 2), (6, 7)]),
            vec![0, 4, 8, 10, 11],
        ),
    ];
    for (name, cnt, completions, active, succeeded, failed, want) in cases {
        let job = J::new("j", 1, Some(completions)).indexed().build();
        let active: Vec<Arc<Pod>> = active
            .iter()
            .enumerate()
            .map(|(i, (ix, phase))| ipod(&format!("p{i}"), ix, phase))
            .collect();
        let succeeded = iv(&succeeded);
        let failed = failed.map(|f| iv(&f));
        let st = IndexState {
            job: &job,
            pods: &active,
            active: &active,
            succeeded: &succeeded,
            failed: failed.as_ref(),
        };
        assert_eq!(
            first_pending_indexes(&st, cnt, i64::from(completions)),
            want,
            "{name}"
        );
    }
}

// Upstream TestAppendDuplicatedIndexPodsForRemoval: the order of both lists matters.
#[test]
fn duplicated_index_pods_for_removal_table() {
    let pod = |name: &str, ix: &str, phase: &str| {
        let p = P::new(name).phase(phase);
        if ix.is_empty() { p } else { p.index(ix) }.arc()
    };
    type Case = (
        &'static str,
        i64,
        Vec<(&'static str, &'static str, &'static str)>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "all unique",
            6,
            vec![
                ("a", "", "Pending"),
                ("b", "2", "Pending"),
                ("c", "5", "Running"),
                ("d", "6", "Running"),
            ],
            vec!["a", "d"],
            vec!["b", "c"],
        ),
        (
            "all with index",
            6,
            vec![
                ("a", "5", "Pending"),
                ("b", "0", "Running"),
                ("c", "3", "Pending"),
                ("d", "0", "Running"),
                ("e", "3", "Running"),
                ("f", "0", "Pending"),
                ("g", "6", "Running"),
                ("h", "6", "Pending"),
            ],
            vec!["f", "b", "c", "g", "h"],
            vec!["d", "e", "a"],
        ),
        (
            "mixed",
            6,
            vec![
                ("a", "", "Pending"),
                ("b", "invalid", "Running"),
                ("c", "-2", "Running"),
                ("d", "0", "Pending"),
                ("e", "1", "Pending"),
                ("f", "1", "Pending"),
                ("g", "1", "Running"),
            ],
            vec!["a", "b", "c", "e", "f"],
            vec!["d", "g"],
        ),
    ];
    for (name, completions, pods, want_rm, want_left) in cases {
        let pods: Vec<Arc<Pod>> = pods.iter().map(|(n, ix, ph)| pod(n, ix, ph)).collect();
        let (rm, left) = duplicated_index_pods_for_removal(&pods, completions);
        assert_eq!(names(&rm), want_rm, "{name}: removed");
        assert_eq!(names(&left), want_left, "{name}: left");
    }
}

// Upstream TestPodGenerateNameWithIndex.
#[test]
fn pod_generate_name_with_index_table() {
    let long = "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo";
    assert_eq!(long.len(), 70);
    assert_eq!(
        pod_generate_name_with_index("indexed-job", 1),
        "indexed-job-1-"
    );
    assert_eq!(
        pod_generate_name_with_index(long, 1),
        format!("{}-1-", &long[..55])
    );
    let fifty_seven = format!("{}oo", &long[..55]);
    assert_eq!(
        pod_generate_name_with_index(&fifty_seven, 1),
        format!("{}-1-", &long[..55])
    );
}

// Upstream TestGetIndexFailureCount.
#[test]
fn index_failure_count_table() {
    let max = i64::from(i32::MAX);
    let cases: Vec<(Option<String>, i32)> = vec![
        (None, 0),
        (Some("2".into()), 2),
        (Some(max.to_string()), i32::MAX),
        (Some((max + 1).to_string()), 0),
        (Some("-1".into()), 0),
        (Some("xyz".into()), 0),
    ];
    for (value, want) in cases {
        let p = match &value {
            Some(v) => P::new("a").failure_count(v),
            None => P::new("a"),
        };
        assert_eq!(index_failure_count(&p.0), want, "{value:?}");
    }
    // ignored failures add up into the absolute count
    assert_eq!(
        absolute_failure_count(&P::new("a").failure_count("2").ignored_count("3").0),
        5
    );
}

#[test]
fn completion_index_env_and_template() {
    let mut job = J::new("foobar", 1, Some(3)).indexed().build();
    let mut template = job.spec.take().map(|s| s.template).unwrap_or_default();
    add_completion_index_env(&mut template);
    add_completion_index_env(&mut template);
    set_completion_index(&mut template, "foobar", 2);
    let spec = template.spec.clone().unwrap_or_default();
    let env = spec.containers[0].env.clone().unwrap_or_default();
    assert_eq!(env.len(), 1, "added once");
    assert_eq!(
        env[0]
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.as_str()),
        Some("metadata.labels['batch.kubernetes.io/job-completion-index']")
    );
    assert_eq!(spec.hostname.as_deref(), Some("foobar-2"));
    let meta = template.metadata.unwrap_or_default();
    assert_eq!(
        meta.annotations
            .unwrap_or_default()
            .get(JOB_COMPLETION_INDEX_ANNOTATION)
            .map(String::as_str),
        Some("2")
    );
    assert_eq!(
        meta.labels
            .unwrap_or_default()
            .get(JOB_COMPLETION_INDEX_ANNOTATION)
            .map(String::as_str),
        Some("2")
    );
}
