//! Tests of the queue. Ports of client-go's `util/workqueue` tests name the upstream test;
//! timing tests run on Tokio's paused clock, so no assertion depends on real time.

use super::*;
use crate::workqueue::ItemExponentialFailureRateLimiter;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use tokio::task::yield_now;
use tokio::time::{advance, timeout};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Lets every other task of a current-thread runtime run until it blocks.
async fn settle() {
    for _ in 0..10 {
        yield_now().await;
    }
}

// Port of client-go TestLen.
#[test]
fn len_counts_distinct_waiting_keys() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo"); // should not increase the queue length
    assert_eq!(q.len(), 2);
}

#[tokio::test]
async fn hands_keys_out_in_fifo_order() {
    let q = RateLimitedQueue::new();
    for k in [3, 1, 2, 1, 3] {
        q.add(k);
    }
    let mut out = Vec::new();
    for _ in 0..3 {
        out.push(q.get().await.unwrap());
    }
    assert_eq!(out, [3, 1, 2]);
    assert!(q.is_empty());
}

// Port of client-go TestReinsert.
#[tokio::test]
async fn key_re_added_while_processing_comes_back_after_done() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    let key = q.get().await.unwrap();
    assert_eq!(key, "foo");
    q.add(key);
    assert_eq!(q.len(), 0, "not queued while processing");
    q.done(&key);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    assert_eq!(q.len(), 0);
}

// Port of client-go TestCollapse.
#[tokio::test]
async fn adds_of_a_waiting_key_collapse() {
    let q = RateLimitedQueue::new();
    q.add("bar");
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");
    assert_eq!(q.len(), 0);
}

