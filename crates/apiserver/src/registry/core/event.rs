//! Event (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
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
        conversion::convert(from, to, obj)
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

/// Conversion between core `v1` and `events.k8s.io/v1` Events.
///
/// Events are served as core `v1` and `events.k8s.io/v1` (core `v1` and `events.k8s.io/v1` (upstream
/// `pkg/apis/events/v1/conversion.go` plus the generated conversions through the
/// internal `core.Event`). The mapping is one to one: `involvedObject` ↔ `regarding`,
/// `message` ↔ `note`, `source` ↔ `deprecatedSource`, `firstTimestamp` ↔
/// `deprecatedFirstTimestamp`, `lastTimestamp` ↔ `deprecatedLastTimestamp`, `count` ↔
/// `deprecatedCount`, `reportingComponent` ↔ `reportingController`; `reportingInstance`,
/// `eventTime`, `series` (`count`, `lastObservedTime`), `action`, `reason`, `related`
/// and `type` keep their names. Fields neither version declares have no counterpart in
/// the internal type and are dropped, as upstream's typed decoding drops them.
pub(crate) mod conversion {
    use serde_json::{Map, Value};

    use crate::registry::conversion::{header, object, omit_empty, omit_null, put};

    const KIND: &str = "Event";
    const CORE_V1: &str = "v1";
    const EVENTS_V1: &str = "events.k8s.io/v1";

    /// An Event converted between `v1` and `events.k8s.io/v1` (identity for the same
    /// version).
    pub(crate) fn convert(from: &str, to: &str, obj: Value) -> Result<Value, String> {
        if from == to {
            return Ok(obj);
        }
        let src = object(KIND, from, to, obj)?;
        let out = match (from, to) {
            (CORE_V1, EVENTS_V1) => event_core_to_events(KIND, to, src),
            (EVENTS_V1, CORE_V1) => event_events_to_core(KIND, to, src),
            _ => return Err(format!("no conversion for {KIND} from {from} to {to}")),
        };
        Ok(Value::Object(out))
    }

    /// `EventSeries` is `{count, lastObservedTime}` in both versions; other keys have no
    /// counterpart. A series of another JSON type is left alone.
    fn event_series(v: Option<Value>) -> Option<Value> {
        match omit_null(v)? {
            Value::Object(mut m) => {
                let mut out = Map::new();
                put(&mut out, "count", m.remove("count"));
                put(&mut out, "lastObservedTime", m.remove("lastObservedTime"));
                Some(Value::Object(out))
            }
            other => Some(other),
        }
    }

    /// core `v1` → `events.k8s.io/v1` (upstream `Convert_core_Event_To_v1_Event` after the
    /// generated `v1` → internal conversion).
    fn event_core_to_events(
        kind: &str,
        to: &str,
        mut src: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut out = header(kind, to, src.remove("metadata"));
        put(&mut out, "eventTime", src.remove("eventTime"));
        put(&mut out, "series", event_series(src.remove("series")));
        put(
            &mut out,
            "reportingController",
            omit_empty(src.remove("reportingComponent")),
        );
        put(
            &mut out,
            "reportingInstance",
            omit_empty(src.remove("reportingInstance")),
        );
        put(&mut out, "action", omit_empty(src.remove("action")));
        put(&mut out, "reason", omit_empty(src.remove("reason")));
        put(&mut out, "regarding", src.remove("involvedObject"));
        put(&mut out, "related", omit_null(src.remove("related")));
        put(&mut out, "note", omit_empty(src.remove("message")));
        put(&mut out, "type", omit_empty(src.remove("type")));
        put(&mut out, "deprecatedSource", src.remove("source"));
        put(
            &mut out,
            "deprecatedFirstTimestamp",
            src.remove("firstTimestamp"),
        );
        put(
            &mut out,
            "deprecatedLastTimestamp",
            src.remove("lastTimestamp"),
        );
        put(&mut out, "deprecatedCount", omit_empty(src.remove("count")));
        out
    }

