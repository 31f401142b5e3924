//! The event recorder against the embedded API server (envtest).

use std::time::Duration;

use coxswain_runtime::events::{
    object_reference, EventBroadcaster, EventBroadcasterOptions, EventCounters, EventType,
    NOTE_LENGTH_LIMIT,
};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use tokio_util::sync::CancellationToken;

const CONTROLLER: &str = "demo-controller";
const INSTANCE: &str = "demo-controller-host1";

fn counters(emitted: u64, aggregated: u64, dropped: u64, failed: u64) -> EventCounters {
    EventCounters {
        emitted,
        aggregated,
        dropped,
        failed,
    }
}

/// Options that never flush series on their own: tests flush explicitly.
fn manual_flush() -> EventBroadcasterOptions {
    EventBroadcasterOptions {
        series_flush_interval: Duration::from_secs(3600),
        ..EventBroadcasterOptions::default()
    }
}

async fn config_map(client: &kube::Client, name: &str) -> ConfigMap {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .expect("create config map")
}

/// Events (events.k8s.io/v1) in `default` about the object named `name`.
async fn events_about(client: &kube::Client, name: &str) -> Vec<Event> {
    let list = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("list events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

fn series_count(e: &Event) -> Option<i32> {
    e.series.as_ref().map(|s| s.count)
}

/// Poll `check` until it returns `Some`, failing after a generous deadline.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn an_event_is_created_with_its_fields_in_both_versions() {
    let env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let web = config_map(&client, "web").await;
    let db = config_map(&client, "db").await;
    let regarding = object_reference(&web);
    assert_eq!(regarding.api_version.as_deref(), Some("v1"));
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.namespace.as_deref(), Some("default"));
    assert!(regarding.uid.is_some() && regarding.resource_version.is_some());
    let related = object_reference(&db);

    let cancel = CancellationToken::new();
    let broadcaster =
        EventBroadcaster::with_options(client.clone(), cancel.clone(), manual_flush());
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    let before = Timestamp::now();
    recorder.event(
        &regarding,
        Some(&related),
        EventType::Warning,
        "FailedSync",
        "Sync",
        "could not sync",
    );
    // a cluster-scoped object: the Event goes to `default`
    let ns = Api::<Namespace>::all(client.clone())
        .get("default")
        .await
        .expect("namespace");
    recorder.event(
        &object_reference(&ns),
        None,
        EventType::Normal,
        "Seen",
        "Observe",
        "hello",
    );
    // an overlong note is cut to the limit
    recorder.event(
        &object_reference(&db),
        None,
        EventType::Normal,
        "Long",
        "Observe",
        &"x".repeat(3000),
    );
    // a name too long for `<name>.<suffix>` falls back to `event.<suffix>`; a note of
    // multi-byte characters is cut on a character boundary
    let long_name = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("default".into()),
        name: Some("n".repeat(250)),
        ..ObjectReference::default()
    };
    recorder.event(
        &long_name,
        None,
        EventType::Normal,
        "Wide",
        "Observe",
        &"é".repeat(1000),
    );
    broadcaster.flush().await;
    let after = Timestamp::now();
    assert_eq!(broadcaster.counters(), counters(4, 0, 0, 0));

    let found = events_about(&client, "web").await;
    assert_eq!(found.len(), 1, "{found:?}");
    let e = &found[0];
    let name = e.metadata.name.clone().expect("name");
    assert!(name.starts_with("web."), "{name}");
    assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(e.regarding.as_ref(), Some(&regarding));
    assert_eq!(
        e.related.as_ref().and_then(|r| r.name.as_deref()),
        Some("db")
    );
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reason.as_deref(), Some("FailedSync"));
    assert_eq!(e.action.as_deref(), Some("Sync"));
    assert_eq!(e.note.as_deref(), Some("could not sync"));
    assert_eq!(e.reporting_controller.as_deref(), Some(CONTROLLER));
    assert_eq!(e.reporting_instance.as_deref(), Some(INSTANCE));
    assert!(e.series.is_none());
    let time = e.event_time.as_ref().expect("eventTime").0;
    // MicroTime keeps microseconds: compare at that precision
    let micros = |t: Timestamp| t.as_microsecond();
    assert!(
        micros(before) <= micros(time) && micros(time) <= micros(after),
        "{time}"
    );

    // the same object through core/v1, as `kubectl get events` reads it
    let core = Api::<CoreEvent>::namespaced(client.clone(), "default")
        .get(&name)
        .await
        .expect("core/v1 event");
    assert_eq!(core.involved_object.name.as_deref(), Some("web"));
    assert_eq!(core.involved_object.uid, regarding.uid);
    assert_eq!(
        core.related.as_ref().and_then(|r| r.name.as_deref()),
        Some("db")
    );
    assert_eq!(core.type_.as_deref(), Some("Warning"));
    assert_eq!(core.reason.as_deref(), Some("FailedSync"));
    assert_eq!(core.action.as_deref(), Some("Sync"));
    assert_eq!(core.message.as_deref(), Some("could not sync"));
    assert_eq!(core.reporting_component.as_deref(), Some(CONTROLLER));
    assert_eq!(core.reporting_instance.as_deref(), Some(INSTANCE));
    assert_eq!(core.event_time.map(|t| micros(t.0)), Some(micros(time)));

    let cluster_scoped = events_about(&client, "default").await;
    assert_eq!(cluster_scoped.len(), 1, "{cluster_scoped:?}");
    assert_eq!(
        cluster_scoped[0].metadata.namespace.as_deref(),
        Some("default")
    );
    assert_eq!(
        cluster_scoped[0]
            .regarding
            .as_ref()
            .and_then(|r| r.kind.as_deref()),
        Some("Namespace")
    );

    let long: Vec<_> = events_about(&client, "db").await;
    assert_eq!(long.len(), 1);
    let note = long[0].note.clone().unwrap_or_default();
    assert_eq!(note.len(), NOTE_LENGTH_LIMIT);
    assert!(note.ends_with("x ..."));

    let wide = events_about(&client, &"n".repeat(250)).await;
    assert_eq!(wide.len(), 1);
    assert!(wide[0]
        .metadata
        .name
        .as_deref()
        .unwrap_or_default()
        .starts_with("event."));
    let note = wide[0].note.clone().unwrap_or_default();
    assert!(
        note.len() <= NOTE_LENGTH_LIMIT && note.ends_with("é ..."),
        "{note}"
    );
    assert!(note.trim_end_matches(" ...").chars().all(|c| c == 'é'));
    cancel.cancel();
    broadcaster.stopped().await;
}

