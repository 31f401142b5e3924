//! Object storage: the in-memory state, the event history and the watch fan-out.
//!
//! All objects of all resources live in one [`Store`] guarded by a short mutex. Every
//! write takes the next value of one global, monotonically increasing resourceVersion,
//! updates the in-memory tables (persistent ordered maps, so that a LIST takes an O(1)
//! snapshot and serialises outside the lock), appends an [`Event`] to a bounded history
//! and hands the change to the [`crate::storage::persist`] committer. Watchers see an event only
//! after the committer made it durable, in resourceVersion order.
//!
//! A write is applied in memory before it is durable; until then it stays in an undo log.
//! Should its commit fail, the committer asks the store to [`Store::roll_back`] every
//! write not yet durable (the failed ones and the later ones, which may build on them),
//! so that memory equals the file again and watchers never see them.
//!
//! Objects are held as their serialised JSON plus the few values selectors need
//! (labels and per-kind selectable fields), which keeps memory close to the size of the
//! data and makes LIST a concatenation of byte slices.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::machinery::protobuf::encode::{encode_object, Encoded, ListItem};
use crate::storage::persist::{Committer, PersistOp, Sink};
use apimachinery::status::{ApiError, ApiResult};

/// Ordered table of one resource: key `namespace/name` (or `name`) → object.
pub type Table = imbl::OrdMap<String, Arc<StoredObject>>;

/// One stored object version.
#[derive(Debug)]
pub struct StoredObject {
    /// resourceVersion of this version.
    pub rv: u64,
    /// The serialised object (its `metadata.resourceVersion` equals `rv`).
    pub json: Bytes,
    /// Labels, for label selectors.
    pub labels: Box<[(Box<str>, Box<str>)]>,
    /// Values of selectable fields (`spec.nodeName`, ...), for field selectors.
    pub fields: Box<[(Box<str>, Box<str>)]>,
    /// The object's protobuf answer, encoded the first time a protobuf client needs it
    /// (LIST item, GET, watch event) and shared by all of them afterwards; never filled
    /// for objects only JSON clients read (boxed: an empty cache costs 16 bytes).
    /// `Ok(None)`: the kind has no protobuf schema.
    protobuf: OnceLock<Box<Result<Option<Encoded>, String>>>,
}

impl StoredObject {
    /// Build from an object value whose `metadata.resourceVersion` is already `rv`.
    pub fn from_value(rv: u64, value: &Value, selectable: &[&str]) -> ApiResult<StoredObject> {
        let json = serde_json::to_vec(value)
            .map_err(|e| ApiError::internal(format!("serialising object: {e}")))?;
        // A copy into an allocation of exactly the JSON's size: the serialiser's buffer
        // has grown by doubling, and shrinking it in place (`into_boxed_slice`) lets the
        // allocator (mimalloc keeps a block that is at most half unused) hold on to the
        // larger block for as long as the object is stored.
        Ok(Self::with_json(
            rv,
            Bytes::copy_from_slice(&json),
            value,
            selectable,
        ))
    }

