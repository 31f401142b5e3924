//! Test support: an informer store behind a watch the test drives, so indexes are kept
//! up by the informer's own code (the owner-index and pod GC tests compare index lookups
//! with the scans they replace on it).

use std::sync::{Arc, Mutex};

use coxswain_runtime::cache::{
    CachedKind, IndexFn, Informer, InformerConfig, ListWatch, RawObject, Storage, Store,
};
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::ObjectList;
use tokio_util::sync::CancellationToken;

type Event = kube::Result<WatchEvent<RawObject>>;

/// Lists nothing, then streams what the test sends.
pub(crate) struct FakeApi {
    events: Mutex<Option<mpsc::UnboundedReceiver<Event>>>,
}

impl ListWatch for FakeApi {
    fn list<'a>(&'a self, _: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<RawObject>>> {
        async {
            Ok(ObjectList {
                types: Default::default(),
                metadata: ListMeta {
                    resource_version: Some("1".into()),
                    ..Default::default()
                },
                items: Vec::new(),
            })
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        _: &'a WatchParams,
        _: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, Event>>> {
        let events = self.events.lock().expect("lock").take();
        async move {
            Ok(match events {
                Some(rx) => rx.boxed(),
                None => futures::stream::pending().boxed(),
            })
        }
        .boxed()
    }

    fn describe(&self) -> String {
        "fake".into()
    }
}

/// An informer store the test changes one event at a time, waiting for each to land.
pub(crate) struct Feed<K: CachedKind> {
    pub(crate) informer: Arc<Informer<K>>,
    events: mpsc::UnboundedSender<Event>,
    applied: tokio::sync::mpsc::UnboundedReceiver<()>,
    cancel: CancellationToken,
    rv: u64,
}

impl<K: CachedKind> Feed<K> {
    pub(crate) async fn start(storage: Storage, indexes: Vec<(&str, IndexFn<K>)>) -> Self {
        let informer = Informer::<K>::new(InformerConfig {
            storage,
            watch_list: false,
            ..Default::default()
        });
        for (name, f) in indexes {
            informer.store().add_index(name, f);
        }
        let (tx, rx) = mpsc::unbounded();
        let (done, applied) = tokio::sync::mpsc::unbounded_channel();
        informer.add_handler(move |_| {
            let _ = done.send(());
        });
        let cancel = CancellationToken::new();
        let api = FakeApi {
            events: Mutex::new(Some(rx)),
        };
        tokio::spawn(informer.clone().run(api, cancel.clone()));
        informer.wait_for_sync().await;
        Feed {
            informer,
            events: tx,
            applied,
            cancel,
            rv: 1,
        }
    }

    pub(crate) fn store(&self) -> &Store<K> {
        self.informer.store()
    }

    async fn send(&mut self, obj: &K, deleted: bool) {
        self.rv += 1;
        let mut obj = obj.clone();
        obj.meta_mut().resource_version = Some(self.rv.to_string());
        let raw = serde_json::value::to_raw_value(&obj).expect("encodes");
        let ev = if deleted {
            WatchEvent::Deleted(raw)
        } else {
            WatchEvent::Modified(raw)
        };
        self.events.unbounded_send(Ok(ev)).expect("informer runs");
        tokio::time::timeout(std::time::Duration::from_secs(10), self.applied.recv())
            .await
            .expect("the informer applies the event")
            .expect("handler alive");
    }

    pub(crate) async fn put(&mut self, obj: &K) {
        self.send(obj, false).await;
    }

    pub(crate) async fn delete(&mut self, obj: &K) {
        self.send(obj, true).await;
    }
}

impl<K: CachedKind> Drop for Feed<K> {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
