//! ValidatingWebhookConfiguration (`admissionregistration.k8s.io/v1`): what it does
//! differently from the generic store: upstream's webhook validation and defaults (shared
//! with MutatingWebhookConfiguration through [`webhook`]) and the `kubectl get` table.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind =
    Kind::new(&[], &ValidatingWebhookConfigurationStrategy).in_categories(&["api-extensions"]);

/// What ValidatingWebhookConfiguration does differently.
pub struct ValidatingWebhookConfigurationStrategy;

impl Strategy for ValidatingWebhookConfigurationStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// Upstream's `PrepareForUpdate`: the generation moves when `webhooks` changes.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("webhooks") != new.get("webhooks")
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        webhook::defaults(obj, false);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.webhook_configuration(e, obj, false))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&webhook::PRINTER)
    }
}

/// What both webhook configuration kinds share: defaults (`SetDefaults_ValidatingWebhook`,
/// `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`, `SetDefaults_ServiceReference`),
/// validation (`pkg/apis/admissionregistration/validation`, with
/// `k8s.io/apiserver/pkg/util/webhook`'s URL and service checks) and the table.
pub(crate) mod webhook {
    use crate::registry::defaults::{default_ptr, each_obj};
    use crate::registry::validation::prelude::*;
    use serde_json::json;

    pub(crate) use printer::PRINTER;

    mod printer {
        use crate::registry::table::prelude::*;

        /// Webhook configurations: `NAME WEBHOOKS AGE`.
        pub(crate) static PRINTER: Printer = Printer {
            columns: &[
                NAME,
                integer(
                    "Webhooks",
                    text("Webhooks indicates the number of webhooks registered in this configuration"),
                ),
                AGE,
            ],
            print: |v, now| {
                Row::of(vec![
                    name(v),
                    json!(arr(v, "/webhooks").len()),
                    age(v, now),
                ])
            },
        };
    }

    /// The defaults of every webhook of a configuration (`mutating`: also the
    /// reinvocation policy).
    pub(crate) fn defaults(obj: &mut Value, mutating: bool) {
        let Some(o) = obj.as_object_mut() else {
            return;
        };
        each_obj(o, "webhooks", |hook| {
            default_ptr(hook, "failurePolicy", json!("Fail"));
            default_ptr(hook, "matchPolicy", json!("Equivalent"));
            default_ptr(hook, "namespaceSelector", json!({}));
            default_ptr(hook, "objectSelector", json!({}));
            default_ptr(hook, "timeoutSeconds", json!(10));
            if mutating {
                default_ptr(hook, "reinvocationPolicy", json!("Never"));
            }
            each_obj(hook, "rules", |rule| default_ptr(rule, "scope", json!("*")));
            if let Some(cc) = hook.get_mut("clientConfig").and_then(Value::as_object_mut) {
                if let Some(svc) = cc.get_mut("service").and_then(Value::as_object_mut) {
                    default_ptr(svc, "port", json!(443));
                }
            }
        });
    }