    /// Build from bytes and the value they encode.
    pub fn with_json(rv: u64, json: Bytes, value: &Value, selectable: &[&str]) -> StoredObject {
        let labels = value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str().into(), v.as_str().unwrap_or("").into()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_boxed_slice();
        let fields = selectable
            .iter()
            .map(|f| ((*f).into(), field_value(value, f).into()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        StoredObject {
            rv,
            json,
            labels,
            fields,
            protobuf: OnceLock::new(),
        }
    }

    /// The object's protobuf answer (magic, envelope and object), encoded from its JSON
    /// once per stored version; `None` when its kind has no protobuf schema.
    pub fn protobuf(&self) -> ApiResult<Option<&Encoded>> {
        match self
            .protobuf
            .get_or_init(|| Box::new(encode_object(&self.json)))
            .as_ref()
        {
            Ok(e) => Ok(e.as_ref()),
            Err(e) => Err(ApiError::internal(e.clone())),
        }
    }

    /// The object as an item of a protobuf list: its encoding when it has one.
    pub fn list_item(&self) -> ApiResult<ListItem> {
        Ok(match self.protobuf()? {
            Some(e) => ListItem::Encoded(self.json.clone(), e.clone()),
            None => ListItem::Json(self.json.clone()),
        })
    }

    /// Parse the JSON back into a value.
    pub fn value(&self) -> ApiResult<Value> {
        serde_json::from_slice(&self.json)
            .map_err(|e| ApiError::internal(format!("decoding stored object: {e}")))
    }

    /// The label value for `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }

    /// The value of a selectable field.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| &**v)
    }
}

/// The string value of a field-selector field (`spec.nodeName`) in an object;
/// booleans and numbers are rendered as upstream field sets do.
pub fn field_value(value: &Value, path: &str) -> String {
    if path == "status.podIPs" {
        // upstream exposes the first podIPs entry's ip
        return value
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
    }
    let pointer = format!("/{}", path.replace('.', "/"));
    match value.pointer(&pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Object(o)) if path == "source" => o
            .get("component")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => match path {
            "spec.unschedulable" | "spec.hostNetwork" => "false".into(),
            "status.replicas" | "status.successful" => "0".into(),
            _ => String::new(),
        },
    }
}

/// Kind of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventType {}

/// One change to one object.
#[derive(Debug)]
pub struct Event {
    /// resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Storage key of the resource (`apps/deployments`).
    pub resource: Arc<str>,
    /// Object key (`namespace/name`).
    pub key: String,
    /// The object after the change (for deletes: its last state with the delete's rv).
    pub object: Arc<StoredObject>,
    /// The object before the change.
    pub prev: Option<Arc<StoredObject>>,
}

/// What a write decided to do.
pub enum WriteAction {
    /// Store this object (create or update).
    Put(Value),
    /// Remove the object; the DELETED event carries this final state (`None`: the
    /// stored object as it is).
    Delete(Option<Value>),
    /// Change nothing; answer with this object.
    Unchanged(Arc<StoredObject>),
}

/// Result of a write.
pub struct WriteOutcome {
    /// The stored (or, for dry-run, the would-be) object; for deletes, the final state.
    pub object: Arc<StoredObject>,
    /// What happened, `None` when nothing changed.
    pub event: Option<EventType>,
}

/// Read access to other tables while a write decides.
pub struct View<'a> {
    tables: &'a HashMap<Arc<str>, Table>,
}

impl View<'_> {
    /// Object `key` of resource `resource` (storage key).
    pub fn get(&self, resource: &str, key: &str) -> Option<&Arc<StoredObject>> {
        self.tables.get(resource).and_then(|t| t.get(key))
    }

    /// Whether any object of resource `resource` satisfies `f`.
    pub fn table(&self, resource: &str) -> Option<&Table> {
        self.tables.get(resource)
    }
}

struct Inner {
    /// Last resourceVersion handed out.
    rv: u64,
    /// Last resourceVersion made durable and published to watchers.
    committed_rv: u64,
    tables: HashMap<Arc<str>, Table>,
    /// Recent events, oldest first, for watch resumption and snapshots at older versions.
    history: VecDeque<Arc<Event>>,
    /// Events with rv > this are all in `history`.
    history_floor: u64,
    /// Writes applied in memory but not yet durable (rv > `committed_rv`), oldest first:
    /// the undo log of a failed commit.
    uncommitted: VecDeque<Arc<Event>>,
}

/// The shared object store.
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
    committer: Committer<Arc<Event>>,
    history_limit: usize,
}

/// A consistent view of one resource at one resourceVersion.
pub struct Snapshot {
    /// The resourceVersion the snapshot shows.
    pub rv: u64,
    /// The objects.
    pub table: Table,
}

