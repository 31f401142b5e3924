//! Fault injection: a seeded plan of faults placed at a controller process's writes, and
//! the client that injects them.
//!
//! A [`Plan`] lists faults as `kind@n`: the fault happens at the n-th write (create,
//! update, patch, delete; Events and Leases are not counted) the controller process sends.
//! [`Injector::client`] wraps a `kube::Client` so that every request of one controller
//! process (an *incarnation*) goes through the plan:
//!
//! - writes are refused before they reach the server (409 Conflict, 429, 500), or applied
//!   and their answer lost (504 Timeout, or the process crashes right after);
//! - the watch event a write caused reaches the process's informers late, or is dropped and
//!   the watch then ends with 410 Gone (the informer relists and recovers the change);
//! - a restarted process's informers first LIST at the resourceVersion just before the
//!   crash's write (a lagging API server), then WATCH from there and catch up;
//! - leadership moves to a standby replica.
//!
//! Nothing here runs unless a client is wrapped: a process without an injector pays
//! nothing. The harness that restarts crashed processes and moves leadership is
//! `coxswain_runtime::testing` (feature `envtest`).

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::status::ApiError;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, StreamBody};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = UnsyncBoxBody<Bytes, BoxError>;

/// How long a delayed watch event is held, and how long a watch runs on after a dropped
/// event before it ends with 410 Gone.
pub const WATCH_FAULT_DELAY: Duration = Duration::from_secs(1);

/// What goes wrong at a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// The write is refused with 409 Conflict before it reaches the server.
    Conflict,
    /// The write is refused with 429 TooManyRequests before it reaches the server.
    TooManyRequests,
    /// The write is refused with 500 InternalError before it reaches the server.
    ServerError,
    /// The write is applied; the caller gets 504 Timeout (the answer was lost).
    Timeout,
    /// The write is applied, then the process crashes (its answer is lost, every later
    /// request fails) and a fresh process starts.
    Crash,
    /// As [`FaultKind::Crash`], and the fresh process's informers first list at the
    /// resourceVersion just before the write (a lagging API server), then catch up.
    CrashStale,
    /// The write is applied, then leadership moves to a standby replica whose informers
    /// already run; the old leader notices at its next renewal and exits.
    LeaderMove,
    /// The watch event of the write reaches the process's informer
    /// [`WATCH_FAULT_DELAY`] late (and the events behind it on that stream too).
    WatchDelay,
    /// The watch event of the write is dropped; [`WATCH_FAULT_DELAY`] later the watch
    /// ends with 410 Gone and the informer relists.
    WatchDrop,
}

impl FaultKind {
    /// Every kind, in the order the systematic exploration tries them.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::Conflict,
        FaultKind::TooManyRequests,
        FaultKind::ServerError,
        FaultKind::Timeout,
        FaultKind::Crash,
        FaultKind::CrashStale,
        FaultKind::LeaderMove,
        FaultKind::WatchDelay,
        FaultKind::WatchDrop,
    ];

    /// The name used in plans (`conflict@3`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Conflict => "conflict",
            FaultKind::TooManyRequests => "throttle",
            FaultKind::ServerError => "error",
            FaultKind::Timeout => "timeout",
            FaultKind::Crash => "crash",
            FaultKind::CrashStale => "crash-stale",
            FaultKind::LeaderMove => "leader-move",
            FaultKind::WatchDelay => "delay",
            FaultKind::WatchDrop => "drop",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown fault {s:?} (known: {})", names.join(", "))
            })
    }
}

/// One fault: `kind` at the `at`-th counted write (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// At which write.
    pub at: u64,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind, self.at)
    }
}

/// A list of faults, written `crash@3,delay@5` (empty: no fault).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Plan {
    /// The faults, in step order.
    pub faults: Vec<Fault>,
}

impl Plan {
    /// No fault.
    pub fn none() -> Plan {
        Plan::default()
    }

    /// One fault.
    pub fn one(kind: FaultKind, at: u64) -> Plan {
        Plan {
            faults: vec![Fault { kind, at }],
        }
    }

    /// A random plan of 2 or 3 faults of `kinds` at steps in `1..=writes`, from `rng`.
    pub fn random(rng: &mut impl Rng, kinds: &[FaultKind], writes: u64) -> Plan {
        let mut faults = Vec::new();
        if kinds.is_empty() || writes == 0 {
            return Plan { faults };
        }
        let n = rng.random_range(2..=3);
        for _ in 0..n {
            let kind = kinds[rng.random_range(0..kinds.len())];
            let at = rng.random_range(1..=writes);
            if !faults.iter().any(|f: &Fault| f.at == at) {
                faults.push(Fault { kind, at });
            }
        }
        faults.sort_by_key(|f| f.at);
        Plan { faults }
    }