#[tokio::test]
async fn repeats_become_one_series_updated_by_the_periodic_flush() {
    let env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let web = object_reference(&config_map(&client, "web").await);
    let cancel = CancellationToken::new();
    let options = EventBroadcasterOptions {
        series_flush_interval: Duration::from_millis(100),
        ..EventBroadcasterOptions::default()
    };
    let broadcaster = EventBroadcaster::with_options(client.clone(), cancel.clone(), options);
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    for _ in 0..10 {
        recorder.event(
            &web,
            None,
            EventType::Warning,
            "BackOff",
            "Sync",
            "retrying",
        );
    }
    assert_eq!(broadcaster.counters(), counters(1, 9, 0, 0));
    // no explicit flush: the periodic one must bring the count to the server
    let series = eventually("series.count 10", || {
        let client = client.clone();
        async move {
            let found = events_about(&client, "web").await;
            (found.len() == 1 && series_count(&found[0]) == Some(10)).then(|| found[0].clone())
        }
    })
    .await;
    let s = series.series.as_ref().expect("series");
    let first = series.event_time.as_ref().expect("eventTime").0;
    assert!(s.last_observed_time.0 >= first);
    // core/v1 readers see the series too
    let core = Api::<CoreEvent>::namespaced(client.clone(), "default")
        .get(series.metadata.name.as_deref().unwrap_or_default())
        .await
        .expect("core/v1 event");
    assert_eq!(core.series.as_ref().and_then(|s| s.count), Some(10));

    // a different reason is a new object
    recorder.event(&web, None, EventType::Warning, "Failed", "Sync", "retrying");
    broadcaster.flush().await;
    let found = events_about(&client, "web").await;
    assert_eq!(found.len(), 2, "{found:?}");
    let fresh = found
        .iter()
        .find(|e| e.reason.as_deref() == Some("Failed"))
        .expect("new event");
    assert!(fresh.series.is_none());
    assert_ne!(fresh.metadata.name, series.metadata.name);
    assert_eq!(broadcaster.counters().failed, 0);
    cancel.cancel();
    broadcaster.stopped().await;
}

#[tokio::test]
async fn a_series_whose_event_was_deleted_is_created_again() {
    let env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let web = object_reference(&config_map(&client, "web").await);
    let cancel = CancellationToken::new();
    let broadcaster =
        EventBroadcaster::with_options(client.clone(), cancel.clone(), manual_flush());
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    recorder.event(&web, None, EventType::Normal, "Scaled", "Scale", "to 3");
    broadcaster.flush().await;
    let found = events_about(&client, "web").await;
    assert_eq!(found.len(), 1);
    let name = found[0].metadata.name.clone().expect("name");
    Api::<Event>::namespaced(client.clone(), "default")
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete event");
    assert!(events_about(&client, "web").await.is_empty());

    recorder.event(&web, None, EventType::Normal, "Scaled", "Scale", "to 3");
    recorder.event(&web, None, EventType::Normal, "Scaled", "Scale", "to 3");
    broadcaster.flush().await;
    let found = events_about(&client, "web").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(series_count(&found[0]), Some(3));
    assert_eq!(found[0].reason.as_deref(), Some("Scaled"));
    assert_eq!(broadcaster.counters().failed, 0);
    cancel.cancel();
    broadcaster.stopped().await;
}