    /// `events.k8s.io/v1` → core `v1` (upstream `Convert_v1_Event_To_core_Event` followed by
    /// the generated internal → `v1` conversion).
    fn event_events_to_core(
        kind: &str,
        to: &str,
        mut src: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut out = header(kind, to, src.remove("metadata"));
        put(&mut out, "involvedObject", src.remove("regarding"));
        put(&mut out, "reason", omit_empty(src.remove("reason")));
        put(&mut out, "message", omit_empty(src.remove("note")));
        put(&mut out, "source", src.remove("deprecatedSource"));
        put(
            &mut out,
            "firstTimestamp",
            src.remove("deprecatedFirstTimestamp"),
        );
        put(
            &mut out,
            "lastTimestamp",
            src.remove("deprecatedLastTimestamp"),
        );
        put(&mut out, "count", omit_empty(src.remove("deprecatedCount")));
        put(&mut out, "type", omit_empty(src.remove("type")));
        put(&mut out, "eventTime", src.remove("eventTime"));
        put(&mut out, "series", event_series(src.remove("series")));
        put(&mut out, "action", omit_empty(src.remove("action")));
        put(&mut out, "related", omit_null(src.remove("related")));
        put(
            &mut out,
            "reportingComponent",
            omit_null(src.remove("reportingController")),
        );
        put(
            &mut out,
            "reportingInstance",
            omit_null(src.remove("reportingInstance")),
        );
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        fn conv(_kind: &str, from: &str, to: &str, obj: Value) -> Value {
            convert(from, to, obj).expect("conversion")
        }

        fn keys(v: &Value) -> Vec<&str> {
            v.as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default()
        }

        // Ported from pkg/apis/events/v1/conversion_test.go (Test_convert_v1_Event_To_core_Event).
        #[test]
        fn events_v1_event_to_core_event() {
            let events = json!({
                "kind": "Event", "apiVersion": "events.k8s.io/v1",
                "metadata": {"name": "foo", "namespace": "default"},
                "regarding": {"kind": "Pod", "namespace": "default", "name": "foo"},
                "note": "convert v1 event to core event",
                "deprecatedSource": {"component": "controller-manager", "host": "master1"}
            });
            let core = conv("Event", "events.k8s.io/v1", "v1", events);
            assert_eq!(
                core,
                json!({
                    "kind": "Event", "apiVersion": "v1",
                    "metadata": {"name": "foo", "namespace": "default"},
                    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "foo"},
                    "message": "convert v1 event to core event",
                    "source": {"component": "controller-manager", "host": "master1"}
                })
            );
        }

        // Ported from pkg/apis/events/v1/conversion_test.go (Test_convert_core_Event_To_v1_Event).
        #[test]
        fn events_core_event_to_v1_event() {
            let core = json!({
                "kind": "Event", "apiVersion": "v1",
                "metadata": {"name": "foo", "namespace": "default"},
                "involvedObject": {"namespace": "default", "name": "foo", "kind": "Pod"},
                "source": {"component": "controller-manager", "host": "master1"},
                "message": "convert core event to v1 event"
            });
            let events = conv("Event", "v1", "events.k8s.io/v1", core);
            assert_eq!(
                events,
                json!({
                    "kind": "Event", "apiVersion": "events.k8s.io/v1",
                    "metadata": {"name": "foo", "namespace": "default"},
                    "regarding": {"namespace": "default", "name": "foo", "kind": "Pod"},
                    "note": "convert core event to v1 event",
                    "deprecatedSource": {"component": "controller-manager", "host": "master1"}
                })
            );
        }

