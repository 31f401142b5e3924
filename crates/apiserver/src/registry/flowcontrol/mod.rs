//! `flowcontrol.apiserver.k8s.io`: FlowSchemas and PriorityLevelConfigurations (API
//! Priority and Fairness configuration), upstream's bootstrap configuration objects
//! ([`bootstrap`]) and the `Dangling` condition its configuration controller keeps.
//! Requests are not queued or limited by them.

pub mod bootstrap;
pub mod flowschema;
pub mod prioritylevelconfiguration;
#[cfg(test)]
mod tests;

/// The annotation saying whether the server keeps a bootstrap object's spec up to date.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// Name of the mandatory `exempt` FlowSchema and priority level.
pub const EXEMPT: &str = "exempt";

/// Name of the mandatory `catch-all` FlowSchema and priority level.
pub const CATCH_ALL: &str = "catch-all";

/// The condition type upstream's configuration controller writes on FlowSchemas.
pub const DANGLING: &str = "Dangling";

/// The `Dangling` condition of a FlowSchema whose priority level `pl` exists
/// (`exists`) or not, as upstream's configuration controller writes it: status,
/// reason, message.
pub fn dangling_condition(pl: &str, exists: bool) -> (&'static str, &'static str, String) {
    let q = apimachinery::gofmt::quote(pl);
    if exists {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {q} and it exists"),
        )
    } else {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {q} but there is no such object"),
        )
    }
}

/// Removes what Go's semantic equality does not tell apart from absence (empty lists,
/// `false`, `null`, empty objects), so two specs can be compared as
/// `apiequality.Semantic.DeepEqual` would compare them.
pub(crate) fn normalized(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                let n = normalized(x);
                let empty = match &n {
                    Value::Null => true,
                    Value::Bool(b) => !b,
                    Value::Array(a) => a.is_empty(),
                    Value::Object(o) => o.is_empty(),
                    Value::String(s) => s.is_empty(),
                    Value::Number(n) => n.as_f64() == Some(0.0),
                };
                if !empty {
                    out.insert(k.clone(), n);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}