/// A registration for watch events, created consistently with the history.
pub struct Subscription {
    /// Events already in history that the watcher must see first (rv > from).
    pub backlog: Vec<Arc<Event>>,
    /// Live events.
    pub receiver: broadcast::Receiver<Arc<Event>>,
    /// Initial snapshot when requested (`sendInitialEvents` or rv unset/0).
    pub snapshot: Option<Snapshot>,
}

impl Store {
    /// A store holding `tables` (loaded from disk or empty) at resourceVersion `rv`.
    pub fn new(
        rv: u64,
        tables: HashMap<Arc<str>, Table>,
        committer: Committer<Arc<Event>>,
        history_limit: usize,
    ) -> Arc<Store> {
        let (events, _) = broadcast::channel(16 * 1024);
        Arc::new(Store {
            inner: Mutex::new(Inner {
                rv,
                committed_rv: rv,
                tables,
                history: VecDeque::new(),
                history_floor: rv,
                uncommitted: VecDeque::new(),
            }),
            events,
            committer,
            history_limit,
        })
    }

    /// Connect the committer to this store so that it publishes committed events and
    /// rolls back failed ones.
    pub fn attach_committer(self: &Arc<Self>) {
        self.committer
            .attach(Box::new(CommitterSink(Arc::downgrade(self))));
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock means a panic happened while holding it; the data is still
        // consistent because every mutation is applied in one step at the end.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of open watch subscriptions (all resources).
    pub fn watcher_count(&self) -> usize {
        self.events.receiver_count()
    }

    /// Current (last handed out) resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// Last durable resourceVersion.
    pub fn committed_rv(&self) -> u64 {
        self.lock().committed_rv
    }

    /// Oldest resourceVersion still reachable through the history.
    pub fn history_floor(&self) -> u64 {
        self.lock().history_floor
    }

    /// One object.
    pub fn get(&self, resource: &str, key: &str) -> Option<Arc<StoredObject>> {
        self.lock()
            .tables
            .get(resource)
            .and_then(|t| t.get(key).cloned())
    }

    /// The current snapshot of a resource.
    pub fn snapshot(&self, resource: &str) -> Snapshot {
        let inner = self.lock();
        Snapshot {
            rv: inner.rv,
            table: inner.tables.get(resource).cloned().unwrap_or_default(),
        }
    }

    /// A snapshot of a resource as it was at `rv`; `Err` with 410 when the history no
    /// longer reaches back that far.
    pub fn snapshot_at(&self, resource: &str, rv: u64) -> Result<Snapshot, u64> {
        let inner = self.lock();
        if rv >= inner.rv {
            return Ok(Snapshot {
                rv: inner.rv,
                table: inner.tables.get(resource).cloned().unwrap_or_default(),
            });
        }
        if rv < inner.history_floor {
            return Err(inner.history_floor);
        }
        let mut table = inner.tables.get(resource).cloned().unwrap_or_default();
        for ev in inner.history.iter().rev() {
            if ev.rv <= rv {
                break;
            }
            if &*ev.resource != resource {
                continue;
            }
            match &ev.prev {
                Some(p) => {
                    table.insert(ev.key.clone(), p.clone());
                }
                None => {
                    table.remove(&ev.key);
                }
            }
        }
        Ok(Snapshot { rv, table })
    }

    /// Subscribe to events of all resources with rv > `from` (`None`: from now, with an
    /// initial snapshot of `resource`). Fails with the history floor when `from` is too old.
    pub fn subscribe(
        &self,
        resource: &str,
        from: Option<u64>,
        want_snapshot: bool,
    ) -> Result<Subscription, u64> {
        let inner = self.lock();
        let receiver = self.events.subscribe();
        let snapshot = if want_snapshot {
            Some(Snapshot {
                rv: inner.rv,
                table: inner.tables.get(resource).cloned().unwrap_or_default(),
            })
        } else {
            None
        };
        let mut backlog = Vec::new();
        if let Some(from) = from {
            if from < inner.history_floor {
                return Err(inner.history_floor);
            }
            for ev in inner.history.iter() {
                if ev.rv > from && ev.rv <= inner.committed_rv && &*ev.resource == resource {
                    backlog.push(ev.clone());
                }
            }
        }
        Ok(Subscription {
            backlog,
            receiver,
            snapshot,
        })
    }

    /// Committed events of `resource` with `after < rv < before` (to recover a watcher
    /// that fell behind the live channel); `None` when the history no longer has them.
    pub fn events_between(
        &self,
        resource: &str,
        after: u64,
        before: u64,
    ) -> Option<Vec<Arc<Event>>> {
        let inner = self.lock();
        if after < inner.history_floor {
            return None;
        }
        Some(
            inner
                .history
                .iter()
                .filter(|e| e.rv > after && e.rv < before && &*e.resource == resource)
                .cloned()
                .collect(),
        )
    }

    /// Apply a write to object `key` of `resource`. `decide` sees the current object and
    /// the other tables and says what to do; it runs under the store lock, so it must be
    /// quick. With `dry_run` nothing is stored. Returns once the change is durable.
    pub async fn write<F>(
        &self,
        resource: &str,
        key: &str,
        selectable: &[&str],
        dry_run: bool,
        decide: F,
    ) -> ApiResult<WriteOutcome>
    where
        F: FnOnce(Option<&Arc<StoredObject>>, &View<'_>) -> ApiResult<WriteAction>,
    {
        let ack = {
            let mut inner = self.lock();
            let current = inner.tables.get(resource).and_then(|t| t.get(key)).cloned();
            let action = decide(
                current.as_ref(),
                &View {
                    tables: &inner.tables,
                },
            )?;
            let next_rv = inner.rv + 1;
            let (kind, object) = match action {
                WriteAction::Unchanged(o) => {
                    return Ok(WriteOutcome {
                        object: o,
                        event: None,
                    });
                }
                WriteAction::Put(mut value) => {
                    set_rv(
                        &mut value,
                        if dry_run {
                            current.as_ref().map(|c| c.rv).unwrap_or(0)
                        } else {
                            next_rv
                        },
                    );
                    if dry_run {
                        // dry-run: never assign a resourceVersion to a new object
                        if current.is_none() {
                            if let Some(m) =
                                value.get_mut("metadata").and_then(Value::as_object_mut)
                            {
                                m.remove("resourceVersion");
                            }
                        }
                    }
                    let obj = Arc::new(StoredObject::from_value(next_rv, &value, selectable)?);
                    let kind = if current.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    (kind, obj)
                }
                WriteAction::Delete(last) => {
                    let Some(cur) = current.as_ref() else {
                        return Err(ApiError::internal("delete of a missing object"));
                    };
                    let mut value = match last {
                        Some(v) => v,
                        None => cur.value()?,
                    };
                    if !dry_run {
                        set_rv(&mut value, next_rv);
                    }
                    let obj = Arc::new(StoredObject::from_value(next_rv, &value, selectable)?);
                    (EventType::Deleted, obj)
                }
            };
            if dry_run {
                return Ok(WriteOutcome {
                    object,
                    event: Some(kind),
                });
            }
            inner.rv = next_rv;
            let resource_key: Arc<str> = match inner.tables.get_key_value(resource) {
                Some((k, _)) => k.clone(),
                None => Arc::from(resource),
            };
            let table = inner.tables.entry(resource_key.clone()).or_default();
            let op = if kind == EventType::Deleted {
                table.remove(key);
                PersistOp {
                    resource: resource_key.clone(),
                    key: key.to_string(),
                    json: None,
                    prev: current.as_ref().map(|c| c.json.clone()),
                    rv: next_rv,
                }
            } else {
                table.insert(key.to_string(), object.clone());
                PersistOp {
                    resource: resource_key.clone(),
                    key: key.to_string(),
                    json: Some(object.json.clone()),
                    prev: current.as_ref().map(|c| c.json.clone()),
                    rv: next_rv,
                }
            };
            let event = Arc::new(Event {
                rv: next_rv,
                kind,
                resource: resource_key,
                key: key.to_string(),
                object: object.clone(),
                prev: current,
            });
            inner.history.push_back(event.clone());
            inner.uncommitted.push_back(event.clone());
            while inner.history.len() > self.history_limit {
                if let Some(old) = inner.history.pop_front() {
                    inner.history_floor = old.rv;
                }
            }
            let (tx, rx) = oneshot::channel();
            self.committer.submit(op, event, tx);
            drop(inner);
            (rx, object, kind)
        };
        let (rx, object, kind) = ack;
        match rx.await {
            Ok(Ok(())) => Ok(WriteOutcome {
                object,
                event: Some(kind),
            }),
            Ok(Err(e)) => Err(ApiError::internal(format!("storage: {e}"))),
            Err(_) => Err(ApiError::internal("storage: the committer stopped")),
        }
    }

    /// Called by the committer once events up to `rv` are durable: publish them in order.
    pub(crate) fn publish(&self, events: &[Arc<Event>]) {
        let mut inner = self.lock();
        for ev in events {
            if ev.rv > inner.committed_rv {
                inner.committed_rv = ev.rv;
            }
            // No receivers is fine.
            let _ = self.events.send(ev.clone());
        }
        let committed = inner.committed_rv;
        while inner.uncommitted.front().is_some_and(|e| e.rv <= committed) {
            inner.uncommitted.pop_front();
        }
    }

    /// Called by the committer when a commit failed: undo every write not yet durable,
    /// newest first, drop their events from the history (watchers never see them), and
    /// return the last resourceVersion handed out (the writes up to it fail). The
    /// resourceVersion counter does not go back: versions handed out stay unique.
    pub fn roll_back(&self) -> u64 {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let undone = inner.uncommitted.len();
        undo(&mut inner.tables, inner.uncommitted.iter().rev());
        inner.uncommitted.clear();
        let committed = inner.committed_rv;
        while inner.history.back().is_some_and(|e| e.rv > committed) {
            inner.history.pop_back();
        }
        if inner.history_floor > committed {
            // the history was trimmed into the undone writes: it is empty now, and nothing
            // durable follows `committed`
            inner.history_floor = committed;
        }
        tracing::warn!(
            writes = undone,
            committed_rv = committed,
            "rolled back the writes of a failed commit"
        );
        inner.rv
    }

    /// Every resource's objects as of the last durable resourceVersion (a snapshot of
    /// the cluster: cheap, the tables are persistent maps), with that resourceVersion.
    pub fn committed_tables(&self) -> (u64, HashMap<Arc<str>, Table>) {
        let inner = self.lock();
        let mut tables = inner.tables.clone();
        undo(&mut tables, inner.uncommitted.iter().rev());
        (inner.committed_rv, tables)
    }
}

/// Undo `writes` (newest first) in `tables`: each key gets its previous object back,
/// or goes if the write created it.
fn undo<'a>(tables: &mut HashMap<Arc<str>, Table>, writes: impl Iterator<Item = &'a Arc<Event>>) {
    for ev in writes {
        let table = tables.entry(ev.resource.clone()).or_default();
        match &ev.prev {
            Some(p) => {
                table.insert(ev.key.clone(), p.clone());
            }
            None => {
                table.remove(&ev.key);
            }
        }
    }
}

/// The committer's view of the store.
struct CommitterSink(std::sync::Weak<Store>);

impl Sink<Arc<Event>> for CommitterSink {
    fn publish(&self, events: Vec<Arc<Event>>) {
        if let Some(s) = self.0.upgrade() {
            s.publish(&events);
        }
    }

    fn roll_back(&self) -> u64 {
        self.0.upgrade().map(|s| s.roll_back()).unwrap_or(0)
    }
}

/// Set `metadata.resourceVersion`.
pub fn set_rv(value: &mut Value, rv: u64) {
    if let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The object key for a namespace and name.
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}
