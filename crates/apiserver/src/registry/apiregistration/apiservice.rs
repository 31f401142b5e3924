//! APIService (`apiregistration.k8s.io/v1`): what it does differently from the generic
//! store (upstream `kube-aggregator/pkg/registry/apiservice` and
//! `kube-aggregator/pkg/apis/apiregistration/validation`).

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apiregistration.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ApiServiceStrategy).in_categories(&["api-extensions"]);

/// What APIService does differently.
pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.api_service(e, obj))
    }

    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        _sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        Ctx::new(def, Some(old)).check(|v, e| {
            v.meta(e, obj, apimachinery::names::NameRule::PathSegment, false);
            validation::status(e, obj);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::API_SERVICE)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// `SetDefaults_ServiceReference`: port 443.
    pub(crate) fn apply(o: &mut Obj) {
        if let Some(svc) = child(o, "spec").and_then(|s| child(s, "service")) {
            default_ptr(svc, "port", json!(443));
        }
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        /// `ValidateAPIService` (`ValidateAPIServiceUpdate` adds the metadata update
        /// checks `meta` runs on update).
        pub(crate) fn api_service(&self, e: &mut Errs, o: &Value) {
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let group = st(spec, "group").unwrap_or("");
            let version = st(spec, "version").unwrap_or("");
            let required_name = format!("{version}.{group}");
            // the name rule: a path segment, and exactly version.group
            self.meta(e, o, NameRule::PathSegment, false);
            let m = get(o, "metadata").unwrap_or(&empty);
            if let Some(n) = st(m, "name").filter(|n| !n.is_empty()) {
                if NameRule::PathSegment.check(n, false).is_empty() && n != required_name {
                    e.invalid(
                        "metadata.name",
                        Bad::str(n),
                        &format!(
                            "must be `spec.version+\".\"+spec.group`: {}",
                            apimachinery::gofmt::quote(&required_name)
                        ),
                    );
                }
            }
            spec_checks(e, spec);
        }
    }

    /// The spec part of `ValidateAPIService`.
    pub(crate) fn spec_checks(e: &mut Errs, spec: &Value) {
        let group = st(spec, "group").unwrap_or("");
        let version = st(spec, "version").unwrap_or("");
        if group.is_empty() && version != "v1" {
            e.required(
                "spec.group",
                "only v1 may have an empty group and it better be legacy kube",
            );
        }
        if !group.is_empty() {
            e.each(
                "spec.group",
                group,
                apimachinery::names::is_dns1123_subdomain(group),
            );
        }
        e.each(
            "spec.version",
            version,
            apimachinery::names::is_dns1035_label(version),
        );
        let gpm = int(spec, "groupPriorityMinimum").unwrap_or(0);
        if gpm <= 0 || gpm > 20000 {
            e.invalid(
                "spec.groupPriorityMinimum",
                Bad::Int(gpm),
                "must be positive and less than 20000",
            );
        }
        let vp = int(spec, "versionPriority").unwrap_or(0);
        if vp <= 0 || vp > 1000 {
            e.invalid(
                "spec.versionPriority",
                Bad::Int(vp),
                "must be positive and less than 1000",
            );
        }
        let ca = st(spec, "caBundle").unwrap_or("");
        let insecure = boolean(spec, "insecureSkipTLSVerify").unwrap_or(false);
        let Some(svc) = get(spec, "service") else {
            if !ca.is_empty() {
                // caBundle is base64 in JSON: upstream counts the decoded bytes
                let n = base64_len(ca);
                e.invalid(
                    "spec.caBundle",
                    Bad::str(&format!("{n} bytes")),
                    "local APIServices may not have a caBundle",
                );
            }
            if insecure {
                e.invalid(
                    "spec.insecureSkipTLSVerify",
                    Bad::Bool(insecure),
                    "local APIServices may not have insecureSkipTLSVerify",
                );
            }
            return;
        };
        if st(svc, "namespace").unwrap_or("").is_empty() {
            e.required("spec.service.namespace", "");
        }
        if st(svc, "name").unwrap_or("").is_empty() {
            e.required("spec.service.name", "");
        }
        let port = int(svc, "port").unwrap_or(0);
        if !(1..=65535).contains(&port) {
            e.invalid(
                "spec.service.port",
                Bad::Int(port),
                "port is not valid: must be between 1 and 65535, inclusive",
            );
        }
        if insecure && !ca.is_empty() {
            e.invalid(
                "spec.insecureSkipTLSVerify",
                Bad::Bool(insecure),
                "may not be true if caBundle is present",
            );
        }
    }

    /// The length of what a base64 text decodes to.
    fn base64_len(s: &str) -> usize {
        let t = s.trim_end_matches('=');
        t.len() * 3 / 4
    }

    /// `ValidateAPIServiceStatus`: condition statuses are True, False or Unknown.
    pub(crate) fn status(e: &mut Errs, o: &Value) {
        let empty = Value::Object(Map::new());
        let status = get(o, "status").unwrap_or(&empty);
        for (i, c) in items(status, "conditions").iter().enumerate() {
            let s = st(c, "status").unwrap_or("");
            if !matches!(s, "True" | "False" | "Unknown") {
                e.not_supported(
                    &format!("status.conditions[{i}].status"),
                    js(s),
                    &["True", "False", "Unknown"],
                );
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// APIServices (upstream's `apiservice/etcd` `ConvertToTable`).
    pub(crate) static API_SERVICE: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Service",
                text("The reference to the service that hosts this API endpoint."),
            ),
            string("Available", text("Whether this service is available.")),
            AGE,
        ],
        print: |v, now| {
            let service = match v.pointer("/spec/service").filter(|s| s.is_object()) {
                Some(s) => format!(
                    "{}/{}",
                    s.get("namespace").and_then(Value::as_str).unwrap_or(""),
                    s.get("name").and_then(Value::as_str).unwrap_or("")
                ),
                None => "Local".to_string(),
            };
            let available = arr(v, "/status/conditions")
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
                .map(|c| {
                    let status = c.get("status").and_then(Value::as_str).unwrap_or("");
                    let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
                    if status == "True" || reason.is_empty() {
                        status.to_string()
                    } else {
                        format!("{status} ({reason})")
                    }
                })
                .unwrap_or_else(|| "Unknown".to_string());
            Row::of(vec![name(v), json!(service), json!(available), age(v, now)])
        },
    };
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::registry::catalog::Catalog;

    fn errors(obj: &Value) -> Vec<(String, String)> {
        let def = Catalog::builtin()
            .lookup("apiregistration.k8s.io", "v1", "apiservices")
            .expect("served");
        def.strategy
            .validate(def, obj, None)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    /// `ValidateAPIService`, case by case.
    #[test]
    fn api_service_validation() {
        let ok = json!({"group": "wardle.example.com", "version": "v1alpha1",
                        "groupPriorityMinimum": 1000, "versionPriority": 15});
        assert_eq!(errors(&svc("v1alpha1.wardle.example.com", ok.clone())), []);
        assert_eq!(
            errors(&svc(
                "v1.",
                json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
            )),
            []
        );
        let mut remote = ok.clone();
        remote["service"] = json!({"namespace": "wardle", "name": "api", "port": 443});
        remote["insecureSkipTLSVerify"] = json!(true);
        assert_eq!(
            errors(&svc("v1alpha1.wardle.example.com", remote.clone())),
            []
        );
        let cases: Vec<(Value, Vec<(&str, &str)>)> = vec![
            (
                json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}),
                vec![("spec.group", "Required value: only v1 may have an empty group and it better be legacy kube")],
            ),
            (
                json!({"group": "Wardle", "version": "V1", "groupPriorityMinimum": 20001, "versionPriority": 1001}),
                vec![
                    ("spec.group", "Invalid value: \"Wardle\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
                    ("spec.version", "Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
                    ("spec.groupPriorityMinimum", "Invalid value: 20001: must be positive and less than 20000"),
                    ("spec.versionPriority", "Invalid value: 1001: must be positive and less than 1000"),
                ],
            ),
            (
                json!({"group": "g.io", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                       "service": {"port": 70000}, "insecureSkipTLSVerify": true, "caBundle": "AAAA"}),
                vec![
                    ("spec.service.namespace", "Required value"),
                    ("spec.service.name", "Required value"),
                    ("spec.service.port", "Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive"),
                    ("spec.insecureSkipTLSVerify", "Invalid value: true: may not be true if caBundle is present"),
                ],
            ),
        ];
        for (spec, want) in cases {
            let name = format!(
                "{}.{}",
                spec["version"].as_str().unwrap_or(""),
                spec["group"].as_str().unwrap_or("")
            );
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(f, m)| (f.to_string(), m.to_string()))
                .collect();
            assert_eq!(errors(&svc(&name, spec.clone())), want, "{spec}");
        }
    }
}
