//! The node-proxied pod subresources: `pods/log` (served from the simulated container
//! logs of [`crate::registry::core::podlog`]) and `pods/exec`, `pods/attach`,
//! `pods/portforward`, which need a container runtime and answer with a `Status` error.
//!
//! A followed log (`follow=true`) is a chunked `text/plain` stream: the lines written so
//! far, then each new line when its time comes, until the container stops (the pod's
//! status says so), the pod is deleted or the client goes away.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

use super::{Api, Reply};
use crate::endpoints::request::{Query, Target};
use crate::registry::catalog::Subresource;
use crate::registry::core::podlog::{self, LogOptions, Run, Script};
use crate::storage::store::{object_key, Event, EventType};
use apimachinery::status::{ApiError, ApiResult};

fn now_nanos() -> i64 {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// `PodLogOptions` from the query (400 for values that do not parse, as upstream's
/// query conversion).
fn log_options(query: &Query) -> ApiResult<LogOptions> {
    let since_time = match query.get("sinceTime").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .ok()
                .and_then(|t| t.timestamp_nanos_opt())
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "parsing time \"{s}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                    ))
                })?,
        ),
    };
    // accepted and meaningless here: no kubelet is dialled
    query.flag("insecureSkipTLSVerifyBackend")?;
    Ok(LogOptions {
        container: query.get("container").map(str::to_string),
        follow: query.flag("follow")?.unwrap_or(false),
        previous: query.flag("previous")?.unwrap_or(false),
        since_seconds: query.int("sinceSeconds")?,
        since_time,
        timestamps: query.flag("timestamps")?.unwrap_or(false),
        tail_lines: query.int("tailLines")?,
        limit_bytes: query.int("limitBytes")?,
    })
}

/// Bytes still allowed by `limitBytes`.
struct Budget(Option<u64>);

impl Budget {
    /// `text` cut to what is left; `None` once nothing is.
    fn take(&mut self, text: String) -> Option<Bytes> {
        match &mut self.0 {
            None => Some(Bytes::from(text)),
            Some(0) => None,
            Some(left) => {
                let mut b = text.into_bytes();
                b.truncate((*left).min(b.len() as u64) as usize);
                *left -= b.len() as u64;
                Some(Bytes::from(b))
            }
        }
    }

    fn spent(&self) -> bool {
        self.0 == Some(0)
    }
}

/// What a followed log waits for next.
enum Wake {
    /// The client went away or the budget is spent.
    Stop,
    /// The next line's time came.
    Line,
    /// The pod changed (`None`: deleted).
    Pod(Option<Value>),
}

struct Follower {
    tx: mpsc::Sender<Bytes>,
    script: Script,
    run: Run,
    container: String,
    timestamps: bool,
    budget: Budget,
    next: u64,
}

impl Follower {
    /// Send lines `next..end`; false when the client is gone or the budget spent.
    async fn send_until(&mut self, end: u64) -> bool {
        while self.next < end {
            let Some(line) = self.script.line(self.run.started, self.next) else {
                self.next = end;
                break;
            };
            self.next += 1;
            let Some(bytes) = self.budget.take(line.render(self.timestamps)) else {
                return false;
            };
            if self.tx.send(bytes).await.is_err() || self.budget.spent() {
                return false;
            }
        }
        true
    }

    async fn run(
        mut self,
        key: String,
        resource: String,
        mut backlog: VecDeque<Arc<Event>>,
        mut receiver: broadcast::Receiver<Arc<Event>>,
        store: Arc<crate::storage::store::Store>,
    ) {
        loop {
            let due = (!self.script.is_fixed())
                .then(|| self.script.line(self.run.started, self.next))
                .flatten()
                .map(|l| Duration::from_nanos((l.at - now_nanos()).max(0) as u64));
            let wake = if let Some(ev) = backlog.pop_front() {
                Wake::Pod(pod_after(&ev))
            } else {
                tokio::select! {
                    _ = self.tx.closed() => Wake::Stop,
                    _ = tokio::time::sleep(due.unwrap_or_default()), if due.is_some() => Wake::Line,
                    r = receiver.recv() => match r {
                        Ok(ev) if *ev.resource == *resource && ev.key == key => Wake::Pod(pod_after(&ev)),
                        Ok(_) => continue,
                        // fell behind: the pod as it is now
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            Wake::Pod(store.get(&resource, &key).and_then(|o| o.value().ok()))
                        }
                        Err(broadcast::error::RecvError::Closed) => Wake::Stop,
                    },
                }
            };
            match wake {
                Wake::Stop => return,
                Wake::Line => {
                    let end = self.next + 1;
                    if !self.send_until(end).await {
                        return;
                    }
                }
                Wake::Pod(pod) => {
                    let end = match &pod {
                        None => Some(None),
                        Some(p) => podlog::ended(p, &self.container, &self.run),
                    };
                    if let Some(finished) = end {
                        let until = finished.unwrap_or_else(now_nanos).min(now_nanos());
                        let last = self.script.count_by(self.run.started, until);
                        self.send_until(last).await;
                        return;
                    }
                }
            }
        }
    }
}

/// The pod an event leaves (`None` when it was deleted).
fn pod_after(ev: &Event) -> Option<Value> {
    match ev.kind {
        EventType::Deleted => None,
        _ => ev.object.value().ok(),
    }
}

