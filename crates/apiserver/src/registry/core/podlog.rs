//! `pods/log` and the other node-proxied pod subresources (`exec`, `attach`,
//! `portforward`): the request options (upstream `PodLogOptions` and
//! `ValidatePodLogOptions`), the container a request names (upstream `LogLocation` and
//! `streamLocation`), the checks the kubelet makes of that container's state
//! (`validateContainerLogStatus`) and the log a simulated container writes.
//!
//! # Simulated logs
//!
//! Pods run on simulated nodes, so no container writes anything; the log is described by
//! pod annotations instead, and derived from the container's status on every request:
//!
//! * `sim.coxswain.dev/log` (every container) or `sim.coxswain.dev/log.<container>` (one
//!   container, preferred): the lines the container writes once it starts, one per line
//!   of the value;
//! * `sim.coxswain.dev/log-interval` (a Go duration such as `1s`): the container writes
//!   one line per interval while it runs, the first when it starts — the annotated lines
//!   in turn, over and over, or `line 1`, `line 2`, ... when the container has none.
//!
//! Without the interval every line is written when the container starts. A line's time
//! is the container's `startedAt` plus its index times the interval, so `tailLines`,
//! `sinceSeconds`, `sinceTime` and `timestamps` answer alike on every call, and a
//! terminated container's log ends at its `finishedAt`. Without annotations a container
//! writes nothing, as a real one that prints nothing.

use serde_json::Value;

use apimachinery::field::{self, Cause};
use apimachinery::status::{ApiError, ApiResult};

/// The lines every container of the pod writes.
pub const LOG: &str = "sim.coxswain.dev/log";
/// Prefix of the per-container log annotation (`sim.coxswain.dev/log.<container>`).
pub const LOG_CONTAINER_PREFIX: &str = "sim.coxswain.dev/log.";
/// One line per interval while the container runs.
pub const LOG_INTERVAL: &str = "sim.coxswain.dev/log-interval";

const NANOS: i64 = 1_000_000_000;

/// Upstream `PodLogOptions`, as a `pods/log` request's query gives it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogOptions {
    /// `container`.
    pub container: Option<String>,
    /// `follow`.
    pub follow: bool,
    /// `previous`.
    pub previous: bool,
    /// `sinceSeconds`.
    pub since_seconds: Option<i64>,
    /// `sinceTime`, in nanoseconds since the Unix epoch.
    pub since_time: Option<i64>,
    /// `timestamps`.
    pub timestamps: bool,
    /// `tailLines`.
    pub tail_lines: Option<i64>,
    /// `limitBytes`.
    pub limit_bytes: Option<i64>,
}

impl LogOptions {
    /// Upstream `ValidatePodLogOptions`: 422 `PodLogOptions "name" is invalid`.
    pub fn validate(&self, name: &str) -> ApiResult<()> {
        let mut causes: Vec<Cause> = Vec::new();
        if let Some(t) = self.tail_lines.filter(|t| *t < 0) {
            causes.push(field::invalid(
                "tailLines",
                t,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(b) = self.limit_bytes.filter(|b| *b < 1) {
            causes.push(field::invalid("limitBytes", b, "must be greater than 0"));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => causes.push(field::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(s), None) if s < 1 => {
                causes.push(field::invalid("sinceSeconds", s, "must be greater than 0"))
            }
            _ => {}
        }
        if causes.is_empty() {
            return Ok(());
        }
        // upstream prints every field error as `<field>: <body>`, an empty field too
        let parts: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let list = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        let mut e = ApiError::invalid("", "PodLogOptions", name, causes);
        e.message = format!("PodLogOptions \"{name}\" is invalid: {list}");
        Err(e)
    }

    /// The earliest line time shown (`sinceSeconds` counts back from `now`).
    pub fn since(&self, now: i64) -> Option<i64> {
        self.since_time.or_else(|| {
            self.since_seconds
                .map(|s| now.saturating_sub(s.saturating_mul(NANOS)))
        })
    }
}

fn names(list: &Value) -> impl Iterator<Item = &str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
}

/// The container a request on pod `pod` names (upstream `validateContainer`): the only
/// container when none is named; 400 when several could be meant or the name is not one
/// of the pod's (init and ephemeral containers included).
pub fn container_of(pod: &Value, requested: Option<&str>) -> ApiResult<String> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = &pod["spec"];
    let all: Vec<&str> = names(&spec["initContainers"])
        .chain(names(&spec["containers"]))
        .chain(names(&spec["ephemeralContainers"]))
        .collect();
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if all.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let regular: Vec<&str> = names(&spec["containers"]).collect();
            match regular.as_slice() {
                [only] => Ok((*only).to_string()),
                [] => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                ))),
            }
        }
    }
}