#[tokio::test]
async fn pending_series_are_written_on_shutdown() {
    let env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let web = object_reference(&config_map(&client, "web").await);
    let cancel = CancellationToken::new();
    let broadcaster =
        EventBroadcaster::with_options(client.clone(), cancel.clone(), manual_flush());
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    for _ in 0..5 {
        recorder.event(&web, None, EventType::Normal, "Tick", "Observe", "again");
    }
    cancel.cancel();
    broadcaster.stopped().await;
    let found = events_about(&client, "web").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(series_count(&found[0]), Some(5));

    // after shutdown, events are dropped (and counted) at once
    recorder.event(&web, None, EventType::Normal, "Late", "Observe", "too late");
    broadcaster.flush().await;
    assert_eq!(broadcaster.counters(), counters(1, 4, 1, 0));
}

#[tokio::test]
async fn the_rate_limit_is_per_object() {
    let env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let a = object_reference(&config_map(&client, "a").await);
    let b = object_reference(&config_map(&client, "b").await);
    let cancel = CancellationToken::new();
    let broadcaster =
        EventBroadcaster::with_options(client.clone(), cancel.clone(), manual_flush());
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    // burst 25: 10 distinct events, then 30 repeats of which 15 fit
    for i in 0..10 {
        recorder.event(
            &a,
            None,
            EventType::Normal,
            &format!("Reason{i}"),
            "Act",
            "distinct",
        );
    }
    for _ in 0..30 {
        recorder.event(&a, None, EventType::Warning, "Repeat", "Act", "same");
    }
    assert_eq!(broadcaster.counters(), counters(11, 14, 15, 0));
    // another object has its own bucket
    for i in 0..3 {
        recorder.event(
            &b,
            None,
            EventType::Normal,
            &format!("Reason{i}"),
            "Act",
            "distinct",
        );
    }
    // and another reporter about the same object too
    let other = broadcaster.recorder("other-controller", "other-controller-host1");
    other.event(&a, None, EventType::Normal, "Other", "Act", "mine");
    broadcaster.flush().await;
    assert_eq!(broadcaster.counters(), counters(15, 14, 15, 0));

    let on_a = events_about(&client, "a").await;
    assert_eq!(on_a.len(), 12, "{on_a:?}");
    let repeat = on_a
        .iter()
        .find(|e| e.reason.as_deref() == Some("Repeat"))
        .expect("repeat event");
    assert_eq!(series_count(repeat), Some(15));
    assert_eq!(events_about(&client, "b").await.len(), 3);
    cancel.cancel();
    broadcaster.stopped().await;
}

#[tokio::test]
async fn an_unavailable_server_never_blocks_the_caller() {
    let mut env = coxswain_runtime::envtest::start().await.expect("envtest");
    let client = env.client.clone();
    let cancel = CancellationToken::new();
    let capacity = 8;
    let options = EventBroadcasterOptions {
        queue_capacity: capacity,
        max_tries: 100_000,
        retry_backoff: Duration::from_millis(20),
        max_retry_backoff: Duration::from_millis(100),
        ..manual_flush()
    };
    let broadcaster = EventBroadcaster::with_options(client.clone(), cancel.clone(), options);
    let recorder = broadcaster.recorder(CONTROLLER, INSTANCE);
    env.stop().await;

    let total: u64 = 100;
    let calls = tokio::task::spawn_blocking(move || {
        for i in 0..total {
            let obj = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                namespace: Some("default".into()),
                name: Some(format!("cm-{i}")),
                ..ObjectReference::default()
            };
            recorder.event(
                &obj,
                None,
                EventType::Normal,
                "Down",
                "Observe",
                "server is down",
            );
        }
    });
    // A generous bound that only a blocked caller can exceed; not a timing assertion.
    tokio::time::timeout(Duration::from_secs(60), calls)
        .await
        .expect("event() blocked on an unavailable server")
        .expect("caller task");
    let c = broadcaster.counters();
    assert_eq!(c.emitted + c.dropped, total, "{c:?}");
    // the queue holds `capacity`; the task may hold one more in its retry loop
    assert!(
        c.emitted == capacity as u64 || c.emitted == capacity as u64 + 1,
        "{c:?}"
    );

    // once the server is back, what was queued gets written
    env.restart().await.expect("restart");
    broadcaster.flush().await;
    let all = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("list");
    let ours = all
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Down"))
        .count() as u64;
    assert_eq!(ours, c.emitted);
    assert_eq!(broadcaster.counters().failed, 0);
    cancel.cancel();
    broadcaster.stopped().await;
}