impl Api {
    /// GET `pods/{name}/log` (upstream `LogREST.Get` and the kubelet's
    /// `getContainerLogs`).
    pub(super) fn pod_log(&self, target: &Target, query: &Query) -> ApiResult<Reply> {
        let name = target.name.as_deref().unwrap_or("");
        let opts = log_options(query)?;
        opts.validate(name)?;
        let resource = target.resource.storage_key();
        let key = object_key(target.namespace.as_deref(), name);
        // subscribe before reading, so no change after the read is missed
        let sub = self
            .store
            .subscribe(&resource, Some(self.store.current_rv()), false);
        let obj = self.current(target)?;
        let pod = obj.value()?;
        let container = podlog::container_of(&pod, opts.container.as_deref())?;
        if podlog::node_of(&pod).is_none() {
            // upstream: no location, so no content
            return Ok(Reply {
                status: StatusCode::NO_CONTENT,
                body: Body::empty(),
                content_type: "text/plain",
                warnings: Vec::new(),
                encodable: false,
                stored: None,
            });
        }
        let run = podlog::run_of(&pod, &container, opts.previous)?;
        let script = Script::of(&pod, &container);
        let now = now_nanos();
        let until = run.finished.map_or(now, |f| f.min(now));
        let range = script.range(run.started, until, opts.since(now), opts.tail_lines);
        let mut budget = Budget(opts.limit_bytes.map(|b| b.max(0) as u64));
        let still_running = run.finished.is_none() && !opts.previous;
        if !(opts.follow && still_running) {
            let mut out = Vec::new();
            for i in range {
                let Some(line) = script.line(run.started, i) else {
                    break;
                };
                match budget.take(line.render(opts.timestamps)) {
                    Some(b) => out.extend_from_slice(&b),
                    None => break,
                }
            }
            return Ok(Reply::stream(Body::from(out), "text/plain"));
        }
        let (tx, rx) = mpsc::channel::<Bytes>(64);
        let body =
            Body::from_stream(ReceiverStream::new(rx).map(Ok::<Bytes, std::convert::Infallible>));
        let (backlog, receiver) = match sub {
            Ok(s) => (s.backlog.into_iter().collect(), s.receiver),
            Err(_) => match self.store.subscribe(&resource, None, false) {
                Ok(s) => (VecDeque::new(), s.receiver),
                Err(_) => return Err(ApiError::internal("cannot watch the pod")),
            },
        };
        let first = range.start;
        let end = range.end;
        let mut f = Follower {
            tx,
            script,
            run,
            container,
            timestamps: opts.timestamps,
            budget,
            next: first,
        };
        let store = self.store.clone();
        tokio::spawn(async move {
            if !f.send_until(end).await {
                return;
            }
            f.next = f.next.max(end);
            f.run(key, resource, backlog, receiver, store).await;
        });
        Ok(Reply::stream(body, "text/plain"))
    }

    /// `pods/{name}/exec`, `attach` and `portforward` (upstream `ExecLocation`,
    /// `AttachLocation`, `PortForwardLocation`): the pod and container are checked as
    /// upstream checks them; a container that runs is on a simulated node, which has no
    /// container runtime to connect to, and the request fails saying so.
    pub(super) fn pod_connect(&self, target: &Target, query: &Query) -> ApiResult<Reply> {
        let name = target.name.as_deref().unwrap_or("");
        let sub = target.subresource.unwrap_or(Subresource::Exec);
        let stdin = query.flag("stdin")?.unwrap_or(false);
        let stdout = query.flag("stdout")?;
        let stderr = query.flag("stderr")?;
        query.flag("tty")?;
        let pod = self.current(target)?.value()?;
        let container = match sub {
            Subresource::PortForward => None,
            _ => Some(podlog::container_of(&pod, query.get("container"))?),
        };
        let Some(node) = podlog::node_of(&pod) else {
            return Err(ApiError::bad_request(format!(
                "pod {name} does not have a host assigned"
            )));
        };
        let phase = pod["status"]["phase"].as_str().unwrap_or("");
        if matches!(phase, "Succeeded" | "Failed") {
            let what = match sub {
                Subresource::Exec => "exec into",
                Subresource::Attach => "attach to",
                _ => "forward ports to",
            };
            return Err(ApiError::bad_request(format!(
                "cannot {what} a container in a completed pod; current phase is {phase}"
            )));
        }
        // the kubelet's check of the streams (exec: stdout and stderr default to false)
        if sub == Subresource::Exec
            && !stdin
            && !stdout.unwrap_or(false)
            && !stderr.unwrap_or(false)
        {
            return Err(ApiError::bad_request(
                "you must specify at least 1 of stdin, stdout, stderr",
            ));
        }
        if let Some(c) = &container {
            if !podlog::is_running(&pod, c) {
                return Err(ApiError::bad_request(format!(
                    "container not found ({c:?})"
                )));
            }
        }
        Err(ApiError::bad_request(match (sub, container) {
            (Subresource::Exec, Some(c)) => format!(
                "cannot exec into container {c:?} in pod {name:?}: node {node:?} is simulated and runs no containers"
            ),
            (Subresource::Attach, Some(c)) => format!(
                "cannot attach to container {c:?} in pod {name:?}: node {node:?} is simulated and runs no containers"
            ),
            _ => format!(
                "cannot forward ports to pod {name:?}: node {node:?} is simulated and runs no containers"
            ),
        }))
    }
}