// Port of client-go TestCollapseWhileProcessing.
#[tokio::test(start_paused = true)]
async fn second_worker_waits_for_done_of_a_key_re_added_while_processing() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");
    q.add("foo");

    let other = tokio::spawn({
        let q = q.clone();
        async move {
            let key = q.get().await;
            if let Some(key) = &key {
                q.done(key);
            }
            key
        }
    });
    settle().await;
    assert!(
        !other.is_finished(),
        "worker should be blocked until we are done"
    );
    q.done(&"foo");
    assert_eq!(other.await.unwrap(), Some("foo"));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn done_of_a_key_not_processing_is_ignored() {
    let q = RateLimitedQueue::new();
    q.add("a");
    q.done(&"a"); // queued, not processing
    q.done(&"b"); // unknown
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    q.done(&"a"); // twice
    assert_eq!(q.len(), 0);
    q.add("a");
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn parked_getter_is_woken_by_add() {
    let q = RateLimitedQueue::new();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    assert!(!getter.is_finished());
    q.add(7);
    assert_eq!(getter.await.unwrap(), Some(7));
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_adds_wakes_as_many_parked_getters() {
    let q = RateLimitedQueue::new();
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    // Only the first add finds the inbox empty and wakes a getter; the getter that applies
    // the inbox must wake the others.
    for k in [1, 2, 3] {
        q.add(k);
    }
    let mut got = Vec::new();
    for g in getters {
        let key = timeout(Duration::from_secs(60), g)
            .await
            .expect("every parked getter must be woken")
            .unwrap();
        got.push(key.unwrap());
    }
    got.sort();
    assert_eq!(got, [1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn cancelled_get_takes_no_key_and_loses_no_wakeup() {
    let q = RateLimitedQueue::new();
    // Two getters park; the first is cancelled, then one key arrives.
    let cancelled = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());
    q.add("k");
    let got = timeout(Duration::from_secs(60), getter).await;
    assert_eq!(
        got.expect("the live getter must be woken").unwrap(),
        Some("k")
    );
    // The cancelled getter left no trace: a further add is handed out normally.
    q.add("j");
    assert_eq!(
        timeout(Duration::from_secs(60), q.get()).await,
        Ok(Some("j"))
    );
}

// Port of client-go TestQueueDrainageUsingShutDownWithDrain.
#[tokio::test(start_paused = true)]
async fn drain_waits_for_items_in_flight() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    q.add("bar");
    let first = q.get().await.unwrap();
    let second = q.get().await.unwrap();

    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(q.is_shutting_down());
    assert_eq!(q.get().await, None);
    assert!(!drain.is_finished(), "drain returned with items in flight");

    q.done(&first);
    settle().await;
    assert!(
        !drain.is_finished(),
        "drain returned with an item in flight"
    );
    q.done(&second);
    timeout(Duration::from_secs(60), drain)
        .await
        .expect("drain must end when the last item is done")
        .unwrap();
}

// Port of client-go TestNoQueueDrainageUsingShutDown.
#[tokio::test]
async fn shut_down_does_not_wait_for_items_in_flight() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    q.shut_down(); // returns at once: it is not async
    assert_eq!(q.get().await, None);
}

// Port of client-go TestForceQueueShutdownUsingShutDown.
#[tokio::test(start_paused = true)]
async fn shut_down_ends_a_waiting_drain() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert_eq!(q.get().await, None);
    assert!(!drain.is_finished());
    q.shut_down();
    timeout(Duration::from_secs(60), drain)
        .await
        .expect("shut_down must end the drain")
        .unwrap();
}

// Port of client-go TestQueueDrainageUsingShutDownWithDrainWithDirtyItem.
#[tokio::test(start_paused = true)]
async fn drain_hands_out_a_key_re_added_while_processing() {
    let q = RateLimitedQueue::new();
    q.add("foo");
    let gotten = q.get().await.unwrap();
    q.add("foo");

    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert_eq!(q.get().await, None, "nothing queued yet");

    q.done(&gotten);
    let again = q.get().await;
    assert_eq!(again, Some("foo"), "done queued the dirty key again");
    q.done(&"foo");
    assert_eq!(q.get().await, None);
    timeout(Duration::from_secs(60), drain)
        .await
        .expect("drain must end")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn drain_keeps_queued_keys_but_ignores_new_and_delayed_ones() {
    let q = RateLimitedQueue::new();
    q.add("queued");
    q.add_after("delayed", ms(10));
    q.shut_down_with_drain().await; // nothing in flight: returns at once
    q.add("late");
    q.add_after("late-delayed", ms(1));
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.get().await, Some("queued"));
    q.done(&"queued");
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_pending_keys_and_wakes_every_getter() {
    let q = RateLimitedQueue::new();
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    q.add_after(99, Duration::from_secs(5)); // wakes one getter to lead the timer
    settle().await;

    q.add(1);
    q.add(2);
    q.add(3);
    // Three getters were parked and got 1, 2 and 3; more are queued behind a busy worker.
    let mut got: Vec<_> = Vec::new();
    for g in getters {
        got.push(g.await.unwrap().unwrap());
    }
    got.sort();
    assert_eq!(got, [1, 2, 3]);

    let parked: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    q.add(1); // processing: dirty, not queued
    q.shut_down();
    assert!(q.is_shutting_down());
    for p in parked {
        assert_eq!(p.await.unwrap(), None);
    }
    q.add(4);
    q.add_after(5, ms(1));
    advance(Duration::from_secs(10)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None, "get returns None at once");
    // The re-add of 1 while processing was dropped too.
    q.done(&1);
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

/// Shared check for the concurrent ports below: no key in two workers at once.
#[derive(Default)]
struct InFlight {
    keys: std::sync::Mutex<HashSet<u32>>,
}

impl InFlight {
    fn start(&self, key: u32) {
        assert!(
            self.keys.lock().unwrap().insert(key),
            "key {key} handed to two workers at once"
        );
    }
    fn stop(&self, key: u32) {
        assert!(self.keys.lock().unwrap().remove(&key));
    }
}

// Port of client-go TestBasic (both shutdown modes), with the no-overlap check added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_consumers_never_overlap_on_a_key() {
    for drain in [false, true] {
        let q: RateLimitedQueue<u32> = RateLimitedQueue::new();
        let in_flight = Arc::new(InFlight::default());
        const AFTER_SHUTDOWN: u32 = u32::MAX;

        let producers: Vec<_> = (0..50)
            .map(|i| {
                let q = q.clone();
                tokio::spawn(async move {
                    for _ in 0..50 {
                        q.add(i);
                        yield_now().await;
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let q = q.clone();
                let in_flight = in_flight.clone();
                tokio::spawn(async move {
                    while let Some(key) = q.get().await {
                        assert_ne!(key, AFTER_SHUTDOWN, "got an item added after shutdown");
                        in_flight.start(key);
                        for _ in 0..3 {
                            yield_now().await;
                        }
                        in_flight.stop(key);
                        q.done(&key);
                    }
                })
            })
            .collect();
        for p in producers {
            p.await.unwrap();
        }
        if drain {
            q.shut_down_with_drain().await;
        } else {
            q.shut_down();
        }
        q.add(AFTER_SHUTDOWN);
        for c in consumers {
            c.await.unwrap();
        }
        assert_eq!(q.len(), 0, "drain={drain}");
    }
}

// Port of client-go TestAddWhileProcessing (both shutdown modes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_re_adding_while_processing_all_finish() {
    for drain in [false, true] {
        let q: RateLimitedQueue<u32> = RateLimitedQueue::new();
        let in_flight = Arc::new(InFlight::default());
        let processed = Arc::new(std::sync::Mutex::new(HashMap::<u32, u32>::new()));
        for i in 0..50 {
            q.add(i);
        }
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let q = q.clone();
                let in_flight = in_flight.clone();
                let processed = processed.clone();
                tokio::spawn(async move {
                    // Every worker re-adds every item it sees up to two times.
                    let mut counters = HashMap::<u32, u32>::new();
                    while let Some(key) = q.get().await {
                        in_flight.start(key);
                        *processed.lock().unwrap().entry(key).or_default() += 1;
                        let n = counters.entry(key).or_default();
                        *n += 1;
                        if *n < 2 {
                            q.add(key);
                        }
                        yield_now().await;
                        in_flight.stop(key);
                        q.done(&key);
                    }
                })
            })
            .collect();
        if drain {
            // Wait until every key was processed at least twice (first pass and re-add).
            while processed
                .lock()
                .unwrap()
                .values()
                .filter(|&&n| n >= 2)
                .count()
                < 50
            {
                tokio::time::sleep(ms(1)).await;
            }
            q.shut_down_with_drain().await;
        } else {
            q.shut_down();
        }
        for c in consumers {
            c.await.unwrap();
        }
        assert_eq!(q.len(), 0, "drain={drain}");
    }
}

/// Every key is processed at least once after its last add, with 8 workers racing a
/// producer; and no key is in two workers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_is_processed_after_its_last_add() {
    const KEYS: usize = 200;
    let q: RateLimitedQueue<u32> = RateLimitedQueue::new();
    let in_flight = Arc::new(InFlight::default());
    let last_add: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, in_flight, last_add, seen) =
                (q.clone(), in_flight.clone(), last_add.clone(), seen.clone());
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    in_flight.start(key);
                    let added = last_add[key as usize].load(AtomicOrdering::Relaxed);
                    seen[key as usize].fetch_max(added, AtomicOrdering::Relaxed);
                    yield_now().await;
                    in_flight.stop(key);
                    q.done(&key);
                }
            })
        })
        .collect();
    for n in 1..=20_000u64 {
        let key = (n as usize * 7919) % KEYS;
        last_add[key].store(n, AtomicOrdering::Relaxed);
        q.add(key as u32);
        if n % 64 == 0 {
            yield_now().await;
        }
    }
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    for key in 0..KEYS {
        assert_eq!(
            seen[key].load(AtomicOrdering::Relaxed),
            last_add[key].load(AtomicOrdering::Relaxed),
            "key {key} not processed after its last add"
        );
    }
}

