//! Event (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::Strategy;
use crate::registry::catalog::{Kind, ResourceDef};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["ev"], &EventStrategy);

/// Fields field selectors on events accept (upstream `event.ToSelectableFields`).
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// What Event does differently.
pub struct EventStrategy;

impl Strategy for EventStrategy {
    fn selectable_fields(&self) -> &'static [&'static str] {
        EVENT_FIELDS
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.event(e, obj, false))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::EVENT)
    }

    fn convert(&self, obj: Value, from: &str, to: &str) -> Result<Value, String> {
        crate::registry::conversion::convert("Event", from, to, obj)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        /// `ValidateEventCreate` / `ValidateEventUpdate`: the legacy checks for every Event,
        /// plus, through `events.k8s.io` (`strict`), object metadata, series, required
        /// `eventTime`, `type`, unset deprecated fields and, on update, immutability. Field
        /// paths are upstream's (internal names: `involvedObject`, `message`, `count`, ...).
        pub(crate) fn event(&self, e: &mut Errs, o: &Value, strict: bool) {
            let field =
                |core: &'static str, events: &'static str| if strict { events } else { core };
            let empty = Value::Object(Map::new());
            let meta = get(o, "metadata").unwrap_or(&empty);
            let ns = st(meta, "namespace").unwrap_or("");
            let involved = get(o, field("involvedObject", "regarding")).unwrap_or(&empty);
            let inv_ns = st(involved, "namespace").unwrap_or("");
            let event_time = st(o, "eventTime").filter(|t| !t.is_empty());
            let mismatch = |e: &mut Errs| {
                e.invalid(
                    "involvedObject.namespace",
                    s(inv_ns),
                    "does not match event.namespace",
                )
            };
            if event_time.is_none() {
                if inv_ns.is_empty() {
                    if !ns.is_empty() && ns != "default" {
                        mismatch(e);
                    }
                } else if ns != inv_ns {
                    mismatch(e);
                }
            } else {
                if inv_ns.is_empty() && ns != "default" && ns != "kube-system" {
                    mismatch(e);
                }
                let rc = st(o, field("reportingComponent", "reportingController")).unwrap_or("");
                if rc.is_empty() {
                    e.required("reportingController", "");
                }
                for m in qualified_name_errs(rc) {
                    e.invalid("reportingController", s(rc), &m);
                }
                let limited = |e: &mut Errs, path: &str, v: &str, limit: usize, required: bool| {
                    if required && v.is_empty() {
                        e.required(path, "");
                    }
                    if v.len() > limit {
                        e.invalid(path, s(""), &format!("can have at most {limit} characters"));
                    }
                };
                limited(
                    e,
                    "reportingInstance",
                    st(o, "reportingInstance").unwrap_or(""),
                    128,
                    true,
                );
                limited(e, "action", st(o, "action").unwrap_or(""), 128, true);
                limited(e, "reason", st(o, "reason").unwrap_or(""), 128, true);
                limited(
                    e,
                    "message",
                    st(o, field("message", "note")).unwrap_or(""),
                    1024,
                    false,
                );
            }
            if !ns.is_empty() {
                for m in dns1123_subdomain_errs(ns) {
                    e.invalid("namespace", s(ns), &m);
                }
            }
            if !strict {
                return;
            }
            self.meta(e, o, NameRule::Subdomain, false);
            let series_changed = self
                .old
                .is_none_or(|old| get(old, "series") != get(o, "series"));
            if let (Some(series), true) = (get(o, "series"), series_changed) {
                if int(series, "count").unwrap_or(0) < 2 {
                    e.invalid("series.count", s(""), "should be at least 2");
                }
                if st(series, "lastObservedTime").is_none_or(str::is_empty) {
                    e.required("series.lastObservedTime", "");
                }
            }
            match self.old {
                None => {
                    if event_time.is_none() {
                        e.required("eventTime", "");
                    }
                    let ty = st(o, "type").unwrap_or("");
                    if ty != "Normal" && ty != "Warning" {
                        e.invalid("type", s(""), &format!("has invalid value: {ty}"));
                    }
                    for (f, path) in [
                        ("deprecatedFirstTimestamp", "firstTimestamp"),
                        ("deprecatedLastTimestamp", "lastTimestamp"),
                    ] {
                        if st(o, f).is_some_and(|t| !t.is_empty()) {
                            e.invalid(path, s(""), "needs to be unset");
                        }
                    }
                    if int(o, "deprecatedCount").is_some_and(|c| c != 0) {
                        e.invalid("count", s(""), "needs to be unset");
                    }
                    let source = get(o, "deprecatedSource").unwrap_or(&empty);
                    if st(source, "component").is_some_and(|c| !c.is_empty())
                        || st(source, "host").is_some_and(|h| !h.is_empty())
                    {
                        e.invalid("source", s(""), "needs to be unset");
                    }
                }
                Some(old) => {
                    for (f, path) in [
                        ("regarding", "involvedObject"),
                        ("reason", "reason"),
                        ("note", "message"),
                        ("deprecatedSource", "source"),
                        ("deprecatedFirstTimestamp", "firstTimestamp"),
                        ("deprecatedLastTimestamp", "lastTimestamp"),
                        ("deprecatedCount", "count"),
                        ("type", "type"),
                        ("eventTime", "eventTime"),
                        ("action", "action"),
                        ("related", "related"),
                        ("reportingController", "reportingController"),
                        ("reportingInstance", "reportingInstance"),
                    ] {
                        if get(o, f) != get(old, f) {
                            e.invalid(
                                path,
                                Bad::Json(get(o, f).cloned().unwrap_or(Value::Null)),
                                IMMUTABLE,
                            );
                        }
                    }
                }
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const EVENT_DEF: &str = "io.k8s.api.core.v1.Event";

    fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
        if a.is_empty() {
            b
        } else {
            a
        }
    }

    fn print_event(v: &Value, now: DateTime<Utc>) -> Row {
        let present = |ptr: &str| opt_s(v, ptr).filter(|t| !t.is_empty());
        let first = match present("/firstTimestamp") {
            Some(t) => since(Some(t), now),
            None => since(present("/eventTime"), now),
        };
        let mut last = match present("/lastTimestamp") {
            Some(t) => since(Some(t), now),
            None => first.clone(),
        };
        let mut count = int(v, "/count");
        if v.get("series").is_some_and(Value::is_object) {
            last = since(present("/series/lastObservedTime"), now);
            count = int(v, "/series/count");
        } else if count == 0 {
            // singleton events of the events.k8s.io API carry no count
            count = 1;
        }
        let kind = s(v, "/involvedObject/kind").to_lowercase();
        let target = match s(v, "/involvedObject/name") {
            "" => kind,
            n => format!("{kind}/{n}"),
        };
        let component = first_non_empty(s(v, "/source/component"), s(v, "/reportingComponent"));
        let instance = first_non_empty(s(v, "/source/host"), s(v, "/reportingInstance"));
        let source = if instance.is_empty() {
            component.to_string()
        } else {
            format!("{component}, {instance}")
        };
        Row::of(vec![
            json!(last),
            json!(s(v, "/type")),
            json!(s(v, "/reason")),
            json!(target),
            json!(s(v, "/involvedObject/fieldPath")),
            json!(source),
            json!(s(v, "/message").trim()),
            json!(first),
            json!(count),
            name(v),
        ])
    }

    /// Events (core `v1` storage; also serves `events.k8s.io/v1`).
    pub(crate) static EVENT: Printer = Printer {
        columns: &[
            string("Last Seen", field(EVENT_DEF, "lastTimestamp")),
            string("Type", field(EVENT_DEF, "type")),
            string("Reason", field(EVENT_DEF, "reason")),
            string("Object", field(EVENT_DEF, "involvedObject")),
            wide(string(
                "Subobject",
                field("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
            )),
            wide(string("Source", field(EVENT_DEF, "source"))),
            string("Message", field(EVENT_DEF, "message")),
            wide(string("First Seen", field(EVENT_DEF, "firstTimestamp"))),
            wide(string("Count", field(EVENT_DEF, "count"))),
            wide(NAME),
        ],
        print: print_event,
    };
}