    /// Whether any fault is of `kind`.
    pub fn has(&self, kind: FaultKind) -> bool {
        self.faults.iter().any(|f| f.kind == kind)
    }

    /// The fault at write `n`, if any.
    pub fn at(&self, n: u64) -> Option<FaultKind> {
        self.faults.iter().find(|f| f.at == n).map(|f| f.kind)
    }

    /// The plans with one fault fewer (for shrinking).
    pub fn without_each(&self) -> Vec<Plan> {
        (0..self.faults.len())
            .map(|i| {
                let mut p = self.clone();
                p.faults.remove(i);
                p
            })
            .collect()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.faults.is_empty() {
            return f.write_str("none");
        }
        let parts: Vec<String> = self.faults.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

impl FromStr for Plan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(Plan::none());
        }
        let mut faults = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (kind, at) = part
                .split_once('@')
                .ok_or_else(|| format!("fault {part:?} is not KIND@STEP"))?;
            let at: u64 = at
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("step of {part:?} is not a positive number"))?;
            faults.push(Fault {
                kind: kind.parse()?,
                at,
            });
        }
        faults.sort_by_key(|f| f.at);
        Ok(Plan { faults })
    }
}

/// Pick up to `count` distinct steps of `1..=writes` with `rng`, always including the first.
pub fn sample_steps(rng: &mut impl Rng, writes: u64, count: usize) -> Vec<u64> {
    let mut all: Vec<u64> = (1..=writes).collect();
    if all.len() <= count {
        return all;
    }
    let first = all.remove(0);
    all.shuffle(rng);
    let mut steps: Vec<u64> = std::iter::once(first)
        .chain(all.into_iter().take(count.saturating_sub(1)))
        .collect();
    steps.sort_unstable();
    steps
}

/// A seeded random generator (the same seed gives the same plans).
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// What the injector tells the harness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    /// The fault that happened ([`FaultKind::Crash`], [`FaultKind::CrashStale`] or
    /// [`FaultKind::LeaderMove`]: the ones the harness acts on).
    pub kind: FaultKind,
    /// The incarnation it happened in.
    pub incarnation: u64,
    /// The resourceVersion the write produced (when the answer said).
    pub resource_version: Option<u64>,
}

/// A watch event to delay or drop: the one the write `at` caused.
#[derive(Clone, Debug)]
struct WatchFault {
    /// The write (its step).
    step: u64,
    drop: bool,
    collection: String,
    namespace: Option<String>,
    name: String,
    /// `name` is a `generateName` prefix (a create whose answer has not come back yet).
    prefix: bool,
    resource_version: u64,
}

/// Where one request goes: `/api/v1/namespaces/x/pods/p/status` → collection
/// `/api/v1/pods`, namespace `x`, name `p`.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    collection: String,
    namespace: Option<String>,
    name: Option<String>,
}

fn target_of(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match segs.first() {
        Some(&"api") if segs.len() >= 2 => (segs[..2].join("/"), &segs[2..]),
        Some(&"apis") if segs.len() >= 3 => (segs[..3].join("/"), &segs[3..]),
        _ => return None,
    };
    let (namespace, rest) = if rest.first() == Some(&"namespaces") && rest.len() >= 3 {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    let plural = rest.first()?;
    Some(Target {
        collection: format!("/{prefix}/{plural}"),
        namespace,
        name: rest.get(1).map(|s| s.to_string()),
    })
}

/// Requests that are not counted as the controller's writes.
fn uncounted(path: &str) -> bool {
    let t = target_of(path);
    let plural = t
        .as_ref()
        .and_then(|t| t.collection.rsplit('/').next().map(str::to_string))
        .unwrap_or_default();
    matches!(
        plural.as_str(),
        "events" | "leases" | "tokenreviews" | "subjectaccessreviews"
    )
}

fn is_write(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// The metadata of an object (or a watch event's object) in a JSON answer.
#[derive(serde::Deserialize, Default)]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(serde::Deserialize)]
struct Obj {
    #[serde(default)]
    metadata: Meta,
}

#[derive(serde::Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    object: Obj,
}

/// Releases a held watch when dropped.
struct Held(Option<Arc<Injector>>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(i) = self.0.take() {
            i.held.fetch_sub(1, Ordering::SeqCst);
            i.touch();
        }
    }
}