// Port of client-go TestSimpleQueue.
#[tokio::test(start_paused = true)]
async fn add_after_adds_once_the_delay_has_passed() {
    let q = RateLimitedQueue::new();
    q.add_after("foo", ms(50));
    assert_eq!(q.len(), 0, "should not have added");
    advance(ms(49)).await;
    assert_eq!(q.len(), 0, "should not have added");
    advance(ms(1)).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    advance(Duration::from_secs(10)).await;
    assert_eq!(q.len(), 0, "should not have added");
}

#[tokio::test]
async fn add_after_zero_adds_at_once() {
    let q = RateLimitedQueue::new();
    q.add_after("foo", Duration::ZERO);
    assert_eq!(q.len(), 1);
}

// Port of client-go TestDeduping.
#[tokio::test(start_paused = true)]
async fn shorter_delay_wins_for_a_waiting_key() {
    let q = RateLimitedQueue::new();
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(70));
    assert_eq!(q.len(), 0);
    // Step past the first block: we should receive now.
    advance(ms(60)).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    // Step past the second add: it was folded into the first.
    advance(ms(20)).await;
    assert_eq!(q.len(), 0);

    // Again, but this time the earlier should override.
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(30));
    assert_eq!(q.len(), 0);
    advance(ms(40)).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    // Step past the superseded 50 ms entry: nothing more.
    advance(ms(20)).await;
    assert_eq!(q.len(), 0);
}

