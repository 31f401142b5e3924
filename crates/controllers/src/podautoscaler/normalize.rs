//! Normalisation of the metrics' proposal (upstream `horizontal.go`:
//! `normalizeDesiredReplicas`, `normalizeDesiredReplicasWithBehaviors` and helpers):
//! stabilization over the recent recommendations, the scale rate limits of the HPA's
//! `behavior` (or the legacy fixed limit without one) and min/max replicas, with the
//! AbleToScale and ScalingLimited reasons they produce.
//!
//! The per-HPA history (recommendations, scale events) lives in [`History`], keyed by
//! `namespace/name` as upstream's maps; `now` is passed in so the tables are exact.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};
use k8s_openapi::jiff::Timestamp;

/// One past recommendation (upstream `timestampedRecommendation`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recommendation {
    /// The unstabilized replica count the metrics proposed.
    pub replicas: i32,
    /// When.
    pub timestamp: Timestamp,
}

/// One past rescale (upstream `timestampedScaleEvent`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleEvent {
    /// Replicas added (scale-up list) or removed (scale-down list).
    pub change: i32,
    /// When.
    pub timestamp: Timestamp,
    /// Older than the longest policy period: its slot may be reused.
    pub outdated: bool,
}

/// A condition the normalisation wants set: (reason, message).
pub type Reason = (&'static str, &'static str);

/// The result of a normalisation: the replica count and the conditions to set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalized {
    /// The replica count to scale to.
    pub replicas: i32,
    /// AbleToScale=True with this reason.
    pub able_to_scale: Reason,
    /// ScalingLimited: true when the limit changed the stabilized count.
    pub limited: bool,
    /// ScalingLimited's reason and message.
    pub limit_reason: Reason,
}

const SCALE_UP_LIMIT_FACTOR: f64 = 2.0;
const SCALE_UP_LIMIT_MINIMUM: f64 = 4.0;

const READY: Reason = ("ReadyForNewScale", "recommended size matches current size");
const DOWN_STABILIZED: Reason = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const UP_STABILIZED: Reason = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const WITHIN: Reason = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const UP_LIMIT: Reason = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const DOWN_LIMIT: Reason = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_MANY: Reason = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const TOO_FEW: Reason = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);

fn ago(now: Timestamp, d: Duration) -> Timestamp {
    now.checked_sub(d).unwrap_or(Timestamp::MIN)
}

fn secs(s: i32) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}

fn policy(type_: &str, value: i32, period: i32) -> HPAScalingPolicy {
    HPAScalingPolicy {
        type_: type_.into(),
        value,
        period_seconds: period,
    }
}

fn merge_rules(from: Option<&HPAScalingRules>, mut defaults: HPAScalingRules) -> HPAScalingRules {
    if let Some(from) = from {
        if from.select_policy.is_some() {
            defaults.select_policy = from.select_policy.clone();
        }
        if from.policies.is_some() {
            defaults.policies = from.policies.clone();
        }
        if from.stabilization_window_seconds.is_some() {
            defaults.stabilization_window_seconds = from.stabilization_window_seconds;
        }
        if from.tolerance.is_some() {
            defaults.tolerance = from.tolerance.clone();
        }
    }
    defaults
}

/// autoscaling/v2 defaults of `behavior.scaleUp` (upstream `GenerateHPAScaleUpRules`):
/// no stabilization, Max of 4 pods or 100% per 15 s; set fields are kept.
pub fn scale_up_rules(from: Option<&HPAScalingRules>) -> HPAScalingRules {
    merge_rules(
        from,
        HPAScalingRules {
            stabilization_window_seconds: Some(0),
            select_policy: Some("Max".into()),
            policies: Some(vec![policy("Pods", 4, 15), policy("Percent", 100, 15)]),
            tolerance: None,
        },
    )
}

/// autoscaling/v2 defaults of `behavior.scaleDown` (upstream
/// `GenerateHPAScaleDownRules`): Max of 100% per 15 s, the window left to the
/// controller's `--horizontal-pod-autoscaler-downscale-stabilization`.
pub fn scale_down_rules(from: Option<&HPAScalingRules>) -> HPAScalingRules {
    merge_rules(
        from,
        HPAScalingRules {
            stabilization_window_seconds: None,
            select_policy: Some("Max".into()),
            policies: Some(vec![policy("Percent", 100, 15)]),
            tolerance: None,
        },
    )
}

/// Upstream `calculateScaleUpLimit`: without behavior, at most double (or 4).
pub fn scale_up_limit(current: i32) -> i32 {
    (SCALE_UP_LIMIT_FACTOR * f64::from(current)).max(SCALE_UP_LIMIT_MINIMUM) as i32
}

/// Upstream `convertDesiredReplicasWithRules` (no behavior).
pub fn convert_desired_replicas_with_rules(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
) -> (i32, Reason) {
    let limit = scale_up_limit(current);
    let (maximum, reason) = if max > limit {
        (limit, UP_LIMIT)
    } else {
        (max, TOO_MANY)
    };
    if desired < min {
        (min, TOO_FEW)
    } else if desired > maximum {
        (maximum, reason)
    } else {
        (desired, WITHIN)
    }
}

