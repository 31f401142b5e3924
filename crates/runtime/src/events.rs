//! Events: tell humans what a controller did, as `events.k8s.io/v1` Events.
//!
//! An [`EventBroadcaster`] is made once per process (the manager owns it). It owns one
//! background task that writes Events to the API server; controllers get cheap,
//! cloneable [`EventRecorder`]s from it, one per controller
//! ([`EventBroadcaster::recorder`]). [`EventRecorder::event`] never blocks and never
//! fails: it decides at once what happens to the event and hands any write to the
//! background task through a bounded queue. The semantics follow client-go's
//! `tools/events` recorder, with the per-object spam filter of `tools/record`:
//!
//! * **Names and placement.** An Event is named `<regarding name>.<hex nanoseconds>`
//!   and lives in the namespace of the object it is about (`default` for cluster-scoped
//!   objects). `eventTime` is when it was first observed; `reportingController` and
//!   `reportingInstance` say who reported it. Notes longer than 1 KiB are cut to fit
//!   (the API server rejects longer ones).
//! * **Series.** An event isomorphic to one seen within the last
//!   [`series_window`](EventBroadcasterOptions::series_window) (6 minutes: same
//!   regarding, related, reporting controller and instance, action, reason, type and
//!   note) does not create an object: it bumps `series.count` and
//!   `series.lastObservedTime` of the existing Event. These updates are batched and
//!   written every [`series_flush_interval`](EventBroadcasterOptions::series_flush_interval)
//!   (30 s), so a hot loop costs at most one write per series per interval. (client-go
//!   writes the second occurrence at once, then only a 30-minute heartbeat and a last
//!   count when the series ends; flushing every 30 s keeps `kubectl get events`
//!   current at the same bounded cost.) A series whose Event was deleted meanwhile is
//!   created afresh. As upstream, the regarding reference includes its resourceVersion.
//!   At most [`series_cache_size`](EventBroadcasterOptions::series_cache_size) events
//!   (1024) are remembered for series; beyond it the least recently seen are forgotten
//!   (written ones first), so that a burst of distinct events (pods created by the
//!   thousand, each a distinct note) costs bounded memory (about 3 KiB an event), while
//!   an event that keeps repeating stays among the recently seen; a repeat of a
//!   forgotten event creates a new Event. (client-go's `tools/record` bounds its caches
//!   at 4096; `tools/events` keeps every event of the last 6 minutes.)
//! * **Rate limit.** Each reporter gets a token bucket per regarding object (burst 25,
//!   one more token every 5 minutes, as client-go's `EventSourceObjectSpamFilter`).
//!   Events beyond it are dropped, including repeats that would only bump a series.
//! * **Failures.** Network errors, 429 and 5xx are retried with exponential backoff a
//!   few times; other 4xx are logged and given up. When the shutdown token is
//!   cancelled, the task writes what is still queued or pending (one attempt each,
//!   bounded by [`shutdown_timeout`](EventBroadcasterOptions::shutdown_timeout)) and
//!   stops.
//!
//! [`EventCounters`] (`emitted`, `aggregated`, `dropped`, `failed`) feed the metrics.
//!
//! ```no_run
//! # async fn demo(client: kube::Client, cm: k8s_openapi::api::core::v1::ConfigMap) {
//! use coxswain_runtime::events::{object_reference, reporting_instance, EventBroadcaster, EventType};
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let broadcaster = EventBroadcaster::new(client, cancel.clone());
//! let recorder = broadcaster.recorder("demo-controller", &reporting_instance("demo-controller"));
//! recorder.event(&object_reference(&cm), None, EventType::Normal, "Synced", "Sync", "configuration applied");
//! cancel.cancel();
//! broadcaster.stopped().await;
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The longest note the API server accepts (upstream `NoteLengthLimit`, 1 KiB).
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// Longest `reportingInstance` (and `action`, `reason`) the API server accepts.
const FIELD_LENGTH_LIMIT: usize = 128;

/// The type of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

