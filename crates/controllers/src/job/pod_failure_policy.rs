//! The pod failure policy: which rule a failed pod matches, and what that means
//! (upstream `pod_failure_policy.go`).
//!
//! Rules are tried in order. A rule matches on exit codes (the first terminated
//! container with a non-zero code, app containers before init containers, optionally
//! only the named container, `In` or `NotIn` the values) or on pod conditions (the
//! first pod condition whose type and status match a pattern). `FailJob` fails the Job
//! with a message naming the container or condition; `FailIndex` fails the pod's index;
//! `Ignore` does not count the failure; `Count` counts it as usual. A rule with an
//! unknown action or operator is skipped.

use k8s_openapi::api::batch::v1::{
    PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// What a matched rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Fail the whole Job.
    FailJob,
    /// Fail the pod's index (backoff limit per index).
    FailIndex,
    /// Do not count the failure.
    Ignore,
    /// Count the failure as usual.
    Count,
}

impl Action {
    fn parse(s: &str) -> Option<Action> {
        match s {
            "FailJob" => Some(Action::FailJob),
            "FailIndex" => Some(Action::FailIndex),
            "Ignore" => Some(Action::Ignore),
            "Count" => Some(Action::Count),
            _ => None,
        }
    }

    /// The API name of the action.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::FailJob => "FailJob",
            Action::FailIndex => "FailIndex",
            Action::Ignore => "Ignore",
            Action::Count => "Count",
        }
    }
}

/// The outcome of matching a failed pod against a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The Job's failure message when a `FailJob` rule matched.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts towards the backoff limits.
    pub count_failed: bool,
    /// The action of the rule that matched.
    pub action: Option<Action>,
}

impl Match {
    const NONE: Match = Match {
        fail_job_message: None,
        count_failed: true,
        action: None,
    };
}

fn statuses(v: &Option<Vec<ContainerStatus>>) -> &[ContainerStatus] {
    v.as_deref().unwrap_or(&[])
}

fn operator_matches(code: i32, req: &PodFailurePolicyOnExitCodesRequirement) -> bool {
    match req.operator.as_str() {
        "In" => req.values.contains(&code),
        "NotIn" => !req.values.contains(&code),
        _ => false,
    }
}

/// The first terminated container of `list` whose non-zero exit code satisfies `req`.
fn matching_container<'a>(
    list: &'a [ContainerStatus],
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<(&'a ContainerStatus, i32)> {
    list.iter().find_map(|c| {
        let terminated = c.state.as_ref()?.terminated.as_ref()?;
        if req.container_name.as_deref().is_some_and(|n| n != c.name) {
            return None;
        }
        let code = terminated.exit_code;
        (code != 0 && operator_matches(code, req)).then_some((c, code))
    })
}

fn match_rule(
    rule: &PodFailurePolicyRule,
    index: usize,
    pod: &Pod,
) -> Option<(Action, Option<String>)> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let status = pod.status.as_ref();
    let action = Action::parse(&rule.action)?;
    if let Some(req) = &rule.on_exit_codes {
        let found = status.and_then(|s| {
            matching_container(statuses(&s.container_statuses), req)
                .or_else(|| matching_container(statuses(&s.init_container_statuses), req))
        })?;
        let (container, code) = found;
        let msg = format!(
            "Container {} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {index}",
            container.name,
            action.as_str()
        );
        return Some((action, Some(msg)));
    }
    let patterns = rule.on_pod_conditions.as_deref()?;
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let cond = conditions.iter().find(|c| {
        patterns
            .iter()
            .any(|p| c.type_ == p.type_ && c.status == p.status.as_deref().unwrap_or("True"))
    })?;
    let msg = format!(
        "Pod {ns}/{name} has condition {} matching {} rule at index {index}",
        cond.type_,
        action.as_str()
    );
    Some((action, Some(msg)))
}

