//! Controllers: a workqueue of requests drained by reconcile workers.
//!
//! A request is usually an [`ObjectKey`] (`namespace/name`), but any [`Request`] type
//! works (controller-runtime's typed reconcilers): the garbage collector queues owner
//! references, for instance. A [`Reconciler`] says what to do for one request; the [`Controller`] guarantees one worker
//! per key at a time, requeues errors with the rate limiter, honours
//! [`Action::RequeueAfter`], drops terminal errors, catches panics (logged, counted,
//! requeued) and applies an optional timeout. Build one with
//! [`crate::builder::ControllerBuilder`].

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use tracing::Instrument;

use crate::metrics::{ControllerMetrics, Outcome};
use crate::object::ObjectKey;
use crate::workqueue::{
    default_controller_rate_limiter, QueueConfig, QueueKey, RateLimitedQueue, RateLimiter,
};

/// What a controller's queue holds: one unit of work, deduplicated by equality (an
/// [`ObjectKey`] by default). Its `Display` form names it in logs.
pub trait Request: QueueKey + std::fmt::Display + std::fmt::Debug {}
impl<T: QueueKey + std::fmt::Display + std::fmt::Debug> Request for T {}

/// What to do after a successful reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing more until the next change.
    Done,
    /// Reconcile again, after the rate limiter's delay.
    Requeue,
    /// Reconcile again after this delay.
    RequeueAfter(Duration),
}

/// A reconcile failure: requeued with backoff, unless terminal.
#[derive(Debug)]
pub struct ReconcileError {
    terminal: bool,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl ReconcileError {
    /// An error that retrying cannot fix: logged and counted, not requeued.
    pub fn terminal(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ReconcileError {
            terminal: true,
            source: e.into(),
        }
    }

    /// An error from a message (requeued).
    pub fn msg(m: impl Into<String>) -> Self {
        ReconcileError {
            terminal: false,
            source: m.into().into(),
        }
    }

    /// Whether the error is terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The same error, its message prefixed with `what` (`what: message`); terminal
    /// stays terminal.
    pub fn context(self, what: &str) -> Self {
        ReconcileError {
            terminal: self.terminal,
            source: format!("{what}: {}", self.source).into(),
        }
    }
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.terminal {
            write!(f, "terminal error: {}", self.source)
        } else {
            self.source.fmt(f)
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ReconcileError {
    fn from(e: E) -> Self {
        ReconcileError {
            terminal: false,
            source: Box::new(e),
        }
    }
}

/// The result of one reconcile.
pub type ReconcileResult = Result<Action, ReconcileError>;

/// What a reconcile knows besides the request.
#[derive(Clone, Debug)]
pub struct Context {
    /// The controller's name.
    pub controller: Arc<str>,
    /// Fires when the controller stops: long reconciles should give up.
    pub cancel: CancellationToken,
    /// How many times this request has been requeued after failures in a row.
    pub retries: u32,
}

/// Brings one object towards its desired state.
pub trait Reconciler<R = ObjectKey>: Send + Sync + 'static {
    /// Reconcile what `request` names.
    fn reconcile(&self, ctx: Context, request: R) -> impl Future<Output = ReconcileResult> + Send;
}

impl<F, Fut, R> Reconciler<R> for F
where
    F: Fn(Context, R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReconcileResult> + Send,
{
    fn reconcile(&self, ctx: Context, request: R) -> impl Future<Output = ReconcileResult> + Send {
        self(ctx, request)
    }
}

/// Controller options (defaults as controller-runtime's).
pub struct ControllerOptions<R = ObjectKey> {
    /// Workers reconciling different requests at the same time (default 1).
    pub max_concurrent_reconciles: usize,
    /// Abort a reconcile that runs longer (default: none).
    pub reconcile_timeout: Option<Duration>,
    /// Requeue backoff (default: max of per-item exponential 5 ms..1000 s and a 10 qps /
    /// 100 burst bucket).
    pub rate_limiter: Option<Arc<dyn RateLimiter<R>>>,
}

impl<R> Clone for ControllerOptions<R> {
    fn clone(&self) -> Self {
        ControllerOptions {
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            reconcile_timeout: self.reconcile_timeout,
            rate_limiter: self.rate_limiter.clone(),
        }
    }
}

impl<R> std::fmt::Debug for ControllerOptions<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("reconcile_timeout", &self.reconcile_timeout)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .finish()
    }
}

impl<R> Default for ControllerOptions<R> {
    fn default() -> Self {
        ControllerOptions {
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
            rate_limiter: None,
        }
    }
}

impl<R> ControllerOptions<R> {
    /// Options with `workers` concurrent reconciles (kube-controller-manager's
    /// `--concurrent-*-syncs`), the rest default.
    pub fn workers(workers: usize) -> Self {
        ControllerOptions {
            max_concurrent_reconciles: workers,
            ..ControllerOptions::default()
        }
    }