impl EventType {
    /// The API value (`Normal` or `Warning`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Tuning of an [`EventBroadcaster`]; [`Default`] gives the upstream values.
#[derive(Clone, Debug)]
pub struct EventBroadcasterOptions {
    /// Events waiting to be created; beyond this, new events are dropped (1000).
    pub queue_capacity: usize,
    /// How often pending series updates are written (30 s).
    pub series_flush_interval: Duration,
    /// How long after its last occurrence an event still joins a series (6 min).
    pub series_window: Duration,
    /// Events remembered for series (1024); beyond it the least recently seen are
    /// forgotten, those with unwritten occurrences last.
    pub series_cache_size: usize,
    /// Events a reporter may emit about one object at once (25).
    pub burst: u32,
    /// Time to earn back one event of the burst (5 min).
    pub refill_interval: Duration,
    /// Objects whose rate-limit state is remembered (4096); beyond it the least
    /// recently seen is forgotten.
    pub rate_limit_cache_size: usize,
    /// Attempts per write before it is given up (5).
    pub max_tries: u32,
    /// Wait before the first retry; it doubles each time (1 s).
    pub retry_backoff: Duration,
    /// Longest wait between retries (30 s).
    pub max_retry_backoff: Duration,
    /// Longest time spent writing what is left once the shutdown token fired (5 s).
    pub shutdown_timeout: Duration,
}

impl Default for EventBroadcasterOptions {
    fn default() -> Self {
        EventBroadcasterOptions {
            queue_capacity: 1000,
            series_flush_interval: Duration::from_secs(30),
            series_window: Duration::from_secs(6 * 60),
            series_cache_size: 1024,
            burst: 25,
            refill_interval: Duration::from_secs(5 * 60),
            rate_limit_cache_size: 4096,
            max_tries: 5,
            retry_backoff: Duration::from_secs(1),
            max_retry_backoff: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(5),
        }
    }
}

/// What became of the events given to a broadcaster's recorders (for metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounters {
    /// Events accepted as a new Event object (queued for creation).
    pub emitted: u64,
    /// Events accepted as one more occurrence of an existing series.
    pub aggregated: u64,
    /// Events dropped: over the rate limit, queue full, invalid, or after shutdown.
    pub dropped: u64,
    /// Writes (creations or series updates) given up after errors.
    pub failed: u64,
}

/// The reference to `obj` that Events use: apiVersion, kind, namespace, name, uid and
/// resourceVersion.
pub fn object_reference<K: kube::Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// The usual `reportingInstance` of a controller: `<controller>-<hostname>` (as
/// client-go), cut to the 128 characters the API server accepts.
pub fn reporting_instance(controller: &str) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let mut instance = format!("{controller}-{host}");
    instance.truncate(floor_char_boundary(&instance, FIELD_LENGTH_LIMIT));
    instance
}

/// Owns the background task that writes Events and hands out [`EventRecorder`]s.
///
/// Cloning shares the same task. The task stops when the shutdown token is
/// cancelled (or when the broadcaster and all its recorders are dropped).
#[derive(Clone)]
pub struct EventBroadcaster {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Command>,
    done: CancellationToken,
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcaster")
            .field("counters", &self.counters())
            .finish_non_exhaustive()
    }
}

impl EventBroadcaster {
    /// A broadcaster with the default options writing through `client`; it stops on
    /// `cancel`.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its task).
    pub fn new(client: kube::Client, cancel: CancellationToken) -> EventBroadcaster {
        Self::with_options(client, cancel, EventBroadcasterOptions::default())
    }

    /// A broadcaster with the given options.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its task).
    pub fn with_options(
        client: kube::Client,
        cancel: CancellationToken,
        options: EventBroadcasterOptions,
    ) -> EventBroadcaster {
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let shared = Arc::new(Shared::new(client, options));
        let done = CancellationToken::new();
        let task = run(shared.clone(), rx, cancel, done.clone());
        tokio::spawn(task.instrument(tracing::info_span!("event-broadcaster")));
        EventBroadcaster { shared, tx, done }
    }

