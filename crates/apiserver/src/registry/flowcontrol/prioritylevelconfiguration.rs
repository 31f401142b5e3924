//! PriorityLevelConfiguration (`flowcontrol.apiserver.k8s.io/v1`): what it does
//! differently from the generic store (upstream `pkg/registry/flowcontrol/
//! prioritylevelconfiguration` and `pkg/apis/flowcontrol/validation`).

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `flowcontrol.apiserver.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &PriorityLevelConfigurationStrategy);

/// What PriorityLevelConfiguration does differently.
pub struct PriorityLevelConfigurationStrategy;

impl Strategy for PriorityLevelConfigurationStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.priority_level(e, obj))
    }

    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        _sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        Ctx::new(def, Some(old)).check(|v, e| {
            v.meta(e, obj, apimachinery::names::NameRule::Subdomain, false);
            crate::registry::flowcontrol::flowschema::validation::conditions(e, obj);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::PRIORITY_LEVEL)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// `SetDefaults_ExemptPriorityLevelConfiguration`,
    /// `SetDefaults_LimitedPriorityLevelConfiguration` and
    /// `SetDefaults_QueuingConfiguration`.
    pub(crate) fn apply(o: &mut Obj) {
        let Some(spec) = child(o, "spec") else {
            return;
        };
        if let Some(ex) = child(spec, "exempt") {
            default_ptr(ex, "nominalConcurrencyShares", json!(0));
            default_ptr(ex, "lendablePercent", json!(0));
        }
        if let Some(l) = child(spec, "limited") {
            default_ptr(l, "nominalConcurrencyShares", json!(30));
            default_ptr(l, "lendablePercent", json!(0));
            if let Some(q) = child(l, "limitResponse").and_then(|r| child(r, "queuing")) {
                default_nonzero(q, "handSize", 8);
                default_nonzero(q, "queues", 64);
                default_nonzero(q, "queueLengthLimit", 50);
            }
        }
    }
}

pub(crate) mod validation {
    use crate::registry::flowcontrol::{bootstrap, normalized, EXEMPT};
    use crate::registry::validation::prelude::*;

    /// `priorityLevelConfigurationQueuingMaxQueues`.
    const MAX_QUEUES: i64 = 10_000_000;
    /// `shufflesharding.MaxHashBits`.
    const MAX_HASH_BITS: i64 = 60;

    /// `shufflesharding.RequiredEntropyBits`.
    pub(crate) fn required_entropy_bits(deck_size: i64, hand_size: i64) -> i64 {
        ((deck_size as f64).log2() * hand_size as f64).ceil() as i64
    }

    impl Ctx<'_> {
        /// `ValidatePriorityLevelConfiguration` (the update is validated the same way).
        pub(crate) fn priority_level(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let name = get(o, "metadata").and_then(|m| st(m, "name")).unwrap_or("");
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            // zero shares are allowed in v1, or when the stored object already has them
            spec_checks(e, spec, name);
            if let Some(mand) = bootstrap::mandatory_spec("prioritylevelconfigurations", name) {
                if name == EXEMPT {
                    let mut have = spec.clone();
                    if let (Some(h), Some(w)) = (have.as_object_mut(), mand.get("exempt")) {
                        h.insert("exempt".into(), w.clone());
                    }
                    if normalized(&have) != normalized(&mand) {
                        e.invalid(
                            "spec",
                            Bad::Json(spec.clone()),
                            &format!(
                                "spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
                            ),
                        );
                    }
                } else if normalized(spec) != normalized(&mand) {
                    e.invalid(
                        "spec",
                        Bad::Json(spec.clone()),
                        &format!("spec of '{name}' must equal the fixed value"),
                    );
                }
            }
            crate::registry::flowcontrol::flowschema::validation::conditions(e, o);
        }
    }

    /// `ValidatePriorityLevelConfigurationSpec`.
    pub(crate) fn spec_checks(e: &mut Errs, spec: &Value, name: &str) {
        let ty = st(spec, "type").unwrap_or("");
        if (name == EXEMPT) != (ty == "Exempt") {
            e.invalid(
                "spec.type",
                js(ty),
                "type must be 'Exempt' if and only if name is 'exempt'",
            );
        }
        match ty {
            "Exempt" => {
                if get(spec, "limited").is_some() {
                    e.forbidden("spec.limited", "must be nil if the type is not Limited");
                }
                if let Some(ex) = get(spec, "exempt") {
                    if let Some(n) = int(ex, "nominalConcurrencyShares").filter(|n| *n < 0) {
                        e.invalid(
                            "spec.exempt.nominalConcurrencyShares",
                            Bad::Int(n),
                            "must be a non-negative integer",
                        );
                    }
                    lendable(e, ex, "spec.exempt");
                }
            }
            "Limited" => {
                if get(spec, "exempt").is_some() {
                    e.forbidden("spec.exempt", "must be nil if the type is Limited");
                }
                match get(spec, "limited") {
                    None => e.required("spec.limited", "must not be empty when type is Limited"),
                    Some(l) => limited(e, l),
                }
            }
            other => e.not_supported("spec.type", js(other), &["Exempt", "Limited"]),
        }
    }

    fn lendable(e: &mut Errs, v: &Value, path: &str) {
        if let Some(p) = int(v, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
            e.invalid(
                &format!("{path}.lendablePercent"),
                Bad::Int(p),
                "must be between 0 and 100, inclusive",
            );
        }
    }

    /// `ValidateLimitedPriorityLevelConfiguration` (v1: zero shares allowed).
    fn limited(e: &mut Errs, l: &Value) {
        if let Some(n) = int(l, "nominalConcurrencyShares").filter(|n| *n < 0) {
            e.invalid(
                "spec.limited.nominalConcurrencyShares",
                Bad::Int(n),
                "must be a non-negative integer",
            );
        }
        let empty = Value::Object(Map::new());
        let response = get(l, "limitResponse").unwrap_or(&empty);
        limit_response(e, response);
        lendable(e, l, "spec.limited");
        if let Some(b) = int(l, "borrowingLimitPercent").filter(|b| *b < 0) {
            e.invalid(
                "spec.limited.borrowingLimitPercent",
                Bad::Int(b),
                "if specified, must be a non-negative integer",
            );
        }
    }

    /// `ValidateLimitResponse`.
    fn limit_response(e: &mut Errs, r: &Value) {
        let path = "spec.limited.limitResponse";
        match st(r, "type").unwrap_or("") {
            "Reject" => {
                if get(r, "queuing").is_some() {
                    e.forbidden(
                        &format!("{path}.queuing"),
                        "must be nil if limited.limitResponse.type is not Limited",
                    );
                }
            }
            "Queue" => match get(r, "queuing") {
                None => e.required(
                    &format!("{path}.queuing"),
                    "must not be empty if limited.limitResponse.type is Limited",
                ),
                Some(q) => queuing(e, q, &format!("{path}.queuing")),
            },
            other => e.not_supported(&format!("{path}.type"), js(other), &["Queue", "Reject"]),
        }
    }

    /// `ValidatePriorityLevelQueuingConfiguration`.
    pub(crate) fn queuing(e: &mut Errs, q: &Value, path: &str) {
        let limit = int(q, "queueLengthLimit").unwrap_or(0);
        if limit <= 0 {
            e.invalid(
                &format!("{path}.queueLengthLimit"),
                Bad::Int(limit),
                "must be positive",
            );
        }
        let queues = int(q, "queues").unwrap_or(0);
        if queues <= 0 {
            e.invalid(
                &format!("{path}.queues"),
                Bad::Int(queues),
                "must be positive",
            );
        } else if queues > MAX_QUEUES {
            e.invalid(
                &format!("{path}.queues"),
                Bad::Int(queues),
                &format!("must not be greater than {MAX_QUEUES}"),
            );
        }
        let hand = int(q, "handSize").unwrap_or(0);
        if hand <= 0 {
            e.invalid(
                &format!("{path}.handSize"),
                Bad::Int(hand),
                "must be positive",
            );
        } else if hand > queues {
            e.invalid(
                &format!("{path}.handSize"),
                Bad::Int(hand),
                &format!("should not be greater than queues ({queues})"),
            );
        } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
            e.invalid(
                &format!("{path}.handSize"),
                Bad::Int(hand),
                &format!(
                    "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
                ),
            );
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const SPEC_DEF: &str = "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec";
    const LIMITED_DEF: &str = "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration";
    const QUEUING_DEF: &str = "io.k8s.api.flowcontrol.v1.QueuingConfiguration";

    /// PriorityLevelConfigurations (upstream `printPriorityLevelConfiguration`).
    pub(crate) static PRIORITY_LEVEL: Printer = Printer {
        columns: &[
            NAME,
            string("Type", field(SPEC_DEF, "type")),
            string(
                "NominalConcurrencyShares",
                field(LIMITED_DEF, "nominalConcurrencyShares"),
            ),
            string("Queues", field(QUEUING_DEF, "queues")),
            string("HandSize", field(QUEUING_DEF, "handSize")),
            string("QueueLengthLimit", field(QUEUING_DEF, "queueLengthLimit")),
            AGE,
        ],
        print: |v, now| {
            let none = || json!("<none>");
            let (mut ncs, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
            if let Some(l) = v.pointer("/spec/limited").filter(|l| l.is_object()) {
                ncs = json!(int(l, "/nominalConcurrencyShares"));
                if let Some(q) = l
                    .pointer("/limitResponse/queuing")
                    .filter(|q| q.is_object())
                {
                    queues = json!(int(q, "/queues"));
                    hand = json!(int(q, "/handSize"));
                    limit = json!(int(q, "/queueLengthLimit"));
                }
            }
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/type")),
                ncs,
                queues,
                hand,
                limit,
                age(v, now),
            ])
        },
    };
}

#[cfg(test)]
mod tests {
    use super::validation::required_entropy_bits;

    #[test]
    fn entropy_bits_as_shuffle_sharding() {
        assert_eq!(required_entropy_bits(64, 8), 48);
        assert_eq!(required_entropy_bits(128, 6), 42);
        assert_eq!(required_entropy_bits(1 << 26, 3), 78);
    }
}