// Port of client-go TestAddTwoFireEarly.
#[tokio::test(start_paused = true)]
async fn delayed_keys_fire_in_ready_order() {
    let q = RateLimitedQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", ms(50));
    assert_eq!(q.len(), 0);

    advance(ms(60)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("bar"));

    q.add_after("baz", Duration::from_secs(2));
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));

    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("baz"));
}

// Port of client-go TestCopyShifting.
#[tokio::test(start_paused = true)]
async fn keys_due_together_are_queued_by_ready_time() {
    let q = RateLimitedQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", ms(500));
    q.add_after("baz", ms(250));
    assert_eq!(q.len(), 0);
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 3);
    assert_eq!(q.get().await, Some("baz"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, Some("foo"));
}

#[tokio::test(start_paused = true)]
async fn add_during_a_delay_adds_at_once_and_again_when_due() {
    let q = RateLimitedQueue::new();
    q.add_after("k", ms(100));
    q.add("k");
    assert_eq!(q.get().await, Some("k"));
    q.done(&"k");
    advance(ms(100)).await;
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn parked_getter_wakes_when_a_delay_ends() {
    let q = RateLimitedQueue::new();
    let start = Instant::now();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { (q.get().await, Instant::now()) }
    });
    settle().await;
    q.add_after("k", Duration::from_secs(5));
    let (key, at) = timeout(Duration::from_secs(60), getter)
        .await
        .expect("getter must wake")
        .unwrap();
    assert_eq!(key, Some("k"));
    assert_eq!(at - start, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn earlier_add_after_rearms_the_timer() {
    let q = RateLimitedQueue::new();
    let start = Instant::now();
    q.add_after("late", Duration::from_secs(10));
    let getter = tokio::spawn({
        let q = q.clone();
        async move { (q.get().await, Instant::now()) }
    });
    settle().await; // the getter now sleeps until +10 s as timer leader
    q.add_after("early", Duration::from_secs(1));
    let (key, at) = getter.await.unwrap();
    assert_eq!(key, Some("early"));
    assert_eq!(at - start, Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn several_parked_getters_each_get_a_delayed_key() {
    let q = RateLimitedQueue::new();
    let start = Instant::now();
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { (q.get().await, Instant::now()) })
        })
        .collect();
    settle().await;
    for (key, secs) in [(1, 3), (2, 1), (3, 2), (4, 2)] {
        q.add_after(key, Duration::from_secs(secs));
    }
    let mut got = Vec::new();
    for g in getters {
        let (key, at) = timeout(Duration::from_secs(60), g)
            .await
            .expect("no lost wake-up")
            .unwrap();
        got.push((key.unwrap(), (at - start).as_secs()));
    }
    got.sort();
    assert_eq!(got, [(1, 3), (2, 1), (3, 2), (4, 2)]);
}