    /// A recorder for one controller. `reporting_controller` names the controller
    /// (e.g. `deployment-controller`), `reporting_instance` this process (usually
    /// [`reporting_instance`]`(reporting_controller)`).
    pub fn recorder(&self, reporting_controller: &str, reporting_instance: &str) -> EventRecorder {
        EventRecorder {
            shared: self.shared.clone(),
            tx: self.tx.clone(),
            reporting_controller: reporting_controller.into(),
            reporting_instance: reporting_instance.into(),
        }
    }

    /// What became of the events so far.
    pub fn counters(&self) -> EventCounters {
        self.shared.counters()
    }

    /// Write every event queued before this call and every pending series update, then
    /// return (retries included). Returns at once once the task has stopped.
    pub async fn flush(&self) {
        let (reply, done) = oneshot::channel();
        if self.tx.send(Command::Flush(reply)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// Wait until the background task has stopped (after the shutdown token fired and
    /// what was left got written).
    pub async fn stopped(&self) {
        self.done.cancelled().await;
    }
}

/// Records events for one controller; cheap to clone.
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Command>,
    reporting_controller: Arc<str>,
    reporting_instance: Arc<str>,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporting_controller", &self.reporting_controller)
            .field("reporting_instance", &self.reporting_instance)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// Record that `action` was taken (or failed) about `regarding`, because of
    /// `reason`, explained by `note` (cut to [`NOTE_LENGTH_LIMIT`] bytes). `related`
    /// is an optional second object (e.g. the Pod a ReplicaSet created).
    ///
    /// Never blocks and never fails: the event is aggregated into a series, queued for
    /// creation, or dropped and counted (see the module documentation).
    pub fn event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let counter = match self.record(regarding, related, type_, reason, action, note) {
            Ok(counter) => counter,
            Err((why, loud)) => {
                let dropped = self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                let object = regarding.name.as_deref().unwrap_or_default();
                // a full queue drops events by the thousand under load: warn at the 1st,
                // 2nd, 4th, 8th... drop so the log says so without a line per event
                if loud && dropped.is_power_of_two() {
                    tracing::warn!(object, reason, dropped, "event dropped: {why}");
                } else {
                    tracing::debug!(object, reason, dropped, "event dropped: {why}");
                }
                return;
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Aggregate or queue the event; the counter to bump, or why (and whether to warn)
    /// it was dropped.
    fn record(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Result<&AtomicU64, (&'static str, bool)> {
        let (shared, counters) = (&*self.shared, &self.shared.counters);
        let name = regarding.name.as_deref().unwrap_or_default();
        if name.is_empty() || reason.is_empty() || action.is_empty() {
            return Err(("no regarding name, reason or action", true));
        }
        let note = truncate_note(note);
        let (now, timestamp) = (Instant::now(), MicroTime(Timestamp::now()));
        let key = SeriesKey {
            type_,
            action: action.into(),
            reason: reason.into(),
            note: note.clone(),
            reporter: [
                self.reporting_controller.clone(),
                self.reporting_instance.clone(),
            ],
            regarding: ref_key(regarding, true),
            related: related.map(|r| ref_key(r, true)),
        };
        let mut state = shared.lock();
        let spam_key = (key.reporter.clone(), ref_key(regarding, false));
        if !state.try_accept(spam_key, now, &shared.options) {
            return Err(("over the per-object rate limit", false));
        }
        if let Some(entry) = state.series.get_mut(&key) {
            if now.duration_since(entry.last_seen) <= shared.options.series_window {
                entry.count = entry.count.saturating_add(1);
                (entry.last_seen, entry.last_observed, entry.dirty) = (now, timestamp, true);
                return Ok(&counters.aggregated);
            }
        }
        let namespace = regarding.namespace.clone().filter(|ns| !ns.is_empty());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name(name, shared.unique_suffix())),
                namespace: Some(namespace.unwrap_or_else(|| "default".into())),
                ..ObjectMeta::default()
            },
            event_time: Some(timestamp.clone()),
            reporting_controller: Some(self.reporting_controller.to_string()),
            reporting_instance: Some(self.reporting_instance.to_string()),
            action: Some(action.into()),
            reason: Some(reason.into()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: Some(note),
            type_: Some(type_.as_str().into()),
            ..Event::default()
        };
        match self.tx.try_send(Command::Create(Box::new(event.clone()))) {
            Ok(()) => {
                let entry = SeriesEntry {
                    event: Box::new(event),
                    count: 1,
                    last_observed: timestamp,
                    last_seen: now,
                    dirty: false,
                };
                state.remember(key, entry, now, &shared.options);
                Ok(&counters.emitted)
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(("the event queue is full", true)),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(("the broadcaster stopped", false)),
        }
    }

    /// What became of the events of this recorder's broadcaster so far.
    pub fn counters(&self) -> EventCounters {
        self.shared.counters()
    }
}

// ---------------------------------------------------------------------------------------
// shared state

enum Command {
    Create(Box<Event>),
    Flush(oneshot::Sender<()>),
}

#[derive(Default)]
struct Counters {
    emitted: AtomicU64,
    aggregated: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

struct Shared {
    client: kube::Client,
    options: EventBroadcasterOptions,
    state: Mutex<State>,
    counters: Counters,
    /// Last name suffix handed out (nanoseconds since the epoch, strictly increasing).
    last_suffix: AtomicU64,
}

impl Shared {
    fn new(client: kube::Client, options: EventBroadcasterOptions) -> Shared {
        let state = Mutex::new(State::default());
        let (counters, last_suffix) = (Counters::default(), AtomicU64::new(0));
        Shared {
            client,
            options,
            state,
            counters,
            last_suffix,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent between statements, so a panic elsewhere while
        // holding the lock leaves nothing half-done: keep going.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn counters(&self) -> EventCounters {
        let c = &self.counters;
        EventCounters {
            emitted: c.emitted.load(Ordering::Relaxed),
            aggregated: c.aggregated.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }

    /// The current time in nanoseconds, bumped if needed so that no two events of this
    /// process share a name.
    fn unique_suffix(&self) -> u64 {
        let now = u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or_default();
        let next = |prev: u64| now.max(prev.saturating_add(1));
        let prev = self
            .last_suffix
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| Some(next(p)));
        next(prev.unwrap_or_else(|p| p))
    }
}

/// apiVersion, kind, namespace, name, uid and, for series, resourceVersion and
/// fieldPath (client-go keys series on the whole reference, rate limits on the object).
fn ref_key(r: &ObjectReference, whole: bool) -> Vec<Option<String>> {
    let mut key = vec![
        r.api_version.clone(),
        r.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
        r.uid.clone(),
    ];
    if whole {
        key.extend([r.resource_version.clone(), r.field_path.clone()]);
    }
    key
}

/// What makes two events isomorphic (client-go's `eventKey`, plus the note).
#[derive(Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    type_: EventType,
    action: String,
    reason: String,
    note: String,
    /// reportingController, reportingInstance
    reporter: [Arc<str>; 2],
    regarding: Vec<Option<String>>,
    related: Option<Vec<Option<String>>>,
}

/// Rate limits are per reporter and object (client-go's spam key without the type).
type SpamKey = ([Arc<str>; 2], Vec<Option<String>>);

struct SeriesEntry {
    /// The Event as first created (without series); boxed, so that the map's table,
    /// which has room for twice the entries it holds, holds pointers, not Events.
    event: Box<Event>,
    count: i32,
    last_observed: MicroTime,
    last_seen: Instant,
    /// The count changed since it was last written.
    dirty: bool,
}

/// Make room for one more entry in a cache of at most `cap` entries: when it is full,
/// drop the entries `dead` says are worth nothing; if it is still crowded, drop the
/// quarter that sorts first by `order` at once, so that the next cap/4 new entries need
/// no scan (amortised, where evicting one at a time made every new entry scan the whole
/// cache).
fn make_room<K: Clone + Eq + std::hash::Hash, V, O: Ord>(
    map: &mut HashMap<K, V>,
    cap: usize,
    dead: impl Fn(&V) -> bool,
    order: impl Fn(&V) -> O,
) {
    if map.len() < cap.max(1) {
        return;
    }
    map.retain(|_, v| !dead(v));
    let keep = cap - cap / 4;
    if map.len() >= cap.max(1) || map.len() > keep {
        let mut by_order: Vec<(O, K)> = map.iter().map(|(k, v)| (order(v), k.clone())).collect();
        by_order.sort_by(|a, b| a.0.cmp(&b.0));
        let excess = map.len().saturating_sub(keep).max(1);
        for (_, k) in by_order.into_iter().take(excess) {
            map.remove(&k);
        }
    }
}

/// Tokens left and when they were counted.
type Bucket = (f64, Instant);

#[derive(Default)]
struct State {
    series: HashMap<SeriesKey, SeriesEntry>,
    buckets: HashMap<SpamKey, Bucket>,
}

impl State {
    /// Take one token from the bucket of `key`, refilled for the time passed.
    fn try_accept(&mut self, key: SpamKey, now: Instant, opts: &EventBroadcasterOptions) -> bool {
        let burst = f64::from(opts.burst);
        let refill = opts.refill_interval.as_secs_f64();
        let refilled = |b: &Bucket| {
            if refill <= 0.0 {
                return burst;
            }
            let earned = now.duration_since(b.1).as_secs_f64() / refill;
            (b.0 + earned).min(burst)
        };
        if !self.buckets.contains_key(&key) {
            // a full bucket is the same as no bucket
            make_room(
                &mut self.buckets,
                opts.rate_limit_cache_size,
                |b| refilled(b) >= burst,
                |b| (false, b.1),
            );
        }
        let bucket = self.buckets.entry(key).or_insert((burst, now));
        let tokens = refilled(bucket);
        let accept = tokens >= 1.0;
        *bucket = (if accept { tokens - 1.0 } else { tokens }, now);
        accept
    }

    /// Remember a new series, making room first if the cache is full: ended series go
    /// first, then the least recently seen (written ones before those with unwritten
    /// occurrences, whose count is then lost).
    fn remember(
        &mut self,
        key: SeriesKey,
        entry: SeriesEntry,
        now: Instant,
        opts: &EventBroadcasterOptions,
    ) {
        if !self.series.contains_key(&key) {
            let window = opts.series_window;
            make_room(
                &mut self.series,
                opts.series_cache_size,
                |e| !e.dirty && now.duration_since(e.last_seen) > window,
                |e| (e.dirty, e.last_seen),
            );
        }
        self.series.insert(key, entry);
    }

    /// Events of series with unwritten occurrences; marks them written.
    fn take_dirty(&mut self) -> Vec<Event> {
        self.series
            .values_mut()
            .filter(|e| e.dirty)
            .map(|e| {
                e.dirty = false;
                let (count, last_observed_time) = (e.count, e.last_observed.clone());
                let series = Some(EventSeries {
                    count,
                    last_observed_time,
                });
                Event {
                    series,
                    ..(*e.event).clone()
                }
            })
            .collect()
    }

    /// Forget series that ended (nothing seen within the window, all written).
    fn expire(&mut self, now: Instant, window: Duration) {
        self.series
            .retain(|_, e| e.dirty || now.duration_since(e.last_seen) <= window);
    }
}

// ---------------------------------------------------------------------------------------
// background task

async fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Command>,
    cancel: CancellationToken,
    done: CancellationToken,
) {
    let opts = &shared.options;
    let period = opts.series_flush_interval.max(Duration::from_millis(1));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let why = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break "the shutdown token was cancelled",
            _ = tick.tick() => {
                // Creations queued before the tick go first, so that the series
                // updates find their Events; bounded so that the tick always ends.
                for _ in 0..rx.len() {
                    let Ok(cmd) = rx.try_recv() else { break };
                    shared.handle(cmd, &cancel).await;
                }
                shared.flush_series(&cancel).await;
                shared.lock().expire(Instant::now(), opts.series_window);
            }
            cmd = rx.recv() => match cmd {
                Some(cmd) => shared.handle(cmd, &cancel).await,
                None => break "the broadcaster and all its recorders were dropped",
            },
        }
    };
    tracing::info!(
        reason = why,
        "event broadcaster stopping, writing what is left"
    );
    rx.close();
    // one attempt per write from now on (`cancel` itself may not have fired)
    let stop = CancellationToken::new();
    stop.cancel();
    let left = async {
        while let Some(cmd) = rx.recv().await {
            shared.handle(cmd, &stop).await;
        }
        shared.flush_series(&stop).await;
    };
    if tokio::time::timeout(opts.shutdown_timeout, left)
        .await
        .is_err()
    {
        tracing::warn!("event broadcaster gave up writing the remaining events at shutdown");
    }
    tracing::info!(reason = why, "event broadcaster stopped");
    done.cancel();
}

impl Shared {
    async fn handle(&self, cmd: Command, cancel: &CancellationToken) {
        match cmd {
            Command::Create(event) => self.write(*event, false, cancel).await,
            Command::Flush(reply) => {
                self.flush_series(cancel).await;
                let _ = reply.send(());
            }
        }
    }

