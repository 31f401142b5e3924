//! The controller builder: what a controller reconciles, what else wakes it, and how.
//!
//! ```no_run
//! # use coxswain_runtime::{builder::ControllerBuilder, cache::Cache, controller::Action, ObjectKey};
//! # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
//! # async fn demo(cache: &Cache, cancel: tokio_util::sync::CancellationToken) {
//! let controller = ControllerBuilder::new(cache)
//!     .named("configmap-to-secret")
//!     .for_::<ConfigMap>()
//!     .owns::<Secret>()
//!     .build(|_ctx, key: ObjectKey| async move { Ok(Action::Done) });
//! controller.run(cancel).await;
//! # }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use crate::cache::{Cache, CachedKind, Change};
use crate::controller::{Controller, ControllerOptions, Feeder, Reconciler, Request, SyncWait};
use crate::handler::{EnqueueMapped, EnqueueObject, EnqueueOwner, EventHandler, Requests};
use crate::object::ObjectKey;
use crate::predicate::{BoxPredicate, Predicate};
use crate::workqueue::RateLimitedQueue;

type Registration = Box<dyn FnOnce(&Cache, &RateLimitedQueue<ObjectKey>) -> SyncWait + Send>;

/// Builds a [`Controller`].
pub struct ControllerBuilder<'c, K = ()> {
    cache: &'c Cache,
    name: Option<String>,
    registrations: Vec<Registration>,
    primary: Option<Box<dyn EventHandler<K>>>,
    filters: Vec<BoxPredicate<K>>,
    feeders: Vec<Feeder<ObjectKey>>,
    options: ControllerOptions,
    _kind: PhantomData<fn() -> K>,
}

/// Send every change of `W` that passes `filters` through `handler` into `queue`; the
/// returned wait resolves once `W`'s informer synced.
pub(crate) fn watch<W: CachedKind, R: Request>(
    cache: &Cache,
    queue: &RateLimitedQueue<R>,
    handler: impl EventHandler<W, R> + 'static,
    filters: Vec<BoxPredicate<W>>,
) -> SyncWait {
    let informer = cache.informer::<W>();
    let q = queue.clone();
    informer.add_handler(move |change: &Change<W>| {
        if filters.iter().all(|p| p.accept(change)) {
            handler.handle(change, &Requests::new(&q));
        }
    });
    Box::new(move || {
        let inf = informer.clone();
        async move { inf.wait_for_sync().await }.boxed()
    })
}

/// A feeder that calls `tick` every `period` (the first call one period after the
/// controller's informers synced).
pub(crate) fn timer<R: Request>(
    period: Duration,
    tick: impl Fn(&Requests<'_, R>) + Send + Sync + 'static,
) -> Feeder<R> {
    Box::new(move |queue, cancel| {
        async move {
            let mut every = tokio::time::interval(period.max(Duration::from_millis(1)));
            every.reset();
            loop {
                tokio::select! {
                    _ = every.tick() => tick(&Requests::new(&queue)),
                    _ = cancel.cancelled() => return,
                }
            }
        }
        .boxed()
    })
}

fn register<W: CachedKind>(
    handler: impl EventHandler<W> + 'static,
    filters: Vec<BoxPredicate<W>>,
) -> Registration {
    Box::new(move |cache: &Cache, queue: &RateLimitedQueue<ObjectKey>| {
        watch(cache, queue, handler, filters)
    })
}

impl<'c> ControllerBuilder<'c, ()> {
    /// Start building a controller whose informers come from `cache`.
    pub fn new(cache: &'c Cache) -> Self {
        ControllerBuilder {
            cache,
            name: None,
            registrations: Vec::new(),
            primary: None,
            filters: Vec::new(),
            feeders: Vec::new(),
            options: ControllerOptions::default(),
            _kind: PhantomData,
        }
    }

    /// The kind this controller reconciles: every change of a `K` enqueues its key.
    pub fn for_<K: CachedKind>(self) -> ControllerBuilder<'c, K> {
        ControllerBuilder {
            cache: self.cache,
            name: self.name,
            registrations: self.registrations,
            primary: None,
            filters: Vec::new(),
            feeders: self.feeders,
            options: self.options,
            _kind: PhantomData,
        }
    }

    /// The kind this controller reconciles, with the handler that turns its changes into
    /// requests (instead of "the changed object, at once"): a namespace controller that
    /// acts on terminating namespaces a moment after they change, say. Event filters
    /// still apply.
    pub fn for_with<K: CachedKind>(
        self,
        handler: impl EventHandler<K> + 'static,
    ) -> ControllerBuilder<'c, K> {
        let mut b = self.for_::<K>();
        b.primary = Some(Box::new(handler));
        b
    }
}

impl<K> ControllerBuilder<'_, K> {
    /// The controller's name (logs and metrics); default: the reconciled kind, lower case.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Options (concurrency, timeout, rate limiter).
    pub fn with_options(mut self, options: ControllerOptions) -> Self {
        self.options = options;
        self
    }

    /// Call `tick` every `period` while the controller runs, with the queue in hand: a
    /// source fed by a timer (the namespace controller looks at every terminating
    /// namespace again every five minutes, say).
    pub fn every(
        mut self,
        period: Duration,
        tick: impl Fn(&Requests<'_, ObjectKey>) + Send + Sync + 'static,
    ) -> Self {
        self.feeders.push(timer(period, tick));
        self
    }
}

impl<'c, K: CachedKind> ControllerBuilder<'c, K>
where
    K::Scope: 'static,
{
    /// Only changes of the reconciled kind that pass `p` are enqueued (may be repeated:
    /// all must pass).
    pub fn with_event_filter(mut self, p: impl Predicate<K> + 'static) -> Self {
        self.filters.push(Arc::new(p));
        self
    }

    /// Children of kind `C` wake their controlling owner of the reconciled kind.
    pub fn owns<C: CachedKind>(mut self) -> Self {
        self.registrations
            .push(register::<C>(EnqueueOwner::of::<K>(true), Vec::new()));
        self
    }

    /// Changes of kind `W` enqueue whatever `map` returns.
    pub fn watches<W: CachedKind>(
        mut self,
        map: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.registrations
            .push(register::<W>(EnqueueMapped(map), Vec::new()));
        self
    }

    /// Changes of kind `W` go through a custom handler and predicates.
    pub fn watches_with<W: CachedKind>(
        mut self,
        handler: impl EventHandler<W> + 'static,
        predicates: Vec<BoxPredicate<W>>,
    ) -> Self {
        self.registrations.push(register::<W>(handler, predicates));
        self
    }

    /// Build the controller; its informers start now, its workers when it runs.
    pub fn build<R: Reconciler>(self, reconciler: R) -> Controller<R> {
        let name = self
            .name
            .unwrap_or_else(|| K::kind(&()).to_ascii_lowercase());
        let queue = Controller::<R>::new_queue(&name, &self.options);
        let primary = match self.primary {
            Some(handler) => watch(self.cache, &queue, handler, self.filters),
            None => watch(self.cache, &queue, EnqueueObject, self.filters),
        };
        let mut syncs = vec![primary];
        for r in self.registrations {
            syncs.push(r(self.cache, &queue));
        }
        Controller::assemble(name, queue, reconciler, self.options, syncs, self.feeders)
    }
}