/// Upstream `getReplicasChangePerPeriod`.
pub fn replicas_change_per_period(
    period_seconds: i32,
    events: &[ScaleEvent],
    now: Timestamp,
) -> i32 {
    let cutoff = ago(now, secs(period_seconds));
    events
        .iter()
        .filter(|e| e.timestamp > cutoff)
        .map(|e| e.change)
        .sum()
}

fn policies(rules: &HPAScalingRules) -> &[HPAScalingPolicy] {
    rules.policies.as_deref().unwrap_or_default()
}

/// Upstream `calculateScaleUpLimitWithScalingRules`.
pub fn scale_up_limit_with_rules(
    current: i32,
    up_events: &[ScaleEvent],
    down_events: &[ScaleEvent],
    rules: &HPAScalingRules,
    now: Timestamp,
) -> i32 {
    let select = rules.select_policy.as_deref().unwrap_or("Max");
    if select == "Disabled" {
        return current;
    }
    let min_select = select == "Min";
    let mut result = if min_select { i32::MAX } else { i32::MIN };
    for p in policies(rules) {
        let start = current - replicas_change_per_period(p.period_seconds, up_events, now)
            + replicas_change_per_period(p.period_seconds, down_events, now);
        let proposed = match p.type_.as_str() {
            "Pods" => start + p.value,
            "Percent" => (f64::from(start) * (1.0 + f64::from(p.value) / 100.0)).ceil() as i32,
            _ => continue,
        };
        result = if min_select {
            result.min(proposed)
        } else {
            result.max(proposed)
        };
    }
    result
}

/// Upstream `calculateScaleDownLimitWithBehaviors`.
pub fn scale_down_limit_with_rules(
    current: i32,
    up_events: &[ScaleEvent],
    down_events: &[ScaleEvent],
    rules: &HPAScalingRules,
    now: Timestamp,
) -> i32 {
    let select = rules.select_policy.as_deref().unwrap_or("Max");
    if select == "Disabled" {
        return current;
    }
    let min_select = select == "Min";
    let mut result = if min_select { i32::MIN } else { i32::MAX };
    for p in policies(rules) {
        let start = current - replicas_change_per_period(p.period_seconds, up_events, now)
            + replicas_change_per_period(p.period_seconds, down_events, now);
        let proposed = match p.type_.as_str() {
            "Pods" => start - p.value,
            "Percent" => (f64::from(start) * (1.0 - f64::from(p.value) / 100.0)) as i32,
            _ => continue,
        };
        result = if min_select {
            result.max(proposed)
        } else {
            result.min(proposed)
        };
    }
    result
}

/// What the behavior normalisation needs about one HPA (upstream `NormalizationArg`),
/// with the defaults applied.
#[derive(Clone, Debug)]
pub struct NormalizationArg {
    /// `namespace/name`.
    pub key: String,
    /// Scale-up rules (defaults applied).
    pub scale_up: HPAScalingRules,
    /// Scale-down rules (defaults applied, window filled in).
    pub scale_down: HPAScalingRules,
    /// spec.minReplicas (default 1).
    pub min_replicas: i32,
    /// spec.maxReplicas.
    pub max_replicas: i32,
    /// The count to normalise.
    pub desired: i32,
    /// The target's current count.
    pub current: i32,
}

/// The per-HPA history the controller keeps in memory.
#[derive(Debug, Default)]
pub struct History {
    /// Recommendations by HPA key.
    pub recommendations: HashMap<String, Vec<Recommendation>>,
    /// Scale-up events by HPA key (behavior only).
    pub scale_up_events: HashMap<String, Vec<ScaleEvent>>,
    /// Scale-down events by HPA key (behavior only).
    pub scale_down_events: HashMap<String, Vec<ScaleEvent>>,
}

impl History {
    /// Forget a deleted HPA.
    pub fn forget(&mut self, key: &str) {
        self.recommendations.remove(key);
        self.scale_up_events.remove(key);
        self.scale_down_events.remove(key);
    }

    /// Upstream `stabilizeRecommendation` (no behavior): the highest recommendation
    /// within the downscale window, recording the new one (reusing an expired slot).
    pub fn stabilize_recommendation(
        &mut self,
        key: &str,
        desired: i32,
        window: Duration,
        now: Timestamp,
    ) -> i32 {
        let cutoff = ago(now, window);
        let recs = self.recommendations.entry(key.to_string()).or_default();
        let mut max = desired;
        let mut old = None;
        for (i, r) in recs.iter().enumerate() {
            if r.timestamp < cutoff {
                old = Some(i);
            } else if r.replicas > max {
                max = r.replicas;
            }
        }
        let rec = Recommendation {
            replicas: desired,
            timestamp: now,
        };
        match old {
            Some(i) => recs[i] = rec,
            None => recs.push(rec),
        }
        max
    }