    async fn flush_series(&self, cancel: &CancellationToken) {
        let pending = self.lock().take_dirty();
        for event in pending {
            self.write(event, true, cancel).await;
        }
    }

    /// Create `event`, or update its series; retry transient errors with backoff, at
    /// most once more after `cancel` fired.
    async fn write(&self, event: Event, series: bool, cancel: &CancellationToken) {
        let opts = &self.options;
        let (mut backoff, mut tries) = (opts.retry_backoff, 0);
        let name = event.metadata.name.as_deref().unwrap_or_default();
        let what = if series { "series update" } else { "create" };
        let err = loop {
            tries += 1;
            let result = if series {
                self.update_series(&event).await
            } else {
                self.create(&event).await
            };
            let err = match result {
                Ok(()) => return,
                Err(err) if !retryable(&err) => break err,
                Err(err) => err,
            };
            if tries >= opts.max_tries.max(1) || cancel.is_cancelled() {
                break err;
            }
            tracing::debug!(name, what, tries, error = %err, "event not written, will retry");
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = cancel.cancelled() => {}
            }
            backoff = (backoff * 2).min(opts.max_retry_backoff);
        };
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
        if matches!(&err, kube::Error::Api(s) if s.code == 409) {
            // the same name twice: upstream logs this quietly too
            tracing::debug!(name, what, error = %err, "event already exists");
        } else {
            tracing::warn!(name, what, tries, error = %err, "event not written, giving up");
        }
    }

