//! The naming and establishing decisions of upstream's `NamingConditionController` and
//! `EstablishingController`: which names of a CRD are accepted given the other CRDs of
//! its group, and the `NamesAccepted` / `Established` conditions.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn list(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Upstream `equalToAcceptedOrFresh`: a requested name is fine when it is already ours
/// or nobody else uses it.
fn fresh(requested: &str, accepted: &str, used: &HashSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// The accepted names and the `NamesAccepted` condition (type, status, reason, message)
/// of `crd` among `others` (the other CRDs of the cluster).
pub fn accepted_names(crd: &Value, others: &[&Value]) -> (Value, (bool, String, String)) {
    let group = s(crd, "/spec/group");
    let name = s(crd, "/metadata/name");
    let mut resources = HashSet::new();
    let mut kinds = HashSet::new();
    for o in others {
        if s(o, "/spec/group") != group || s(o, "/metadata/name") == name {
            continue;
        }
        let n = o.pointer("/status/acceptedNames").unwrap_or(&Value::Null);
        for key in ["/plural", "/singular"] {
            if !s(n, key).is_empty() {
                resources.insert(s(n, key).to_string());
            }
        }
        resources.extend(list(n, "/shortNames"));
        for key in ["/kind", "/listKind"] {
            if !s(n, key).is_empty() {
                kinds.insert(s(n, key).to_string());
            }
        }
    }
    let requested = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let accepted = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut new_names = accepted.clone();
    let mut condition = (
        true,
        "NoConflicts".to_string(),
        "no conflicts found".to_string(),
    );
    let mut set = |field: &str, v: Value| {
        if let Some(o) = new_names.as_object_mut() {
            o.insert(field.to_string(), v);
        } else {
            let mut m = Map::new();
            m.insert(field.to_string(), v);
            new_names = Value::Object(m);
        }
    };
    let singular = {
        let sg = s(&requested, "/singular");
        if sg.is_empty() {
            s(&requested, "/kind").to_ascii_lowercase()
        } else {
            sg.to_string()
        }
    };
    let list_kind = {
        let lk = s(&requested, "/listKind");
        if lk.is_empty() {
            format!("{}List", s(&requested, "/kind"))
        } else {
            lk.to_string()
        }
    };
    match fresh(
        s(&requested, "/plural"),
        s(&accepted, "/plural"),
        &resources,
    ) {
        Err(m) => condition = (false, "PluralConflict".into(), m),
        Ok(()) => set("plural", json!(s(&requested, "/plural"))),
    }
    match fresh(&singular, s(&accepted, "/singular"), &resources) {
        Err(m) => condition = (false, "SingularConflict".into(), m),
        Ok(()) => set("singular", json!(singular)),
    }
    let mut short_ok = true;
    let accepted_short: HashSet<String> = list(&accepted, "/shortNames").into_iter().collect();
    for sn in list(&requested, "/shortNames") {
        if !accepted_short.contains(&sn) && resources.contains(&sn) {
            condition = (
                false,
                "ShortNamesConflict".into(),
                format!("{sn:?} is already in use"),
            );
            short_ok = false;
            break;
        }
    }
    if short_ok {
        if let Some(v) = requested.get("shortNames") {
            set("shortNames", v.clone());
        }
    }
    match fresh(s(&requested, "/kind"), s(&accepted, "/kind"), &kinds) {
        Err(m) => condition = (false, "KindConflict".into(), m),
        Ok(()) => set("kind", json!(s(&requested, "/kind"))),
    }
    match fresh(&list_kind, s(&accepted, "/listKind"), &kinds) {
        Err(m) => condition = (false, "ListKindConflict".into(), m),
        Ok(()) => set("listKind", json!(list_kind)),
    }
    if let Some(c) = requested.get("categories") {
        set("categories", c.clone());
    }
    (new_names, condition)
}

/// Set condition `ty` in `conditions`, keeping `lastTransitionTime` when the status
/// does not change (upstream `SetCRDCondition`).
pub fn set_condition(
    conditions: &mut Vec<Value>,
    ty: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &str,
) {
    let status_s = if status { "True" } else { "False" };
    let new = |time: Value| json!({"type": ty, "status": status_s, "lastTransitionTime": time, "reason": reason, "message": message});
    match conditions.iter_mut().find(|c| c["type"] == ty) {
        Some(c) if c["status"] == status_s => {
            let time = c["lastTransitionTime"].clone();
            *c = new(time);
        }
        Some(c) => *c = new(json!(now)),
        None => conditions.push(new(json!(now))),
    }
}

/// The status `crd` should have among `others`; `None` when it already has it.
pub fn desired_status(crd: &Value, others: &[&Value], now: &str) -> Option<Value> {
    let (names, (ok, reason, message)) = accepted_names(crd, others);
    let mut status = crd
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    set_condition(&mut conditions, "NamesAccepted", ok, &reason, &message, now);
    let established = conditions
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    if !established {
        if ok {
            set_condition(
                &mut conditions,
                "Established",
                true,
                "InitialNamesAccepted",
                "the initial names have been accepted",
                now,
            );
        } else {
            set_condition(
                &mut conditions,
                "Established",
                false,
                "NotAccepted",
                "not all names are accepted",
                now,
            );
        }
    }
    status["conditions"] = Value::Array(conditions);
    status["acceptedNames"] = names;
    if crd.get("status") == Some(&status) {
        None
    } else {
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str], accepted: bool) -> Value {
        let names = json!({"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List"), "shortNames": short});
        let mut v =
            json!({"metadata": {"name": name}, "spec": {"group": "example.com", "names": names}});
        if accepted {
            v["status"] = json!({"acceptedNames": names});
        }
        v
    }

    #[test]
    fn fresh_names_are_accepted_and_established() {
        let c = crd("foos.example.com", "foos", "Foo", &["fo"], false);
        let status = desired_status(&c, &[], "T").expect("changes");
        assert_eq!(status["acceptedNames"]["plural"], "foos");
        assert_eq!(status["acceptedNames"]["listKind"], "FooList");
        let conds = status["conditions"].as_array().expect("conditions");
        assert_eq!(conds[0]["type"], "NamesAccepted");
        assert_eq!(conds[0]["reason"], "NoConflicts");
        assert_eq!(conds[1]["type"], "Established");
        assert_eq!(conds[1]["reason"], "InitialNamesAccepted");
        let mut done = c.clone();
        done["status"] = status;
        assert!(desired_status(&done, &[], "T2").is_none(), "stable");
    }

    #[test]
    fn conflicts_are_reported_with_upstream_reasons() {
        let existing = crd("bars.example.com", "bars", "Bar", &["b"], true);
        let plural = crd("bars2.example.com", "bars", "Baz", &[], false);
        let (names, (ok, reason, message)) = accepted_names(&plural, &[&existing]);
        assert!(!ok);
        // later checks overwrite earlier ones, as upstream: the singular also clashes
        assert_eq!(reason, "SingularConflict");
        assert_eq!(message, "\"bar\" is already in use");
        assert!(names.get("plural").is_none());
        let mut only_plural = plural.clone();
        only_plural["spec"]["names"]["singular"] = json!("bartwo");
        let (_, (_, reason, message)) = accepted_names(&only_plural, &[&existing]);
        assert_eq!(reason, "PluralConflict");
        assert_eq!(message, "\"bars\" is already in use");
        let kind = crd("quxes.example.com", "quxes", "Bar", &[], false);
        let (names, (ok, reason, _)) = accepted_names(&kind, &[&existing]);
        assert!(!ok);
        // kind and list kind both clash; the last check's reason stays
        assert_eq!(reason, "ListKindConflict");
        assert_eq!(names["plural"], "quxes");
        assert!(names.get("kind").is_none());
        let short = crd("quxes.example.com", "quxes", "Qux", &["b"], false);
        let (_, (ok, reason, _)) = accepted_names(&short, &[&existing]);
        assert!(!ok);
        assert_eq!(reason, "ShortNamesConflict");
        let status = desired_status(&short, &[&existing], "T").expect("status");
        assert_eq!(status["conditions"][1]["reason"], "NotAccepted");
        // another group never conflicts
        let mut other = crd("bars.other.io", "bars", "Bar", &["b"], false);
        other["spec"]["group"] = json!("other.io");
        assert!(accepted_names(&other, &[&existing]).1 .0);
    }
}