#[tokio::test(start_paused = true)]
async fn cancelled_timer_leader_hands_over() {
    let q = RateLimitedQueue::new();
    let start = Instant::now();
    q.add_after("k", Duration::from_secs(10));
    // The first getter leads the timer and gives up after 1 s.
    let leader = tokio::spawn({
        let q = q.clone();
        async move { timeout(Duration::from_secs(1), q.get()).await }
    });
    settle().await;
    let follower = tokio::spawn({
        let q = q.clone();
        async move { (q.get().await, Instant::now()) }
    });
    assert!(leader.await.unwrap().is_err(), "leader timed out");
    let (key, at) = timeout(Duration::from_secs(60), follower)
        .await
        .expect("the follower must take over the timer")
        .unwrap();
    assert_eq!(key, Some("k"));
    assert_eq!(at - start, Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn delayed_key_due_while_processing_is_handed_out_after_done() {
    let q = RateLimitedQueue::new();
    q.add("k");
    assert_eq!(q.get().await, Some("k"));
    q.add_after("k", ms(10));
    advance(ms(10)).await;
    assert_eq!(q.len(), 0, "processing: not queued");
    q.done(&"k");
    assert_eq!(q.get().await, Some("k"));
}

// Port of client-go TestRateLimitingQueue.
#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_per_key() {
    let q = RateLimitedQueue::with_rate_limiter(ItemExponentialFailureRateLimiter::new(
        ms(1),
        Duration::from_secs(1),
    ));
    let due_after = |q: &RateLimitedQueue<&'static str>, expected: Duration| {
        // Not queued one microsecond early; queued exactly on time.
        let q = q.clone();
        async move {
            advance(expected - Duration::from_micros(1)).await;
            assert_eq!(q.len(), 0, "queued before {expected:?}");
            advance(Duration::from_micros(1)).await;
            assert_eq!(q.len(), 1, "not queued after {expected:?}");
            let key = q.get().await.unwrap();
            q.done(&key);
        }
    };
    q.add_rate_limited("one");
    due_after(&q, ms(1)).await;
    q.add_rate_limited("one");
    due_after(&q, ms(2)).await;
    assert_eq!(q.num_requeues(&"one"), 2);

    q.add_rate_limited("two");
    due_after(&q, ms(1)).await;
    q.add_rate_limited("two");
    due_after(&q, ms(2)).await;

    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    q.add_rate_limited("one");
    due_after(&q, ms(1)).await;
}

/// Records every hook call.
#[derive(Default)]
struct Recorder {
    adds: AtomicU64,
    depth: std::sync::Mutex<i64>,
    retries: AtomicU64,
    queue_durations: std::sync::Mutex<Vec<Duration>>,
    work_durations: std::sync::Mutex<Vec<Duration>>,
    gauges: std::sync::Mutex<Option<(f64, f64)>>,
}

impl QueueMetrics for Recorder {
    fn inc_adds(&self) {
        self.adds.fetch_add(1, AtomicOrdering::Relaxed);
    }
    fn inc_depth(&self) {
        *self.depth.lock().unwrap() += 1;
    }
    fn dec_depth(&self) {
        *self.depth.lock().unwrap() -= 1;
    }
    fn observe_queue_duration(&self, waited: Duration) {
        self.queue_durations.lock().unwrap().push(waited);
    }
    fn observe_work_duration(&self, worked: Duration) {
        self.work_durations.lock().unwrap().push(worked);
    }
    fn inc_retries(&self) {
        self.retries.fetch_add(1, AtomicOrdering::Relaxed);
    }
    fn set_unfinished_work_seconds(&self, seconds: f64) {
        let mut g = self.gauges.lock().unwrap();
        *g = Some((seconds, g.map_or(0.0, |g| g.1)));
    }
    fn set_longest_running_processor_seconds(&self, seconds: f64) {
        let mut g = self.gauges.lock().unwrap();
        *g = Some((g.map_or(0.0, |g| g.0), seconds));
    }
}