    /// Patch the series of the Event; if it is gone (404), create it again. That
    /// creation can race another writer's (409): then patch once more.
    async fn update_series(&self, event: &Event) -> Result<(), kube::Error> {
        let patch = serde_json::json!({ "series": &event.series });
        let name = event.metadata.name.as_deref().unwrap_or_default();
        let mut round = 0;
        loop {
            round += 1;
            let params = PatchParams::default();
            match self
                .api(event)
                .patch(name, &params, &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err),
            }
            match self.create(event).await {
                Err(kube::Error::Api(s)) if s.code == 409 && round < 2 => {}
                other => return other,
            }
        }
    }

    async fn create(&self, event: &Event) -> Result<(), kube::Error> {
        let pp = PostParams::default();
        self.api(event).create(&pp, event).await.map(|_| ())
    }

    fn api(&self, event: &Event) -> Api<Event> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// Whether a failed write may succeed when tried again: network errors, 429 and 5xx.
fn retryable(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500 || status.code == 0,
        kube::Error::SerdeError(_)
        | kube::Error::BuildRequest(_)
        | kube::Error::HttpError(_)
        | kube::Error::FromUtf8(_) => false,
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------
// helpers

/// Cut `note` to [`NOTE_LENGTH_LIMIT`] bytes, ending in ` ...` when cut (as the
/// scheduler's `truncateMessage`), on a character boundary.
fn truncate_note(note: &str) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note.to_string();
    }
    const SUFFIX: &str = " ...";
    let end = floor_char_boundary(note, NOTE_LENGTH_LIMIT - SUFFIX.len());
    format!("{}{SUFFIX}", &note[..end])
}