    /// Upstream `normalizeDesiredReplicas` (no behavior).
    #[allow(clippy::too_many_arguments)]
    pub fn normalize(
        &mut self,
        key: &str,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        window: Duration,
        now: Timestamp,
    ) -> Normalized {
        let stabilized = self.stabilize_recommendation(key, desired, window, now);
        let able_to_scale = if stabilized != desired {
            DOWN_STABILIZED
        } else {
            READY
        };
        let (replicas, limit_reason) =
            convert_desired_replicas_with_rules(current, stabilized, min, max);
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            limit_reason,
        }
    }

    /// Upstream `stabilizeRecommendationWithBehaviors`.
    pub fn stabilize_with_behaviors(
        &mut self,
        arg: &NormalizationArg,
        now: Timestamp,
    ) -> (i32, Reason) {
        let up_cutoff = ago(
            now,
            secs(arg.scale_up.stabilization_window_seconds.unwrap_or(0)),
        );
        let down_cutoff = ago(
            now,
            secs(arg.scale_down.stabilization_window_seconds.unwrap_or(0)),
        );
        let mut up = arg.desired;
        let mut down = arg.desired;
        let mut old = None;
        let recs = self.recommendations.entry(arg.key.clone()).or_default();
        for (i, r) in recs.iter().enumerate() {
            if r.timestamp > up_cutoff {
                up = up.min(r.replicas);
            }
            if r.timestamp > down_cutoff {
                down = down.max(r.replicas);
            }
            if r.timestamp < up_cutoff && r.timestamp < down_cutoff {
                old = Some(i);
            }
        }
        let mut recommendation = arg.current;
        if recommendation < up {
            recommendation = up;
        }
        if recommendation > down {
            recommendation = down;
        }
        let rec = Recommendation {
            replicas: arg.desired,
            timestamp: now,
        };
        match old {
            Some(i) => recs[i] = rec,
            None => recs.push(rec),
        }
        let reason = if arg.desired >= arg.current {
            UP_STABILIZED
        } else {
            DOWN_STABILIZED
        };
        (recommendation, reason)
    }

    /// Upstream `convertDesiredReplicasWithBehaviorRate` (`arg.desired` is the
    /// stabilized count).
    pub fn convert_with_behavior_rate(
        &self,
        arg: &NormalizationArg,
        now: Timestamp,
    ) -> (i32, Reason) {
        let up_events = self
            .scale_up_events
            .get(&arg.key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let down_events = self
            .scale_down_events
            .get(&arg.key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if arg.desired > arg.current {
            let limit =
                scale_up_limit_with_rules(arg.current, up_events, down_events, &arg.scale_up, now)
                    .max(arg.current);
            let (maximum, reason) = if arg.max_replicas > limit {
                (limit, UP_LIMIT)
            } else {
                (arg.max_replicas, TOO_MANY)
            };
            if arg.desired > maximum {
                return (maximum, reason);
            }
        } else if arg.desired < arg.current {
            let limit = scale_down_limit_with_rules(
                arg.current,
                up_events,
                down_events,
                &arg.scale_down,
                now,
            )
            .min(arg.current);
            let (minimum, reason) = if arg.min_replicas < limit {
                (limit, DOWN_LIMIT)
            } else {
                (arg.min_replicas, TOO_FEW)
            };
            if arg.desired < minimum {
                return (minimum, reason);
            }
        }
        (arg.desired, WITHIN)
    }

    /// Upstream `normalizeDesiredReplicasWithBehaviors`.
    pub fn normalize_with_behaviors(
        &mut self,
        arg: &NormalizationArg,
        now: Timestamp,
    ) -> Normalized {
        let (stabilized, reason) = self.stabilize_with_behaviors(arg, now);
        let able_to_scale = if stabilized != arg.desired {
            reason
        } else {
            READY
        };
        let mut arg = arg.clone();
        arg.desired = stabilized;
        let (replicas, limit_reason) = self.convert_with_behavior_rate(&arg, now);
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            limit_reason,
        }
    }

    /// Upstream `storeScaleEvent`: only with a behavior; marks events older than the
    /// longest policy period outdated and reuses the last outdated slot.
    pub fn store_scale_event(
        &mut self,
        behavior: Option<&HorizontalPodAutoscalerBehavior>,
        key: &str,
        prev: i32,
        new: i32,
        now: Timestamp,
    ) {
        let Some(behavior) = behavior else { return };
        let (events, rules, change) = if new > prev {
            (
                self.scale_up_events.entry(key.to_string()).or_default(),
                behavior.scale_up.as_ref(),
                new - prev,
            )
        } else {
            (
                self.scale_down_events.entry(key.to_string()).or_default(),
                behavior.scale_down.as_ref(),
                prev - new,
            )
        };
        let longest = rules
            .map(|r| {
                policies(r)
                    .iter()
                    .map(|p| p.period_seconds)
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        let cutoff = ago(now, secs(longest));
        let mut old = None;
        for (i, e) in events.iter_mut().enumerate() {
            if e.timestamp < cutoff {
                e.outdated = true;
            }
            if e.outdated {
                old = Some(i);
            }
        }
        let event = ScaleEvent {
            change,
            timestamp: now,
            outdated: false,
        };
        match old {
            Some(i) => events[i] = event,
            None => events.push(event),
        }
    }
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