    /// The same options with this requeue backoff.
    pub fn with_rate_limiter(mut self, limiter: impl RateLimiter<R> + 'static) -> Self {
        self.rate_limiter = Some(Arc::new(limiter));
        self
    }
}

/// Counters of one controller (exported as controller-runtime's metrics by the manager).
#[derive(Debug, Default)]
pub struct ControllerStats {
    /// Reconciles that returned `Done`.
    pub success: AtomicU64,
    /// Reconciles that asked for a rate-limited requeue.
    pub requeue: AtomicU64,
    /// Reconciles that asked for a delayed requeue.
    pub requeue_after: AtomicU64,
    /// Reconciles that failed (retried).
    pub errors: AtomicU64,
    /// Reconciles that failed terminally.
    pub terminal_errors: AtomicU64,
    /// Reconciles that panicked.
    pub panics: AtomicU64,
    /// Workers currently reconciling.
    pub active_workers: AtomicI64,
}

/// Something that must sync before workers start (the controller's informers).
pub(crate) type SyncWait = Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// Something that feeds the queue while the controller runs (a timer, say): started once
/// the informers synced, stopped with the controller.
pub(crate) type Feeder<R> =
    Box<dyn FnOnce(RateLimitedQueue<R>, CancellationToken) -> BoxFuture<'static, ()> + Send>;

/// A controller ready to run.
pub struct Controller<Rec, R = ObjectKey> {
    name: String,
    queue: RateLimitedQueue<R>,
    reconciler: Arc<Rec>,
    options: ControllerOptions<R>,
    stats: Arc<ControllerStats>,
    metrics: ControllerMetrics,
    syncs: Vec<SyncWait>,
    feeders: Vec<Feeder<R>>,
}

/// The message of a caught panic (its `&str` or `String` payload).
pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl<Rec: Reconciler<R>, R: Request> Controller<Rec, R> {
    /// A controller named `name` whose queue is fed by the caller (through
    /// [`Controller::queue`]) rather than by informers: for work that comes from
    /// elsewhere, such as the garbage collector's dependency graph. Its reconciles are
    /// counted, timed, retried and recovered like those of any built controller.
    pub fn new(name: impl Into<String>, reconciler: Rec, options: ControllerOptions<R>) -> Self {
        let name = name.into();
        let queue = Self::new_queue(&name, &options);
        Self::assemble(name, queue, reconciler, options, Vec::new(), Vec::new())
    }

    /// As [`Controller::new`], with a queue made beforehand by [`Controller::new_queue`]
    /// (for reconcilers that need the queue themselves, to feed it).
    pub fn with_queue(
        name: impl Into<String>,
        queue: RateLimitedQueue<R>,
        reconciler: Rec,
        options: ControllerOptions<R>,
    ) -> Self {
        Self::assemble(
            name.into(),
            queue,
            reconciler,
            options,
            Vec::new(),
            Vec::new(),
        )
    }

    pub(crate) fn assemble(
        name: String,
        queue: RateLimitedQueue<R>,
        reconciler: Rec,
        options: ControllerOptions<R>,
        syncs: Vec<SyncWait>,
        feeders: Vec<Feeder<R>>,
    ) -> Self {
        let metrics =
            crate::metrics::global().controller(&name, options.max_concurrent_reconciles.max(1));
        Controller {
            name,
            queue,
            reconciler: Arc::new(reconciler),
            options,
            stats: Arc::default(),
            metrics,
            syncs,
            feeders,
        }
    }

    /// A rate-limited queue for controller `name` with these options' rate limiter; it
    /// records the `workqueue_*` metrics labelled with the name.
    pub fn new_queue(name: &str, options: &ControllerOptions<R>) -> RateLimitedQueue<R> {
        let limiter: Arc<dyn RateLimiter<R>> = match &options.rate_limiter {
            Some(l) => l.clone(),
            None => Arc::new(default_controller_rate_limiter::<R>()),
        };
        RateLimitedQueue::with_config(QueueConfig {
            name: name.to_string(),
            rate_limiter: Box::new(limiter),
            metrics: Some(crate::metrics::global().queue(name)),
        })
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The controller's queue (to enqueue by hand, or to inspect in tests).
    pub fn queue(&self) -> &RateLimitedQueue<R> {
        &self.queue
    }

    /// The controller's counters.
    pub fn stats(&self) -> Arc<ControllerStats> {
        self.stats.clone()
    }

    /// Wait for the informers to sync, then reconcile until `cancel` fires; in-flight
    /// reconciles finish before this returns.
    pub async fn run(self, cancel: CancellationToken) {
        for s in &self.syncs {
            tokio::select! {
                _ = s() => {}
                _ = cancel.cancelled() => return,
            }
        }
        tracing::info!(controller = %self.name, workers = self.options.max_concurrent_reconciles, "starting workers");
        let feeders: Vec<_> = self
            .feeders
            .into_iter()
            .map(|f| tokio::spawn(f(self.queue.clone(), cancel.clone())))
            .collect();
        // in-flight work gauges, refreshed as client-go does (every 500 ms)
        let ticker = {
            let (queue, cancel) = (self.queue.clone(), cancel.clone());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_millis(500));
                loop {
                    tokio::select! {
                        _ = every.tick() => queue.update_unfinished_work_metrics(),
                        _ = cancel.cancelled() => return,
                    }
                }
            })
        };
        let mut workers = Vec::new();
        for _ in 0..self.options.max_concurrent_reconciles.max(1) {
            let queue = self.queue.clone();
            let reconciler = self.reconciler.clone();
            let stats = self.stats.clone();
            let metrics = self.metrics.clone();
            let name: Arc<str> = Arc::from(self.name.as_str());
            let cancel = cancel.clone();
            let timeout = self.options.reconcile_timeout;
            workers.push(tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    stats.active_workers.fetch_add(1, Ordering::Relaxed);
                    metrics.add_active_workers(1);
                    let ctx = Context {
                        controller: name.clone(),
                        cancel: cancel.clone(),
                        retries: queue.num_requeues(&key),
                    };
                    let span = tracing::info_span!(
                        "reconcile",
                        controller = %name,
                        request = %key,
                        reconcile_id = %uuid::Uuid::new_v4(),
                    );
                    let started = std::time::Instant::now();
                    let outcome = process(ctx, &queue, reconciler.as_ref(), &stats, timeout, key)
                        .instrument(span)
                        .await;
                    metrics.observe(outcome, started.elapsed());
                    metrics.add_active_workers(-1);
                    stats.active_workers.fetch_sub(1, Ordering::Relaxed);
                }
            }));
        }
        cancel.cancelled().await;
        tracing::info!(controller = %self.name, "stopping: shutdown requested; draining in-flight reconciles");
        self.queue.shut_down_with_drain().await;
        for w in workers {
            let _ = w.await;
        }
        ticker.abort();
        for f in feeders {
            f.abort();
        }
        tracing::info!(controller = %self.name, "stopped: all workers finished");
    }
}