fn recorded_queue() -> (RateLimitedQueue<&'static str>, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let q = RateLimitedQueue::with_config(QueueConfig {
        name: "test".into(),
        metrics: Some(recorder.clone()),
        ..QueueConfig::default()
    });
    (q, recorder)
}

#[tokio::test(start_paused = true)]
async fn metrics_follow_client_go() {
    let (q, m) = recorded_queue();
    assert_eq!(q.name(), "test");
    q.add("a");
    q.add("a"); // folded: not an add
    q.add("b");
    // Adds are counted when the queue applies them (any later operation, here `len`).
    assert_eq!(q.len(), 2);
    assert_eq!(m.adds.load(AtomicOrdering::Relaxed), 2);
    assert_eq!(*m.depth.lock().unwrap(), 2);

    advance(Duration::from_secs(2)).await;
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(*m.depth.lock().unwrap(), 1);
    assert_eq!(*m.queue_durations.lock().unwrap(), [Duration::from_secs(2)]);

    // Re-added while processing: counted as an add and in the depth, as upstream.
    q.add("a");
    assert_eq!(q.len(), 1, "only b is queued");
    assert_eq!(m.adds.load(AtomicOrdering::Relaxed), 3);
    assert_eq!(*m.depth.lock().unwrap(), 2);

    advance(Duration::from_secs(3)).await;
    assert_eq!(q.get().await, Some("b"));
    advance(Duration::from_secs(1)).await;
    let w = q.unfinished_work();
    assert_eq!(w.unfinished_work_seconds, 4.0 + 1.0);
    assert_eq!(w.longest_running_processor_seconds, 4.0);
    q.update_unfinished_work_metrics();
    assert_eq!(*m.gauges.lock().unwrap(), Some((5.0, 4.0)));

    q.done(&"a");
    assert_eq!(*m.work_durations.lock().unwrap(), [Duration::from_secs(4)]);
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(
        *m.queue_durations.lock().unwrap(),
        [
            Duration::from_secs(2),
            Duration::from_secs(5),
            Duration::from_secs(4)
        ]
    );

    q.add_rate_limited("c");
    q.add_after("d", Duration::ZERO);
    assert_eq!(m.retries.load(AtomicOrdering::Relaxed), 2);
    // "d" was added at once; "c" is delayed (5 ms) and not counted as an add yet.
    assert_eq!(q.len(), 1);
    assert_eq!(m.adds.load(AtomicOrdering::Relaxed), 4);
    advance(ms(5)).await;
    assert_eq!(q.len(), 2);
    assert_eq!(m.adds.load(AtomicOrdering::Relaxed), 5);
    assert_eq!(*m.depth.lock().unwrap(), 2);

    // Shutdown drops the two queued keys from the depth.
    q.shut_down();
    assert_eq!(*m.depth.lock().unwrap(), 0);
    q.update_unfinished_work_metrics(); // no update once shutting down
    assert_eq!(*m.gauges.lock().unwrap(), Some((5.0, 4.0)));
}

#[tokio::test]
async fn unfinished_work_is_zero_without_metrics() {
    let q = RateLimitedQueue::new();
    q.add(1);
    q.get().await.unwrap();
    assert_eq!(q.unfinished_work(), UnfinishedWork::default());
}

#[test]
fn debug_shows_the_counts() {
    let q: RateLimitedQueue<u8> = RateLimitedQueue::new();
    q.add(1);
    let shown = format!("{q:?}");
    assert!(shown.contains("queued: 1"), "{shown}");
}