/// Match a failed `pod` against `policy` (upstream `matchPodFailurePolicy`): no policy
/// or no matching rule counts the failure.
pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Match {
    let Some(policy) = policy else {
        return Match::NONE;
    };
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some((action, msg)) = match_rule(rule, index, pod) else {
            continue;
        };
        return match action {
            Action::Ignore => Match {
                fail_job_message: None,
                count_failed: false,
                action: Some(action),
            },
            Action::FailIndex | Action::Count => Match {
                fail_job_message: None,
                count_failed: true,
                action: Some(action),
            },
            Action::FailJob => Match {
                fail_job_message: msg,
                count_failed: true,
                action: Some(action),
            },
        };
    }
    Match::NONE
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, PodCondition, PodStatus,
    };

    fn exit_rule(
        action: &str,
        op: &str,
        values: &[i32],
        container: Option<&str>,
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: container.map(str::to_string),
                operator: op.into(),
                values: values.to_vec(),
            }),
            on_pod_conditions: None,
        }
    }

    fn cond_rule(action: &str, type_: &str, status: &str) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: None,
            on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                type_: type_.into(),
                status: Some(status.into()),
            }]),
        }
    }

    fn terminated(name: &str, code: i32) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running(name: &str) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(
        init: Vec<ContainerStatus>,
        containers: Vec<ContainerStatus>,
        conds: &[(&str, &str)],
    ) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = Some("default".into());
        p.metadata.name = Some("mypod".into());
        p.status = Some(PodStatus {
            phase: Some("Failed".into()),
            init_container_statuses: (!init.is_empty()).then_some(init),
            container_statuses: (!containers.is_empty()).then_some(containers),
            conditions: (!conds.is_empty()).then(|| {
                conds
                    .iter()
                    .map(|(t, s)| PodCondition {
                        type_: t.to_string(),
                        status: s.to_string(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        });
        p
    }

    const DT: &str = "DisruptionTarget";

    // Upstream TestMatchPodFailurePolicy (pod_failure_policy_test.go); the cases that
    // switch feature gates off are left out (every gate is on in 1.36).
    #[test]
    fn match_pod_failure_policy_table() {
        let main2 = pod(vec![], vec![terminated("main-container", 2)], &[]);
        let msg = |code: i32, ix: usize| {
            format!("Container main-container for pod default/mypod failed with exit code {code} matching FailJob rule at index {ix}")
        };
        type Case = (
            &'static str,
            Option<Vec<PodFailurePolicyRule>>,
            Pod,
            Option<String>,
            bool,
            Option<Action>,
        );
        let cases: Vec<Case> = vec![
            (
                "unknown action for rule matching by exit codes - skip rule with unknown action",
                Some(vec![exit_rule("UnknownAction", "In", &[1, 2], None), exit_rule("FailJob", "In", &[2, 3], None)]),
                main2.clone(),
                Some(msg(2, 1)),
                true,
                Some(Action::FailJob),
            ),
            (
                "unknown action for rule matching by pod conditions - skip rule with unknown action",
                Some(vec![cond_rule("UnkonwnAction", DT, "True"), cond_rule("Ignore", DT, "True")]),
                pod(vec![], vec![], &[(DT, "True")]),
                None,
                false,
                Some(Action::Ignore),
            ),
            (
                "unknown operator - rule with unknown action is skipped for onExitCodes",
                Some(vec![exit_rule("Ignore", "UnknownOperator", &[1, 2], None), exit_rule("FailJob", "In", &[2, 3], None)]),
                main2.clone(),
                Some(msg(2, 1)),
                true,
                Some(Action::FailJob),
            ),
            ("no policy rules", None, main2.clone(), None, true, None),
            (
                "ignore rule matched for exit codes",
                Some(vec![exit_rule("Ignore", "In", &[1, 2, 3], None)]),
                main2.clone(),
                None,
                false,
                Some(Action::Ignore),
            ),
            (
                "FailJob rule matched for exit codes",
                Some(vec![exit_rule("FailJob", "In", &[1, 2, 3], None)]),
                main2.clone(),
                Some(msg(2, 0)),
                true,
                Some(Action::FailJob),
            ),
            (
                "successful containers are skipped by the rules",
                Some(vec![exit_rule("FailJob", "NotIn", &[111], None)]),
                pod(vec![terminated("init-container", 0)], vec![terminated("main-container", 111), terminated("suppport-container", 0)], &[]),
                None,
                true,
                None,
            ),
            (
                "FailIndex rule matched for exit codes",
                Some(vec![exit_rule("FailIndex", "In", &[1, 2, 3], None)]),
                main2.clone(),
                None,
                true,
                Some(Action::FailIndex),
            ),
            (
                "pod failure policy with NotIn operator and value 0",
                Some(vec![exit_rule("FailJob", "NotIn", &[0], None)]),
                pod(vec![], vec![terminated("main-container", 1), terminated("suppport-container", 0)], &[]),
                Some(msg(1, 0)),
                true,
                Some(Action::FailJob),
            ),
            (
                "second jobfail rule matched for exit codes",
                Some(vec![exit_rule("Count", "In", &[1, 2, 3], None), exit_rule("FailJob", "In", &[4, 5, 6], None)]),
                pod(vec![], vec![terminated("main-container", 6)], &[]),
                Some(msg(6, 1)),
                true,
                Some(Action::FailJob),
            ),
            (
                "count rule matched for exit codes",
                Some(vec![exit_rule("Count", "In", &[1, 2, 3], None)]),
                pod(vec![], vec![running("foo"), terminated("bar", 2)], &[]),
                None,
                true,
                Some(Action::Count),
            ),
            (
                "FailIndex rule matched for pod conditions",
                Some(vec![cond_rule("FailIndex", DT, "True")]),
                pod(vec![], vec![], &[(DT, "True")]),
                None,
                true,
                Some(Action::FailIndex),
            ),
            (
                "ignore rule matched for pod conditions",
                Some(vec![cond_rule("Ignore", DT, "True")]),
                pod(vec![], vec![], &[(DT, "True")]),
                None,
                false,
                Some(Action::Ignore),
            ),
            (
                "ignore rule matches by the status=False",
                Some(vec![cond_rule("Ignore", DT, "False")]),
                pod(vec![], vec![], &[(DT, "False")]),
                None,
                false,
                Some(Action::Ignore),
            ),
            (
                "ignore rule matches by the status=Unknown",
                Some(vec![cond_rule("Ignore", DT, "Unknown")]),
                pod(vec![], vec![], &[(DT, "Unknown")]),
                None,
                false,
                Some(Action::Ignore),
            ),
            (
                "ignore rule does not match when status for pattern is False, but actual True",
                Some(vec![cond_rule("Ignore", DT, "False")]),
                pod(vec![], vec![], &[(DT, "True")]),
                None,
                true,
                None,
            ),
            (
                "ignore rule does not match when status for pattern is True, but actual False",
                Some(vec![cond_rule("Ignore", DT, "True")]),
                pod(vec![], vec![], &[(DT, "False")]),
                None,
                true,
                None,
            ),
            (
                "default - do not match condition with status=False",
                Some(vec![cond_rule("Ignore", DT, "True")]),
                pod(vec![], vec![], &[(DT, "False")]),
                None,
                true,
                None,
            ),
            (
                "job fail rule matched for pod conditions",
                Some(vec![cond_rule("FailJob", DT, "True")]),
                pod(vec![], vec![], &[(DT, "True")]),
                Some("Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0".into()),
                true,
                Some(Action::FailJob),
            ),
            (
                "count rule matched for pod conditions",
                Some(vec![cond_rule("Count", DT, "True")]),
                pod(vec![], vec![], &[(DT, "True")]),
                None,
                true,
                Some(Action::Count),
            ),
            (
                "no rule matched",
                Some(vec![
                    exit_rule("Count", "NotIn", &[8], None),
                    exit_rule("Ignore", "In", &[1, 2, 3], None),
                    exit_rule("FailJob", "NotIn", &[5, 6, 7], None),
                    cond_rule("Count", "ResourceLimitExceeded", "True"),
                    cond_rule("Ignore", DT, "True"),
                ]),
                pod(vec![], vec![terminated("main-container", 32)], &[]),
                None,
                true,
                Some(Action::Count),
            ),
        ];
        for (name, rules, p, want_msg, want_count, want_action) in cases {
            let policy = rules.map(|rules| PodFailurePolicy { rules });
            let m = match_pod_failure_policy(policy.as_ref(), &p);
            assert_eq!(m.fail_job_message, want_msg, "{name}");
            assert_eq!(m.count_failed, want_count, "{name}");
            assert_eq!(m.action, want_action, "{name}");
        }
    }

    #[test]
    fn container_name_restricts_the_match_and_init_containers_come_last() {
        let policy = PodFailurePolicy {
            rules: vec![exit_rule(
                "FailJob",
                "In",
                &[5, 6, 7],
                Some("init-container"),
            )],
        };
        let p = pod(
            vec![terminated("init-container", 5)],
            vec![terminated("main-container", 5)],
            &[],
        );
        let m = match_pod_failure_policy(Some(&policy), &p);
        assert_eq!(
            m.fail_job_message.as_deref(),
            Some("Container init-container for pod default/mypod failed with exit code 5 matching FailJob rule at index 0")
        );
    }
}
