//! Workqueue throughput: one producer adds 1,000,000 keys over 100,000 distinct ones while
//! 8 worker tasks `get` and `done` them, on a multi-thread Tokio runtime with one worker
//! thread per core. Prints adds/s (producer side) and gets/s (worker side), then checks that
//! every key was processed at least once after its last add.
//!
//! Run: `cargo bench --bench workqueue` (release build). Environment knobs:
//! `WQ_ADDS` (1000000), `WQ_KEYS` (100000), `WQ_WORKERS` (8), `WQ_ROUNDS` (3, best kept),
//! `WQ_PRODUCER` (`thread`: a plain OS thread, as an informer's event delivery; or `task`:
//! a Tokio task that yields every 256 adds), `WQ_KEY` (all key types, or one of `request`,
//! `objectkey`, `arc`, `u64`).
//!
//! Keys are pre-built before timing (the producer moves them in). Three key types are
//! measured: a controller `Request` with owned `String`s (the queue clones each new key
//! once, two allocations), the same with `Arc<str>` fields (cheap clones, as Go strings),
//! and a plain `u64`.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use coxswain_runtime::workqueue::RateLimitedQueue;

/// A controller request, as controller-runtime's `reconcile.Request`, with owned strings:
/// every clone copies both strings.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Request {
    namespace: Option<String>,
    name: String,
}

/// The same request with shared strings: a clone bumps two reference counts, like copying
/// a Go string (what client-go's figures are measured with).
#[derive(Clone, PartialEq, Eq, Hash)]
struct SharedRequest {
    namespace: Option<Arc<str>>,
    name: Arc<str>,
}

/// A bench key: what the queue hashes and compares, plus the index the check uses.
#[derive(Clone)]
struct Keyed<K> {
    key: K,
    id: u32,
}

impl<K: PartialEq> PartialEq for Keyed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<K: Eq> Eq for Keyed<K> {}

impl<K: Hash> Hash for Keyed<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state)
    }
}

struct Params {
    adds: usize,
    keys: usize,
    workers: usize,
    rounds: usize,
    producer_thread: bool,
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a count: {e}")),
        Err(_) => default,
    }
}

struct Figures {
    adds_per_sec: f64,
    gets_per_sec: f64,
    gets: u64,
}