/// A plan being injected into the processes of one run.
pub struct Injector {
    plan: Plan,
    writes: AtomicU64,
    watch_faults: Mutex<Vec<WatchFault>>,
    signals: mpsc::UnboundedSender<Signal>,
    log: Mutex<Vec<String>>,
    /// When a counted write or a watch fault last happened.
    activity: Mutex<tokio::time::Instant>,
    /// Watch events held back or streams waiting to end after a dropped event.
    held: AtomicU64,
}

impl fmt::Debug for Injector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Injector")
            .field("plan", &self.plan.to_string())
            .field("writes", &self.writes())
            .finish_non_exhaustive()
    }
}

/// One controller process as the injector sees it.
#[derive(Clone, Debug)]
pub struct Incarnation {
    /// Its number (0 for the first).
    pub id: u64,
    /// Cancelled when the process crashed: every later request fails.
    pub dead: CancellationToken,
    /// List at this resourceVersion first (a lagging API server after a restart).
    stale: Option<u64>,
    listed: Arc<Mutex<HashSet<String>>>,
}

impl Incarnation {
    /// A live process; its informers first list at `stale` when given.
    pub fn new(id: u64, stale: Option<u64>) -> Incarnation {
        Incarnation {
            id,
            dead: CancellationToken::new(),
            stale,
            listed: Arc::new(Mutex::new(HashSet::new())),
        }
    }
}

/// The server's answer for `error`: its `Status` body (and `Retry-After` when it says).
fn status_response(error: &ApiError) -> Response<Body> {
    let mut resp = Response::new(full(Bytes::from(error.to_status().to_string())));
    *resp.status_mut() =
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = error.retry_after {
        resp.headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    resp
}

/// The `Status` a refused write gets, as kube-apiserver words it.
fn refusal(kind: FaultKind, target: Option<&Target>) -> Option<ApiError> {
    let (group, plural) = target.map_or(("", ""), |t| {
        let mut segs = t.collection.trim_start_matches('/').split('/');
        let group = match segs.next() {
            Some("apis") => segs.next().unwrap_or_default(),
            _ => "",
        };
        (group, t.collection.rsplit('/').next().unwrap_or_default())
    });
    let name = target.and_then(|t| t.name.as_deref()).unwrap_or_default();
    Some(match kind {
        FaultKind::Conflict => ApiError::stale(group, plural, name),
        FaultKind::TooManyRequests => {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            );
            e.retry_after = Some(1);
            e
        }
        FaultKind::ServerError => ApiError::internal("injected fault"),
        _ => return None,
    })
}

fn full(b: Bytes) -> Body {
    http_body_util::Full::new(b)
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn crashed() -> BoxError {
    Box::new(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "the controller process crashed (fault injection)",
    ))
}

/// `query` with `resourceVersion` and `resourceVersionMatch` replaced.
fn stale_query(query: &str, rv: u64) -> String {
    let mut parts: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| !p.starts_with("resourceVersion=") && !p.starts_with("resourceVersionMatch="))
        .map(str::to_string)
        .collect();
    parts.push(format!("resourceVersion={rv}"));
    parts.push("resourceVersionMatch=Exact".to_string());
    parts.join("&")
}

fn query_has(query: &str, key: &str) -> bool {
    query.split('&').any(|p| p.split('=').next() == Some(key))
}

impl Injector {
    /// An injector for `plan`, and the receiver of its signals.
    pub fn new(plan: Plan) -> (Arc<Injector>, mpsc::UnboundedReceiver<Signal>) {
        let (signals, rx) = mpsc::unbounded_channel();
        (
            Arc::new(Injector {
                plan,
                writes: AtomicU64::new(0),
                watch_faults: Mutex::new(Vec::new()),
                signals,
                log: Mutex::new(Vec::new()),
                activity: Mutex::new(tokio::time::Instant::now()),
                held: AtomicU64::new(0),
            }),
            rx,
        )
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Writes counted so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// What was injected so far, one line per fault.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn touch(&self) {
        *self.activity.lock().unwrap_or_else(|e| e.into_inner()) = tokio::time::Instant::now();
    }