        fn full_events_event() -> Value {
            json!({
                "kind": "Event", "apiVersion": "events.k8s.io/v1",
                "metadata": {"name": "e1", "namespace": "ns", "resourceVersion": "7"},
                "eventTime": "2024-01-02T03:04:05.000006Z",
                "series": {"count": 3, "lastObservedTime": "2024-01-02T03:05:00.000000Z"},
                "reportingController": "kubernetes.io/kubelet",
                "reportingInstance": "kubelet-node1",
                "action": "Pulling",
                "reason": "Pulled",
                "regarding": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u1", "fieldPath": "spec.containers{c}"},
                "related": {"kind": "Node", "name": "node1"},
                "note": "pulled image",
                "type": "Normal",
                "deprecatedSource": {"component": "kubelet", "host": "node1"},
                "deprecatedFirstTimestamp": "2024-01-02T03:04:05Z",
                "deprecatedLastTimestamp": "2024-01-02T03:05:00Z",
                "deprecatedCount": 3
            })
        }

        #[test]
        fn events_all_fields_map_in_struct_order() {
            let core = conv("Event", "events.k8s.io/v1", "v1", full_events_event());
            assert_eq!(
                keys(&core),
                [
                    "kind",
                    "apiVersion",
                    "metadata",
                    "involvedObject",
                    "reason",
                    "message",
                    "source",
                    "firstTimestamp",
                    "lastTimestamp",
                    "count",
                    "type",
                    "eventTime",
                    "series",
                    "action",
                    "related",
                    "reportingComponent",
                    "reportingInstance"
                ]
            );
            assert_eq!(core["reportingComponent"], "kubernetes.io/kubelet");
            assert_eq!(core["message"], "pulled image");
            assert_eq!(core["count"], 3);
            assert_eq!(core["firstTimestamp"], "2024-01-02T03:04:05Z");
            assert_eq!(
                core["series"],
                json!({"count": 3, "lastObservedTime": "2024-01-02T03:05:00.000000Z"})
            );
            let back = conv("Event", "v1", "events.k8s.io/v1", core.clone());
            assert_eq!(back, full_events_event());
            assert_eq!(
                keys(&back),
                [
                    "kind",
                    "apiVersion",
                    "metadata",
                    "eventTime",
                    "series",
                    "reportingController",
                    "reportingInstance",
                    "action",
                    "reason",
                    "regarding",
                    "related",
                    "note",
                    "type",
                    "deprecatedSource",
                    "deprecatedFirstTimestamp",
                    "deprecatedLastTimestamp",
                    "deprecatedCount"
                ]
            );
            // And core -> events -> core is lossless too.
            assert_eq!(conv("Event", "events.k8s.io/v1", "v1", back), core);
        }

        #[test]
        fn events_fields_without_counterpart_and_empty_values() {
            let core = json!({
                "kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p"},
                "reportingComponent": "", "reportingInstance": "", "count": 0, "related": null,
                "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z", "state": "Ongoing"},
                "bogus": true
            });
            let events = conv("Event", "v1", "events.k8s.io/v1", core);
            assert_eq!(
                events,
                json!({
                    "kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": {"name": "e"},
                    "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z"},
                    "regarding": {"kind": "Pod", "name": "p"}
                })
            );
        }

        #[test]
        fn events_odd_types_are_carried() {
            let events = json!({
                "kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": "odd",
                "note": 5, "regarding": "x", "series": [1], "deprecatedCount": "many"
            });
            let core = conv("Event", "events.k8s.io/v1", "v1", events);
            assert_eq!(
                core,
                json!({
                    "kind": "Event", "apiVersion": "v1", "metadata": "odd",
                    "involvedObject": "x", "message": 5, "count": "many", "series": [1]
                })
            );
        }

        #[test]
        fn identity_and_unsupported_pairs() {
            let obj = json!({"kind": "Event", "apiVersion": "v1", "odd": 1});
            assert_eq!(convert("v1", "v1", obj.clone()), Ok(obj.clone()));
            assert!(convert("v1", "autoscaling/v2", obj).is_err());
            assert!(convert("v1", "events.k8s.io/v1", json!([1])).is_err());
        }
    }
}