    /// `AcceptedAdmissionReviewVersions`.
    const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
    /// `noSideEffectClasses`, sorted as `sets.String.List()`.
    const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
    /// `supportedSideEffectClasses`.
    const SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];
    /// `supportedOperations`.
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    /// `validScopes`.
    const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];

    fn strings(v: &Value, k: &str) -> Vec<String> {
        items(v, k)
            .iter()
            .map(|x| x.as_str().unwrap_or("").to_string())
            .collect()
    }

    /// What an update relaxes, from the stored configuration (upstream's
    /// `validationOptions` of `Validate*WebhookConfigurationUpdate`).
    struct Opts {
        ignore_match_conditions: bool,
        require_no_side_effects: bool,
        require_recognized_version: bool,
        require_unique_names: bool,
    }

    impl Opts {
        fn of(new: &Value, old: Option<&Value>) -> Opts {
            let Some(old) = old else {
                return Opts {
                    ignore_match_conditions: false,
                    require_no_side_effects: true,
                    require_recognized_version: true,
                    require_unique_names: true,
                };
            };
            let (nh, oh) = (items(new, "webhooks"), items(old, "webhooks"));
            let ignore_match_conditions = nh.len() == oh.len()
                && nh
                    .iter()
                    .zip(oh)
                    .all(|(a, b)| json_eq(get(a, "matchConditions"), get(b, "matchConditions")));
            let require_no_side_effects = oh
                .iter()
                .all(|h| st(h, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s)));
            let require_recognized_version = oh.iter().all(|h| {
                let vs = strings(h, "admissionReviewVersions");
                vs.is_empty() || vs.iter().any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
            });
            let mut names = Vec::new();
            let mut require_unique_names = true;
            for h in oh {
                let n = st(h, "name").unwrap_or("");
                if names.contains(&n) {
                    require_unique_names = false;
                }
                names.push(n);
            }
            Opts {
                ignore_match_conditions,
                require_no_side_effects,
                require_recognized_version,
                require_unique_names,
            }
        }
    }

    impl Ctx<'_> {
        /// `ValidateValidatingWebhookConfiguration(Update)` and the mutating twin.
        pub(crate) fn webhook_configuration(&self, e: &mut Errs, o: &Value, mutating: bool) {
            self.meta(e, o, NameRule::Subdomain, false);
            let opts = Opts::of(o, self.old);
            let mut names: Vec<&str> = Vec::new();
            for (i, hook) in items(o, "webhooks").iter().enumerate() {
                let p = index("webhooks", i);
                webhook(e, hook, &opts, mutating, &p);
                review_versions(
                    e,
                    &strings(hook, "admissionReviewVersions"),
                    opts.require_recognized_version,
                    &child(&p, "admissionReviewVersions"),
                );
                let name = st(hook, "name").unwrap_or("");
                if opts.require_unique_names && !name.is_empty() {
                    if names.contains(&name) {
                        e.duplicate(&child(&p, "name"), s(name));
                    } else {
                        names.push(name);
                    }
                }
            }
        }
    }

    /// `utilvalidation.IsFullyQualifiedName`.
    pub(crate) fn fully_qualified_name(e: &mut Errs, name: &str, path: &str) {
        if name.is_empty() {
            e.required(path, "");
            return;
        }
        let errs = dns1123_subdomain_errs(name);
        if !errs.is_empty() {
            e.invalid(path, s(name), &errs.join(","));
            return;
        }
        if name.split('.').count() < 3 {
            e.invalid(
                path,
                s(name),
                "should be a domain with at least three segments separated by dots",
            );
        }
    }

    fn webhook(e: &mut Errs, hook: &Value, opts: &Opts, mutating: bool, p: &str) {
        fully_qualified_name(e, st(hook, "name").unwrap_or(""), &child(p, "name"));
        for (i, rule) in items(hook, "rules").iter().enumerate() {
            rule_with_operations(e, rule, &index(&child(p, "rules"), i));
        }
        if let Some(fp) = st(hook, "failurePolicy") {
            if !matches!(fp, "Fail" | "Ignore") {
                e.not_supported(&child(p, "failurePolicy"), js(fp), &["Fail", "Ignore"]);
            }
        }
        if let Some(mp) = st(hook, "matchPolicy") {
            if !matches!(mp, "Equivalent" | "Exact") {
                e.not_supported(&child(p, "matchPolicy"), js(mp), &["Equivalent", "Exact"]);
            }
        }
        let allowed: &[&str] = if opts.require_no_side_effects {
            &NO_SIDE_EFFECTS
        } else {
            &SIDE_EFFECTS
        };
        match st(hook, "sideEffects") {
            None => e.required(
                &child(p, "sideEffects"),
                &format!("must specify one of {}", allowed.join(", ")),
            ),
            Some(se) if !allowed.contains(&se) => {
                e.not_supported(&child(p, "sideEffects"), js(se), allowed)
            }
            Some(_) => {}
        }
        if let Some(t) = int(hook, "timeoutSeconds") {
            if !(1..=30).contains(&t) {
                e.invalid(
                    &child(p, "timeoutSeconds"),
                    Bad::Int(t),
                    "the timeout value must be between 1 and 30 seconds",
                );
            }
        }
        for sel in ["namespaceSelector", "objectSelector"] {
            if let Some(v) = get(hook, sel) {
                validate_label_selector(e, v, &child(p, sel));
            }
        }
        if mutating {
            if let Some(rp) = st(hook, "reinvocationPolicy") {
                if !matches!(rp, "IfNeeded" | "Never") {
                    e.not_supported(
                        &child(p, "reinvocationPolicy"),
                        js(rp),
                        &["IfNeeded", "Never"],
                    );
                }
            }
        }
        let empty = Value::Object(Map::new());
        let cc = get(hook, "clientConfig").unwrap_or(&empty);
        let ccp = child(p, "clientConfig");
        match (st(cc, "url"), get(cc, "service")) {
            (Some(url), None) => webhook_url(e, url, &child(&ccp, "url")),
            (None, Some(svc)) => webhook_service(e, svc, &child(&ccp, "service")),
            _ => e.required(&ccp, "exactly one of url or service is required"),
        }
        if !opts.ignore_match_conditions {
            match_conditions(
                e,
                items(hook, "matchConditions"),
                &child(p, "matchConditions"),
            );
        }
    }

    /// `validateRuleWithOperations` with `validateRule` (subresources allowed).
    fn rule_with_operations(e: &mut Errs, rule: &Value, p: &str) {
        let ops = strings(rule, "operations");
        let op_path = child(p, "operations");
        if ops.is_empty() {
            e.required(&op_path, "");
        }
        if ops.len() > 1 && ops.iter().any(|o| o == "*") {
            e.invalid(
                &op_path,
                Bad::Json(json!(ops)),
                "if '*' is present, must not specify other operations",
            );
        }
        for (i, op) in ops.iter().enumerate() {
            if !OPERATIONS.contains(&op.as_str()) {
                e.not_supported(&index(&op_path, i), js(op), &OPERATIONS);
            }
        }
        let groups = strings(rule, "apiGroups");
        let gp = child(p, "apiGroups");
        if groups.is_empty() {
            e.required(&gp, "");
        }
        if groups.len() > 1 && groups.iter().any(|g| g == "*") {
            e.invalid(
                &gp,
                Bad::Json(json!(groups)),
                "if '*' is present, must not specify other API groups",
            );
        }
        let versions = strings(rule, "apiVersions");
        let vp = child(p, "apiVersions");
        if versions.is_empty() {
            e.required(&vp, "");
        }
        if versions.len() > 1 && versions.iter().any(|v| v == "*") {
            e.invalid(
                &vp,
                Bad::Json(json!(versions)),
                "if '*' is present, must not specify other API versions",
            );
        }
        for (i, v) in versions.iter().enumerate() {
            if v.is_empty() {
                e.required(&index(&vp, i), "");
            }
        }
        resources(e, &strings(rule, "resources"), &child(p, "resources"));
        if let Some(scope) = st(rule, "scope") {
            if !SCOPES.contains(&scope) {
                e.not_supported(&child(p, "scope"), js(scope), &SCOPES);
            }
        }
    }

    /// `validateResources`: `x`, `x/y`, `*`, `x/*`, `*/y`, `*/*` without overlaps.
    pub(crate) fn resources(e: &mut Errs, list: &[String], path: &str) {
        if list.is_empty() {
            e.required(path, "");
        }
        let mut with_wildcard_sub: Vec<&str> = Vec::new();
        let mut sub_with_wildcard_res: Vec<&str> = Vec::new();
        let mut double = false;
        let mut single = false;
        let mut without_sub = false;
        for (i, rs) in list.iter().enumerate() {
            let p = index(path, i);
            if rs.is_empty() {
                e.required(&p, "");
                continue;
            }
            if rs == "*/*" {
                double = true;
            }
            if rs == "*" {
                single = true;
            }
            let Some((res, sub)) = rs.split_once('/') else {
                without_sub = rs != "*";
                continue;
            };
            if with_wildcard_sub.contains(&res) {
                e.invalid(
                    &p,
                    s(rs),
                    &format!("if '{res}/*' is present, must not specify {rs}"),
                );
            }
            if sub_with_wildcard_res.contains(&sub) {
                e.invalid(
                    &p,
                    s(rs),
                    &format!("if '*/{sub}' is present, must not specify {rs}"),
                );
            }
            if sub == "*" {
                with_wildcard_sub.push(res);
            }
            if res == "*" {
                sub_with_wildcard_res.push(sub);
            }
        }
        if list.len() > 1 && double {
            e.invalid(
                path,
                Bad::Json(json!(list)),
                "if '*/*' is present, must not specify other resources",
            );
        }
        if single && without_sub {
            e.invalid(
                path,
                Bad::Json(json!(list)),
                "if '*' is present, must not specify other resources without subresources",
            );
        }
    }

    /// `validateAdmissionReviewVersions`.
    fn review_versions(e: &mut Errs, versions: &[String], require_recognized: bool, path: &str) {
        if versions.is_empty() {
            e.required(
                path,
                &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
            );
            return;
        }
        let mut seen: Vec<&str> = Vec::new();
        let mut accepted = false;
        for (i, v) in versions.iter().enumerate() {
            let p = index(path, i);
            if seen.contains(&v.as_str()) {
                e.invalid(&p, s(v), "duplicate version");
                continue;
            }
            seen.push(v);
            e.each(&p, v, apimachinery::names::is_dns1035_label(v));
            if REVIEW_VERSIONS.contains(&v.as_str()) {
                accepted = true;
            }
        }
        if require_recognized && !accepted {
            e.invalid(
                path,
                Bad::Json(json!(versions)),
                &format!(
                    "must include at least one of {}",
                    REVIEW_VERSIONS.join(", ")
                ),
            );
        }
    }

    /// `validateMatchConditions`: at most 64, named (qualified names, unique), CEL
    /// expressions that compile.
    pub(crate) fn match_conditions(e: &mut Errs, list: &[Value], path: &str) {
        if list.len() > 64 {
            e.too_many(path, list.len() as i64, 64);
        }
        let mut names: Vec<&str> = Vec::new();
        for (i, mc) in list.iter().enumerate() {
            let p = index(path, i);
            let expr = st(mc, "expression").unwrap_or("");
            let trimmed = expr.trim();
            if trimmed.is_empty() {
                e.required(&child(&p, "expression"), "");
            } else if let Some(msg) = crate::machinery::cel::syntax_error(trimmed) {
                e.invalid(&child(&p, "expression"), s(trimmed), &msg);
            }
            let name = st(mc, "name").unwrap_or("");
            if name.is_empty() {
                e.required(&child(&p, "name"), "");
            } else {
                e.each(&child(&p, "name"), name, qualified_name_errs(name));
                if names.contains(&name) {
                    e.duplicate(&child(&p, "name"), s(name));
                } else {
                    names.push(name);
                }
            }
        }
    }

    /// The parts of a URL as Go's `url.Parse` splits them.
    struct Url<'a> {
        scheme: &'a str,
        user: Option<&'a str>,
        host: &'a str,
        query: &'a str,
        fragment: &'a str,
    }

    fn parse_url(raw: &str) -> Url<'_> {
        let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let scheme_end = rest.find(':').filter(|&i| {
            i > 0
                && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
                && rest[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
        let (scheme, rest) = match scheme_end {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => ("", rest),
        };
        let (user, host) = match rest.strip_prefix("//") {
            Some(auth) => {
                let auth = auth.split('/').next().unwrap_or("");
                match auth.rsplit_once('@') {
                    Some((u, h)) => (Some(u), h),
                    None => (None, auth),
                }
            }
            None => (None, ""),
        };
        Url {
            scheme,
            user,
            host,
            query,
            fragment,
        }
    }

    /// `webhook.ValidateWebhookURL` with `forceHttps`.
    pub(crate) fn webhook_url(e: &mut Errs, raw: &str, path: &str) {
        const FORM: &str = "; desired format: https://host[/path]";
        let u = parse_url(raw);
        if u.scheme != "https" {
            e.invalid(
                path,
                s(u.scheme),
                &format!("'https' is the only allowed URL scheme{FORM}"),
            );
        }
        if u.host.is_empty() {
            e.invalid(path, s(u.host), &format!("host must be specified{FORM}"));
        }
        if let Some(user) = u.user {
            e.invalid(
                path,
                s(user),
                "user information is not permitted in the URL",
            );
        }
        if !u.fragment.is_empty() {
            e.invalid(
                path,
                s(u.fragment),
                "fragments are not permitted in the URL",
            );
        }
        if !u.query.is_empty() {
            e.invalid(
                path,
                s(u.query),
                "query parameters are not permitted in the URL",
            );
        }
    }

    /// `webhook.ValidateWebhookService`.
    pub(crate) fn webhook_service(e: &mut Errs, svc: &Value, path: &str) {
        if st(svc, "name").unwrap_or("").is_empty() {
            e.required(&child(path, "name"), "");
        }
        if st(svc, "namespace").unwrap_or("").is_empty() {
            e.required(&child(path, "namespace"), "");
        }
        let port = int(svc, "port").unwrap_or(443);
        if !(1..=65535).contains(&port) {
            e.invalid(
                &child(path, "port"),
                Bad::Int(port),
                &format!("port is not valid: {PORT_RANGE}"),
            );
        }
        let Some(url_path) = st(svc, "path") else {
            return;
        };
        let pp = child(path, "path");
        if url_path == "/" || url_path.is_empty() {
            return;
        }
        if url_path == "//" {
            e.invalid(&pp, s(url_path), "segment[0] may not be empty");
            return;
        }
        if !url_path.starts_with('/') {
            e.invalid(&pp, s(url_path), "must start with a '/'");
        }
        let mut check = &url_path[1..];
        if let Some(stripped) = check.strip_suffix('/') {
            check = stripped;
        }
        for (i, step) in check.split('/').enumerate() {
            if step.is_empty() {
                e.invalid(&pp, s(url_path), &format!("segment[{i}] may not be empty"));
                continue;
            }
            for failure in dns1123_subdomain_errs(step) {
                e.invalid(&pp, s(url_path), &format!("segment[{i}]: {failure}"));
            }
        }
    }
}