    /// How long no counted write was sent or answered and no watch fault acted; `None`
    /// while a watch event is held back or a watch waits to end after a dropped event.
    pub fn quiet_for(&self) -> Option<Duration> {
        if self.held.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(
            self.activity
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed(),
        )
    }

    fn note(&self, line: String) {
        tracing::info!(fault = %line, "fault injected");
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    /// `inner` with this plan injected into the requests of `incarnation`.
    pub fn client(self: &Arc<Self>, inner: kube::Client, incarnation: Incarnation) -> kube::Client {
        let this = self.clone();
        let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
            let this = this.clone();
            let inner = inner.clone();
            let inc = incarnation.clone();
            async move { this.handle(inner, inc, req).await }
        });
        kube::Client::new(svc, "default")
    }

    async fn forward(
        inner: &kube::Client,
        req: Request<kube::client::Body>,
    ) -> Result<Response<Body>, BoxError> {
        let resp = inner.send(req).await.map_err(|e| Box::new(e) as BoxError)?;
        Ok(resp.map(|b| b.map_err(|e| Box::new(e) as BoxError).boxed_unsync()))
    }

    async fn handle(
        self: Arc<Self>,
        inner: kube::Client,
        inc: Incarnation,
        mut req: Request<kube::client::Body>,
    ) -> Result<Response<Body>, BoxError> {
        if inc.dead.is_cancelled() {
            return Err(crashed());
        }
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or("").to_string();
        if is_write(req.method()) && !uncounted(&path) {
            let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
            self.touch();
            let Some(kind) = self.plan.at(n) else {
                let r = Self::forward(&inner, req).await;
                self.touch();
                return r;
            };
            let what = format!("{kind}@{n}: {} {path}", req.method());
            let target = target_of(&path);
            if let Some(error) = refusal(kind, target.as_ref()) {
                self.note(what);
                return Ok(status_response(&error));
            }
            if matches!(kind, FaultKind::WatchDelay | FaultKind::WatchDrop) {
                // armed before the write is sent: its event may reach the informer before
                // its answer reaches the writer
                let (parts, body) = req.into_parts();
                let bytes = body.collect_bytes().await?;
                let named: Meta = serde_json::from_slice::<Obj>(&bytes)
                    .map(|o| o.metadata)
                    .unwrap_or_default();
                let generate = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v["metadata"]["generateName"].as_str().map(str::to_string));
                req = Request::from_parts(parts, kube::client::Body::from(bytes.to_vec()));
                if let Some(t) = &target {
                    let (name, prefix) = match (t.name.clone().or(named.name), generate) {
                        (Some(n), _) => (n, false),
                        (None, Some(g)) => (g, true),
                        (None, None) => (String::new(), true),
                    };
                    self.watch_faults
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(WatchFault {
                            step: n,
                            drop: kind == FaultKind::WatchDrop,
                            collection: t.collection.clone(),
                            namespace: t.namespace.clone(),
                            name,
                            prefix,
                            resource_version: 0,
                        });
                }
            }
            let resp = Self::forward(&inner, req).await;
            self.touch();
            let (parts, body) = resp?.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let meta = serde_json::from_slice::<Obj>(&bytes)
                .map(|o| o.metadata)
                .unwrap_or_default();
            let rv = meta
                .resource_version
                .as_deref()
                .and_then(|v| v.parse::<u64>().ok());
            self.note(format!("{what} (resourceVersion {rv:?})"));
            let answer = Response::from_parts(parts, full(bytes));
            match kind {
                FaultKind::Timeout => Ok(status_response(&ApiError::new(
                    504,
                    "Timeout",
                    "the server was unable to return a response in the time allotted, but may still be processing the request",
                ))),
                FaultKind::Crash | FaultKind::CrashStale => {
                    inc.dead.cancel();
                    let _ = self.signals.send(Signal {
                        kind,
                        incarnation: inc.id,
                        resource_version: rv,
                    });
                    Err(crashed())
                }
                FaultKind::LeaderMove => {
                    let _ = self.signals.send(Signal {
                        kind,
                        incarnation: inc.id,
                        resource_version: rv,
                    });
                    Ok(answer)
                }
                FaultKind::WatchDelay | FaultKind::WatchDrop => {
                    // not matched yet: now the exact object and version are known
                    let mut pending = self.watch_faults.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(f) = pending.iter_mut().find(|f| f.step == n) {
                        if let Some(name) = meta.name {
                            f.name = name;
                            f.prefix = false;
                        }
                        f.resource_version = rv.unwrap_or(0);
                    }
                    Ok(answer)
                }
                _ => Ok(answer),
            }
        } else if req.method() == Method::GET {
            let target = target_of(&path);
            let watch = query
                .split('&')
                .any(|p| p == "watch=true" || p == "watch=1");
            if let (Some(stale), Some(t)) = (inc.stale, target.as_ref()) {
                if t.name.is_none() && !query_has(&query, "continue") {
                    let key = format!("{}?{}", t.collection, t.namespace.as_deref().unwrap_or(""));
                    let first = !inc
                        .listed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains(&key);
                    if first && watch && query_has(&query, "sendInitialEvents") {
                        // make the informer list (at the stale version) instead
                        return Ok(status_response(&ApiError::new(
                            422,
                            "Invalid",
                            "sendInitialEvents is not accepted here (fault injection: stale start)",
                        )));
                    }
                    // only an informer's list (paginated: it sends `limit`) lags; a
                    // controller's own direct list is a quorum read
                    if first && !watch && query_has(&query, "limit") {
                        inc.listed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key);
                        let pq = format!("{path}?{}", stale_query(&query, stale));
                        self.note(format!("stale list of {} at {stale}", t.collection));
                        let mut parts = req.uri().clone().into_parts();
                        parts.path_and_query = pq.parse().ok();
                        if let Ok(uri) = http::Uri::from_parts(parts) {
                            *req.uri_mut() = uri;
                        }
                    }
                }
            }
            let resp = Self::forward(&inner, req).await?;
            if watch && resp.status().is_success() {
                if let Some(t) = target {
                    return Ok(self.filter_watch(resp, t.collection, inc));
                }
            }
            Ok(resp)
        } else {
            Self::forward(&inner, req).await
        }
    }

    /// The watch answer with the planned events delayed or dropped.
    fn filter_watch(
        self: Arc<Self>,
        resp: Response<Body>,
        collection: String,
        inc: Incarnation,
    ) -> Response<Body> {
        let (parts, body) = resp.into_parts();
        let (tx, rx) =
            futures::channel::mpsc::channel::<Result<hyper::body::Frame<Bytes>, BoxError>>(16);
        tokio::spawn(async move {
            // a watch waiting to end after a dropped event counts as held until it ends
            let mut guard = Held(None);
            let mut tx = tx;
            let mut stream = body.into_data_stream();
            let mut buf = BytesMut::new();
            let mut end_at: Option<tokio::time::Instant> = None;
            loop {
                let chunk = tokio::select! {
                    _ = inc.dead.cancelled() => return,
                    _ = async {
                        match end_at {
                            Some(t) => tokio::time::sleep_until(t).await,
                            None => std::future::pending().await,
                        }
                    } => {
                        let gone = serde_json::json!({"type": "ERROR", "object":
                            ApiError::gone("too old resource version (fault injection: dropped event)").to_status()});
                        let _ = futures::SinkExt::send(&mut tx, Ok(hyper::body::Frame::data(Bytes::from(format!("{gone}\n"))))).await;
                        return;
                    }
                    c = stream.next() => c,
                };
                let chunk = match chunk {
                    Some(Ok(c)) => c,
                    Some(Err(e)) => {
                        let _ = futures::SinkExt::send(&mut tx, Err(e)).await;
                        return;
                    }
                    None => break,
                };
                buf.extend_from_slice(&chunk);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line = buf.split_to(pos + 1).freeze();
                    match self.watch_fault_for(&collection, &line) {
                        Some(f) if f.drop => {
                            if end_at.is_none() {
                                self.held.fetch_add(1, Ordering::SeqCst);
                                guard.0 = Some(self.clone());
                            }
                            self.touch();
                            self.note(format!(
                                "dropped the watch event of {}/{} ({})",
                                collection, f.name, f.resource_version
                            ));
                            end_at = Some(tokio::time::Instant::now() + WATCH_FAULT_DELAY);
                            continue;
                        }
                        Some(f) => {
                            self.note(format!(
                                "delayed the watch event of {}/{} ({})",
                                collection, f.name, f.resource_version
                            ));
                            self.held.fetch_add(1, Ordering::SeqCst);
                            self.touch();
                            tokio::select! {
                                _ = inc.dead.cancelled() => {}
                                _ = tokio::time::sleep(WATCH_FAULT_DELAY) => {}
                            }
                            self.held.fetch_sub(1, Ordering::SeqCst);
                            self.touch();
                            if inc.dead.is_cancelled() {
                                break;
                            }
                        }
                        None => {}
                    }
                    if futures::SinkExt::send(&mut tx, Ok(hyper::body::Frame::data(line)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
            if !buf.is_empty() {
                let _ = futures::SinkExt::send(&mut tx, Ok(hyper::body::Frame::data(buf.freeze())))
                    .await;
            }
        });
        Response::from_parts(parts, StreamBody::new(rx).boxed_unsync())
    }

    /// The pending watch fault this event line matches (taken off the list).
    fn watch_fault_for(&self, collection: &str, line: &[u8]) -> Option<WatchFault> {
        let mut pending = self.watch_faults.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_empty() {
            return None;
        }
        let frame: Frame = serde_json::from_slice(line).ok()?;
        if frame.kind == "BOOKMARK" || frame.kind == "ERROR" {
            return None;
        }
        let meta = frame.object.metadata;
        let rv = meta
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let name = meta.name.as_deref().unwrap_or_default();
        let i = pending.iter().position(|f| {
            f.collection == collection
                && (if f.prefix {
                    frame.kind == "ADDED" && name.starts_with(&f.name)
                } else {
                    f.name == name
                })
                && f.namespace.as_deref() == meta.namespace.as_deref()
                && rv >= f.resource_version
        })?;
        Some(pending.remove(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_print_and_parse() {
        let p: Plan = "delay@5, crash@3".parse().expect("plan");
        assert_eq!(p.to_string(), "crash@3,delay@5");
        assert_eq!(p.at(3), Some(FaultKind::Crash));
        assert_eq!(p.at(4), None);
        assert_eq!("none".parse::<Plan>(), Ok(Plan::none()));
        for k in FaultKind::ALL {
            assert_eq!(
                Plan::one(k, 2).to_string().parse::<Plan>(),
                Ok(Plan::one(k, 2))
            );
        }
        assert!("crash".parse::<Plan>().is_err());
        assert!("crash@0".parse::<Plan>().is_err());
        assert!("melt@1"
            .parse::<Plan>()
            .unwrap_err()
            .contains("known: conflict"));
    }

    #[test]
    fn the_same_seed_gives_the_same_plans() {
        let a: Vec<Plan> = {
            let mut r = rng(7);
            (0..5)
                .map(|_| Plan::random(&mut r, &FaultKind::ALL, 12))
                .collect()
        };
        let b: Vec<Plan> = {
            let mut r = rng(7);
            (0..5)
                .map(|_| Plan::random(&mut r, &FaultKind::ALL, 12))
                .collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|p| (1..=3).contains(&p.faults.len())));
        assert!(a
            .iter()
            .flat_map(|p| &p.faults)
            .all(|f| (1..=12).contains(&f.at)));
    }

    #[test]
    fn sampled_steps_are_distinct_and_start_at_one() {
        let s = sample_steps(&mut rng(3), 20, 4);
        assert_eq!(s.len(), 4);
        assert_eq!(s[0], 1);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_steps(&mut rng(3), 3, 10), vec![1, 2, 3]);
    }

    #[test]
    fn targets_name_the_collection() {
        let t = target_of("/api/v1/namespaces/x/pods/p/status").expect("target");
        assert_eq!(t.collection, "/api/v1/pods");
        assert_eq!(t.namespace.as_deref(), Some("x"));
        assert_eq!(t.name.as_deref(), Some("p"));
        let t = target_of("/apis/apps/v1/namespaces/x/replicasets").expect("target");
        assert_eq!(t.collection, "/apis/apps/v1/replicasets");
        assert_eq!(t.name, None);
        let t = target_of("/api/v1/namespaces/x").expect("namespace itself");
        assert_eq!(
            (t.collection.as_str(), t.name.as_deref()),
            ("/api/v1/namespaces", Some("x"))
        );
        let t = target_of("/api/v1/nodes/n1").expect("node");
        assert_eq!(
            (t.collection.as_str(), t.namespace),
            ("/api/v1/nodes", None)
        );
        assert!(uncounted("/api/v1/namespaces/x/events"));
        assert!(uncounted(
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l"
        ));
        assert!(!uncounted("/api/v1/namespaces/x/pods"));
    }

    #[test]
    fn stale_lists_name_an_exact_version() {
        assert_eq!(
            stale_query("limit=500&resourceVersion=0", 41),
            "limit=500&resourceVersion=41&resourceVersionMatch=Exact"
        );
    }
}