/// The node a pod is bound to (`spec.nodeName`), if any.
pub fn node_of(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// One run of a container: what its log covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// The container's ID in that run (tells runs apart).
    pub id: String,
    /// When it started (ns since the epoch).
    pub started: i64,
    /// When it stopped, if it did.
    pub finished: Option<i64>,
}

fn time_of(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()?
        .timestamp_nanos_opt()
}

fn status_of<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|k| pod["status"][*k].as_array().into_iter().flatten())
    .find(|s| s["name"].as_str() == Some(container))
}

fn terminated_run(t: &Value) -> Option<Run> {
    let id = t["containerID"].as_str().filter(|s| !s.is_empty())?;
    Some(Run {
        id: id.to_string(),
        started: time_of(&t["startedAt"]).or_else(|| time_of(&t["finishedAt"]))?,
        finished: time_of(&t["finishedAt"]),
    })
}

/// The run of `container` whose log a request reads, as the kubelet picks it
/// (`validateContainerLogStatus`): the previous terminated run for `previous`, else the
/// running one, else the last terminated one; a 400 with the kubelet's message when
/// there is none (`... is waiting to start: ContainerCreating`).
pub fn run_of(pod: &Value, container: &str, previous: bool) -> ApiResult<Run> {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let bad = |what: String| {
        ApiError::bad_request(format!(
            "container {container:?} in pod {pod_name:?} {what}"
        ))
    };
    let Some(cs) = status_of(pod, container) else {
        return Err(bad("is not available".into()));
    };
    let state = &cs["state"];
    let last = &cs["lastState"]["terminated"];
    if previous {
        return terminated_run(last).ok_or_else(|| {
            ApiError::bad_request(format!(
                "previous terminated container {container:?} in pod {pod_name:?} not found"
            ))
        });
    }
    if let Some(running) = state.get("running").filter(|v| v.is_object()) {
        let started = time_of(&running["startedAt"])
            .or_else(|| time_of(&pod["status"]["startTime"]))
            .ok_or_else(|| bad("is waiting to start - no logs yet".into()))?;
        return Ok(Run {
            id: cs["containerID"].as_str().unwrap_or("").to_string(),
            started,
            finished: None,
        });
    }
    if let Some(t) = state.get("terminated").filter(|v| v.is_object()) {
        return terminated_run(t)
            .or_else(|| terminated_run(last))
            .ok_or_else(|| bad("is terminated".into()));
    }
    if last.is_object() {
        return terminated_run(last).ok_or_else(|| bad("is terminated".into()));
    }
    if let Some(w) = state.get("waiting").filter(|v| v.is_object()) {
        let reason = w["reason"].as_str().unwrap_or("");
        return Err(bad(match reason {
            "ErrImagePull" => "is waiting to start: image can't be pulled".into(),
            "ImagePullBackOff" => "is waiting to start: trying and failing to pull image".into(),
            r => format!("is waiting to start: {r}"),
        }));
    }
    Err(bad("is waiting to start - no logs yet".into()))
}

/// Whether `run` of `container` is still running in `pod` (`None`), or else when it
/// stopped (`Some(None)` when the pod no longer says).
pub fn ended(pod: &Value, container: &str, run: &Run) -> Option<Option<i64>> {
    let Some(cs) = status_of(pod, container) else {
        return Some(None);
    };
    if cs["state"]["running"].is_object() && cs["containerID"].as_str().unwrap_or("") == run.id {
        return None;
    }
    for t in [&cs["state"]["terminated"], &cs["lastState"]["terminated"]] {
        if !run.id.is_empty() && t["containerID"].as_str() == Some(run.id.as_str()) {
            return Some(time_of(&t["finishedAt"]));
        }
    }
    Some(None)
}

/// Whether `container` of `pod` is running (what `exec` and `attach` need).
pub fn is_running(pod: &Value, container: &str) -> bool {
    status_of(pod, container).is_some_and(|cs| cs["state"]["running"].is_object())
}

/// What a container writes, from the pod's annotations (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    lines: Vec<String>,
    /// Nanoseconds between lines; `None`: all at the start.
    interval: Option<i64>,
}

/// One line of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Index in the run's log.
    pub index: u64,
    /// When it was written (ns since the epoch).
    pub at: i64,
    /// The text, without the newline.
    pub text: String,
}

impl Line {
    /// The line as served: `text\n`, after the kubelet's fixed-width RFC 3339 timestamp
    /// with nanoseconds when `timestamps`.
    pub fn render(&self, timestamps: bool) -> String {
        if !timestamps {
            return format!("{}\n", self.text);
        }
        let t = chrono::DateTime::from_timestamp_nanos(self.at);
        format!("{} {}\n", t.format("%Y-%m-%dT%H:%M:%S%.9fZ"), self.text)
    }
}