/// The largest index `<= max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

/// `<name>.<hex suffix>`, or `event.<hex suffix>` when that is not a valid object name
/// (client-go falls back to a UUID; the suffix is unique in this process already).
fn event_name(regarding_name: &str, suffix: u64) -> String {
    let name = format!("{regarding_name}.{suffix:x}");
    if apimachinery::names::is_dns1123_subdomain(&name).is_empty() {
        name
    } else {
        format!("event.{suffix:x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_bucket_allows_the_burst_then_refills() {
        let opts = EventBroadcasterOptions {
            burst: 3,
            refill_interval: Duration::from_secs(10),
            rate_limit_cache_size: 2,
            ..EventBroadcasterOptions::default()
        };
        let key = |n: &str| -> SpamKey { (["c".into(), "i".into()], vec![Some(n.into())]) };
        let (mut state, t0) = (State::default(), Instant::now());
        let at = |secs| t0 + Duration::from_secs(secs);
        assert_eq!(
            (0..5)
                .filter(|_| state.try_accept(key("a"), t0, &opts))
                .count(),
            3
        );
        assert!(!state.try_accept(key("a"), at(9), &opts));
        assert!(state.try_accept(key("a"), at(11), &opts));
        assert!(!state.try_accept(key("a"), at(12), &opts));
        // other objects have their own buckets; the cache bound forgets the oldest
        assert!(state.try_accept(key("b"), t0, &opts));
        assert!(state.try_accept(key("c"), at(13), &opts));
        assert!(state.buckets.len() <= 2);
    }

    fn entry(last_seen: Instant, dirty: bool) -> SeriesEntry {
        SeriesEntry {
            event: Box::default(),
            count: 1,
            last_observed: MicroTime(Timestamp::now()),
            last_seen,
            dirty,
        }
    }

    fn series_key(note: &str) -> SeriesKey {
        SeriesKey {
            type_: EventType::Normal,
            action: "Create".into(),
            reason: "Created".into(),
            note: note.into(),
            reporter: ["c".into(), "i".into()],
            regarding: vec![Some("pod".into())],
            related: None,
        }
    }

    #[test]
    fn the_series_cache_forgets_ended_then_written_then_oldest_series() {
        let opts = EventBroadcasterOptions {
            series_cache_size: 8,
            series_window: Duration::from_secs(60),
            ..EventBroadcasterOptions::default()
        };
        let (mut state, t0) = (State::default(), Instant::now());
        let at = |secs| t0 + Duration::from_secs(secs);
        // 8 series: 0..4 written, 4..8 with unwritten occurrences
        for i in 0..8u64 {
            state.remember(
                series_key(&i.to_string()),
                entry(at(i), i >= 4),
                at(i),
                &opts,
            );
        }
        assert_eq!(state.series.len(), 8);
        // full: the oldest quarter goes, written ones first
        state.remember(series_key("8"), entry(at(8), false), at(8), &opts);
        let mut left: Vec<String> = state.series.keys().map(|k| k.note.clone()).collect();
        left.sort();
        assert_eq!(left, ["2", "3", "4", "5", "6", "7", "8"]);
        // series beyond the window go first, whatever their age order
        state.remember(series_key("9"), entry(at(100), false), at(100), &opts);
        assert_eq!(state.series.len(), 8);
        let now = at(100);
        let ended = state
            .series
            .values()
            .filter(|e| !e.dirty && now.duration_since(e.last_seen) > opts.series_window)
            .count();
        assert_eq!(
            ended, 3,
            "2, 3 and 8 have ended but the cache was not full yet"
        );
        for i in 10..12u64 {
            state.remember(
                series_key(&i.to_string()),
                entry(at(100), false),
                at(100),
                &opts,
            );
        }
        // full again: the ended ones go, every unwritten series stays
        let mut left: Vec<String> = state.series.keys().map(|k| k.note.clone()).collect();
        left.sort();
        assert_eq!(left, ["10", "11", "4", "5", "6", "7", "9"]);
        // all unwritten and full: the oldest go even so (their count is lost)
        let mut state = State::default();
        for i in 0..9u64 {
            state.remember(series_key(&i.to_string()), entry(at(i), true), at(i), &opts);
        }
        assert!(state.series.len() <= 8);
        assert!(!state.series.contains_key(&series_key("0")));
        assert!(state.series.contains_key(&series_key("8")));
    }
}