async fn process<Rec: Reconciler<R>, R: Request>(
    ctx: Context,
    queue: &RateLimitedQueue<R>,
    reconciler: &Rec,
    stats: &ControllerStats,
    timeout: Option<Duration>,
    key: R,
) -> Outcome {
    let name = ctx.controller.clone();
    let name = name.as_ref();
    let fut = AssertUnwindSafe(reconciler.reconcile(ctx, key.clone())).catch_unwind();
    let outcome = match timeout {
        Some(t) => match tokio::time::timeout(t, fut).await {
            Ok(o) => o,
            Err(_) => Ok(Err(ReconcileError::msg(format!(
                "reconcile timed out after {t:?}"
            )))),
        },
        None => fut.await,
    };
    let result = match outcome {
        Ok(Ok(Action::Done)) => {
            stats.success.fetch_add(1, Ordering::Relaxed);
            queue.forget(&key);
            Outcome::Success
        }
        Ok(Ok(Action::Requeue)) => {
            stats.requeue.fetch_add(1, Ordering::Relaxed);
            queue.add_rate_limited(key.clone());
            Outcome::Requeue
        }
        Ok(Ok(Action::RequeueAfter(d))) => {
            stats.requeue_after.fetch_add(1, Ordering::Relaxed);
            queue.forget(&key);
            queue.add_after(key.clone(), d);
            Outcome::RequeueAfter
        }
        Ok(Err(e)) if e.is_terminal() => {
            stats.terminal_errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(controller = name, request = %key, error = %e, "reconcile failed terminally; not requeued");
            queue.forget(&key);
            Outcome::TerminalError
        }
        Ok(Err(e)) => {
            stats.errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(controller = name, request = %key, error = %e, "reconcile failed; requeued with backoff");
            queue.add_rate_limited(key.clone());
            Outcome::Error
        }
        Err(panic) => {
            stats.panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(controller = name, request = %key, panic = %panic_message(panic.as_ref()), "reconcile panicked; requeued with backoff");
            queue.add_rate_limited(key.clone());
            Outcome::Panic
        }
    };
    queue.done(&key);
    result
}