impl Script {
    /// The script of `container` in `pod`; an unusable interval is ignored (the
    /// simulator reports it in an event).
    pub fn of(pod: &Value, container: &str) -> Script {
        let ann = &pod["metadata"]["annotations"];
        let text = ann[format!("{LOG_CONTAINER_PREFIX}{container}")]
            .as_str()
            .or_else(|| ann[LOG].as_str())
            .unwrap_or("");
        let text = text.strip_suffix('\n').unwrap_or(text);
        let lines = if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').map(str::to_string).collect()
        };
        let interval = ann[LOG_INTERVAL]
            .as_str()
            .and_then(|v| apimachinery::duration::parse(v.trim()).ok())
            .filter(|n| *n > 0);
        Script { lines, interval }
    }

    /// Whether the container writes nothing more after it starts.
    pub fn is_fixed(&self) -> bool {
        self.interval.is_none()
    }

    /// Line `index` of a run that started at `start`; `None` past a fixed script's end.
    pub fn line(&self, start: i64, index: u64) -> Option<Line> {
        match self.interval {
            None => self.lines.get(index as usize).map(|t| Line {
                index,
                at: start,
                text: t.clone(),
            }),
            Some(every) => {
                let text = if self.lines.is_empty() {
                    format!("line {}", index + 1)
                } else {
                    self.lines[(index % self.lines.len() as u64) as usize].clone()
                };
                Some(Line {
                    index,
                    at: start.saturating_add((index as i64).saturating_mul(every)),
                    text,
                })
            }
        }
    }

    /// How many lines a run that started at `start` has written by `t` (inclusive).
    pub fn count_by(&self, start: i64, t: i64) -> u64 {
        if t < start {
            return 0;
        }
        match self.interval {
            None => self.lines.len() as u64,
            Some(every) => ((t - start) / every) as u64 + 1,
        }
    }

    /// The first index written at or after `since`.
    fn first_since(&self, start: i64, since: i64) -> u64 {
        if since <= start {
            return 0;
        }
        match self.interval {
            None => self.lines.len() as u64,
            Some(every) => ((since - start + every - 1) / every) as u64,
        }
    }

    /// The indexes of the lines a request shows of a run written up to `until`: the last
    /// `tail` of them, then those at or after `since` (the kubelet's order).
    pub fn range(
        &self,
        start: i64,
        until: i64,
        since: Option<i64>,
        tail: Option<i64>,
    ) -> std::ops::Range<u64> {
        let end = self.count_by(start, until);
        let mut first = match tail {
            Some(n) => end.saturating_sub(n.max(0) as u64),
            None => 0,
        };
        if let Some(s) = since {
            first = first.max(self.first_since(start, s));
        }
        first.min(end)..end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: i64 = 1_700_000_000 * NANOS;

    fn pod(annotations: Value, statuses: Value) -> Value {
        json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}],
                     "initContainers": [{"name": "init"}]},
            "status": {"containerStatuses": statuses},
        })
    }

    fn running(name: &str, at: &str) -> Value {
        json!({"name": name, "containerID": format!("sim://{name}"),
               "state": {"running": {"startedAt": at}}})
    }

    #[test]
    fn options_are_validated_as_upstream() {
        let ok = LogOptions::default();
        assert!(ok.validate("p").is_ok());
        let both = LogOptions {
            since_seconds: Some(1),
            since_time: Some(T0),
            ..Default::default()
        };
        let e = both.validate("p").unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        assert_eq!(
            e.message,
            "PodLogOptions \"p\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        let many = LogOptions {
            tail_lines: Some(-1),
            limit_bytes: Some(0),
            since_seconds: Some(0),
            ..Default::default()
        };
        let e = many.validate("p").unwrap_err();
        assert_eq!(
            e.message,
            "PodLogOptions \"p\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]"
        );
        assert_eq!(e.causes.len(), 3);
        assert_eq!(e.causes[0].field, "tailLines");
    }

    #[test]
    fn the_container_is_the_only_one_or_named() {
        let two = pod(json!({}), json!([]));
        let e = container_of(&two, None).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "a container name must be specified for pod p, choose one of: [init a b]"
        );
        assert_eq!(container_of(&two, Some("b")).unwrap(), "b");
        assert_eq!(container_of(&two, Some("init")).unwrap(), "init");
        assert_eq!(
            container_of(&two, Some("c")).unwrap_err().message,
            "container c is not valid for pod p"
        );
        let one = json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "x"}]}});
        assert_eq!(container_of(&one, None).unwrap(), "x");
        assert_eq!(container_of(&one, Some("")).unwrap(), "x");
        let none = json!({"metadata": {"name": "q"}, "spec": {}});
        assert_eq!(
            container_of(&none, None).unwrap_err().message,
            "a container name must be specified for pod q"
        );
    }

    #[test]
    fn the_run_is_picked_as_the_kubelet_picks_it() {
        let waiting = json!({"name": "a", "state": {"waiting": {"reason": "ContainerCreating"}}});
        let p = pod(json!({}), json!([waiting]));
        let e = run_of(&p, "a", false).unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            "container \"a\" in pod \"p\" is waiting to start: ContainerCreating"
        );
        assert_eq!(
            run_of(&p, "a", true).unwrap_err().message,
            "previous terminated container \"a\" in pod \"p\" not found"
        );
        assert_eq!(
            run_of(&p, "b", false).unwrap_err().message,
            "container \"b\" in pod \"p\" is not available"
        );
        let pull = json!({"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}});
        assert_eq!(
            run_of(&pod(json!({}), json!([pull])), "a", false)
                .unwrap_err()
                .message,
            "container \"a\" in pod \"p\" is waiting to start: trying and failing to pull image"
        );

        let p = pod(json!({}), json!([running("a", "2023-11-14T22:13:20Z")]));
        assert_eq!(
            run_of(&p, "a", false).unwrap(),
            Run {
                id: "sim://a".into(),
                started: T0,
                finished: None
            }
        );

        // a crash loop: waiting, the last run terminated
        let looping = json!({"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"containerID": "sim://a-1", "exitCode": 1,
                "startedAt": "2023-11-14T22:13:20Z", "finishedAt": "2023-11-14T22:13:30Z"}}});
        let p = pod(json!({}), json!([looping]));
        let last = Run {
            id: "sim://a-1".into(),
            started: T0,
            finished: Some(T0 + 10 * NANOS),
        };
        assert_eq!(run_of(&p, "a", false).unwrap(), last);
        assert_eq!(run_of(&p, "a", true).unwrap(), last);
    }

    #[test]
    fn lines_come_from_the_annotations() {
        let p = pod(
            json!({LOG: "one\ntwo\n", "sim.coxswain.dev/log.b": "bee"}),
            json!([]),
        );
        let a = Script::of(&p, "a");
        assert!(a.is_fixed());
        assert_eq!(a.range(T0, T0, None, None), 0..2);
        assert_eq!(a.line(T0, 1).unwrap().text, "two");
        assert_eq!(a.line(T0, 2), None);
        assert_eq!(Script::of(&p, "b").line(T0, 0).unwrap().text, "bee");
        assert_eq!(
            Script::of(&pod(json!({}), json!([])), "a").count_by(T0, T0),
            0
        );
        // nothing before the start
        assert_eq!(a.count_by(T0, T0 - 1), 0);
        // tail and since
        assert_eq!(a.range(T0, T0, None, Some(1)), 1..2);
        assert_eq!(a.range(T0, T0, None, Some(0)), 2..2);
        assert_eq!(a.range(T0, T0, Some(T0), None), 0..2);
        assert_eq!(a.range(T0, T0, Some(T0 + 1), None), 2..2);
    }

    #[test]
    fn an_interval_writes_one_line_each_time() {
        let p = pod(json!({LOG: "x\ny", LOG_INTERVAL: "2s"}), json!([]));
        let s = Script::of(&p, "a");
        assert!(!s.is_fixed());
        // written at T0, T0+2s, T0+4s: three by T0+5s
        assert_eq!(s.count_by(T0, T0 + 5 * NANOS), 3);
        let texts: Vec<String> = s
            .range(T0, T0 + 5 * NANOS, None, None)
            .map(|i| s.line(T0, i).unwrap().text)
            .collect();
        assert_eq!(texts, ["x", "y", "x"]);
        assert_eq!(s.line(T0, 2).unwrap().at, T0 + 4 * NANOS);
        assert_eq!(s.range(T0, T0 + 5 * NANOS, None, Some(2)), 1..3);
        assert_eq!(
            s.range(T0, T0 + 5 * NANOS, Some(T0 + 3 * NANOS), None),
            2..3
        );
        assert_eq!(
            s.range(T0, T0 + 5 * NANOS, Some(T0 + 2 * NANOS), Some(1)),
            2..3
        );
        let numbered = Script::of(&pod(json!({LOG_INTERVAL: "1s"}), json!([])), "b");
        assert_eq!(numbered.line(T0, 0).unwrap().text, "line 1");
        assert_eq!(numbered.line(T0, 9).unwrap().text, "line 10");
        // an unusable interval is no interval
        assert!(Script::of(&pod(json!({LOG_INTERVAL: "soon"}), json!([])), "a").is_fixed());
    }

    #[test]
    fn timestamps_are_rfc3339_with_nine_digits() {
        let l = Line {
            index: 0,
            at: T0 + 5,
            text: "hi".into(),
        };
        assert_eq!(l.render(false), "hi\n");
        assert_eq!(l.render(true), "2023-11-14T22:13:20.000000005Z hi\n");
    }
}