fn run_once<K>(rt: &tokio::runtime::Runtime, p: &Params, make: &dyn Fn(usize) -> K) -> Figures
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    let queue: RateLimitedQueue<Keyed<K>> = RateLimitedQueue::new();
    let last_add: Arc<Vec<AtomicU64>> = Arc::new((0..p.keys).map(|_| AtomicU64::new(0)).collect());
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..p.keys).map(|_| AtomicU64::new(0)).collect());
    let gets = Arc::new(AtomicU64::new(0));

    // Pre-built keys, in the order the producer adds them (round-robin over the key space).
    let distinct: Vec<Keyed<K>> = (0..p.keys)
        .map(|i| Keyed {
            key: make(i),
            id: i as u32,
        })
        .collect();
    let to_add: Vec<Keyed<K>> = (0..p.adds).map(|n| distinct[n % p.keys].clone()).collect();
    drop(distinct);

    let start = Instant::now();
    let workers: Vec<_> = (0..p.workers)
        .map(|_| {
            let (queue, last_add, seen, gets) =
                (queue.clone(), last_add.clone(), seen.clone(), gets.clone());
            rt.spawn(async move {
                let mut n = 0u64;
                while let Some(item) = queue.get().await {
                    let id = item.id as usize;
                    // The add that queued this key stored its epoch before adding; the
                    // queue's lock orders that store before this load.
                    let added = last_add[id].load(Ordering::Relaxed);
                    seen[id].fetch_max(added, Ordering::Relaxed);
                    n += 1;
                    queue.done(&item);
                }
                gets.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();

    let add_time = {
        let (queue, last_add) = (queue.clone(), last_add.clone());
        if p.producer_thread {
            std::thread::Builder::new()
                .name("producer".into())
                .spawn(move || {
                    let started = Instant::now();
                    for (n, item) in to_add.into_iter().enumerate() {
                        last_add[item.id as usize].store(n as u64 + 1, Ordering::Relaxed);
                        queue.add(item);
                    }
                    started.elapsed()
                })
                .expect("spawn producer thread")
                .join()
                .expect("producer thread panicked")
        } else {
            let producer = rt.spawn(async move {
                let started = Instant::now();
                for (n, item) in to_add.into_iter().enumerate() {
                    last_add[item.id as usize].store(n as u64 + 1, Ordering::Relaxed);
                    queue.add(item);
                    if n % 256 == 255 {
                        tokio::task::yield_now().await;
                    }
                }
                started.elapsed()
            });
            rt.block_on(producer).expect("producer task panicked")
        }
    };

    rt.block_on(async {
        queue.shut_down_with_drain().await;
        for w in workers {
            w.await.expect("worker panicked");
        }
    });
    let total = start.elapsed();
    let gets = gets.load(Ordering::Relaxed);

    for id in 0..p.keys {
        let (added, processed) = (
            last_add[id].load(Ordering::Relaxed),
            seen[id].load(Ordering::Relaxed),
        );
        assert_eq!(
            processed, added,
            "key {id} was last added as add #{added} but last processed for add #{processed}"
        );
    }
    Figures {
        adds_per_sec: p.adds as f64 / add_time.as_secs_f64(),
        gets_per_sec: gets as f64 / total.as_secs_f64(),
        gets,
    }
}

fn bench<K>(rt: &tokio::runtime::Runtime, p: &Params, label: &str, make: &dyn Fn(usize) -> K)
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    if let Ok(only) = std::env::var("WQ_KEY") {
        let id = label
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_lowercase();
        if !id.starts_with(&only.to_lowercase()) {
            return;
        }
    }
    let mut best: Option<Figures> = None;
    for _ in 0..p.rounds {
        let f = run_once(rt, p, make);
        if best
            .as_ref()
            .is_none_or(|b| f.adds_per_sec > b.adds_per_sec)
        {
            best = Some(f);
        }
    }
    let best = best.expect("at least one round");
    println!(
        "{label:<14} adds/s {:>6.2} M   gets/s {:>6.2} M   ({} gets for {} adds of {} keys; every key processed after its last add)",
        best.adds_per_sec / 1e6,
        best.gets_per_sec / 1e6,
        best.gets,
        p.adds,
        p.keys,
    );
}

fn main() {
    let p = Params {
        adds: env_usize("WQ_ADDS", 1_000_000),
        keys: env_usize("WQ_KEYS", 100_000),
        workers: env_usize("WQ_WORKERS", 8),
        rounds: env_usize("WQ_ROUNDS", 3).max(1),
        producer_thread: std::env::var("WQ_PRODUCER").as_deref() != Ok("task"),
    };
    assert!(p.keys > 0 && p.keys <= u32::MAX as usize);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = env_usize("WQ_THREADS", cores);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "workqueue bench: {} adds over {} keys, {} workers, {} runtime threads, producer {} (best of {})",
        p.adds,
        p.keys,
        p.workers,
        threads,
        if p.producer_thread { "thread" } else { "task" },
        p.rounds,
    );
    bench(&rt, &p, "Request keys", &|i| Request {
        namespace: Some(format!("namespace-{}", i % 100)),
        name: format!("object-{i}"),
    });
    bench(&rt, &p, "ObjectKey keys", &|i| {
        coxswain_runtime::ObjectKey::namespaced(
            format!("namespace-{}", i % 100),
            format!("object-{i}"),
        )
    });
    bench(&rt, &p, "Arc<str> keys", &|i| SharedRequest {
        namespace: Some(format!("namespace-{}", i % 100).into()),
        name: format!("object-{i}").into(),
    });
    bench(&rt, &p, "u64 keys", &|i| i as u64);
}
