//! Durable storage with redb and group commit.
//!
//! The [`Committer`] runs on its own thread. Writes reach it in resourceVersion order;
//! it takes every write waiting at that moment, stores them in one redb transaction,
//! commits (fsync) once, then hands their events to the publisher it was given (the
//! store, which wakes watchers) and acknowledges the requests. Many requests in flight
//! thus share one fsync, so durability does not cap throughput. Without a data
//! directory the committer only publishes. The committer knows nothing of what it
//! publishes: events are opaque to it.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use bytes::Bytes;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::oneshot;

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RV_KEY: &str = "resourceVersion";
/// Most writes stored in one transaction.
const MAX_BATCH: usize = 4096;

/// Error of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// redb failed.
    #[error("database: {0}")]
    Db(String),
}

fn db_err(e: impl std::fmt::Display) -> PersistError {
    PersistError::Db(e.to_string())
}

/// One change to persist.
pub struct PersistOp {
    /// Storage key of the resource.
    pub resource: Arc<str>,
    /// Object key.
    pub key: String,
    /// New JSON, or `None` for a delete.
    pub json: Option<Bytes>,
    /// The resourceVersion of the change.
    pub rv: u64,
}

type Ack = oneshot::Sender<Result<(), String>>;

/// Where committed events go, in commit order.
pub type Publisher<E> = Box<dyn Fn(Vec<E>) + Send>;

enum Msg<E> {
    Attach(Publisher<E>),
    Write(PersistOp, E, Ack),
}

/// Handle to the committer thread; `E` is what it publishes for each write.
pub struct Committer<E> {
    tx: mpsc::Sender<Msg<E>>,
}

/// What was found on disk at start.
pub struct Loaded {
    /// Last resourceVersion written.
    pub rv: u64,
    /// Every stored object: (resource storage key, object key, JSON).
    pub objects: Vec<(String, String, Vec<u8>)>,
}

fn db_key(resource: &str, key: &str) -> String {
    format!("{resource}\u{0}{key}")
}

/// Open (or create) the database at `path` and read everything in it.
pub fn open(path: &Path) -> Result<(Database, Loaded), PersistError> {
    // redb's page cache: every object is also in memory, so the cache only serves the
    // commits' page writes and the start-up read, and 2 MiB of it is enough
    let db = Database::builder()
        .set_cache_size(2 * 1024 * 1024)
        .create(path)
        .map_err(db_err)?;
    {
        let w = db.begin_write().map_err(db_err)?;
        w.open_table(OBJECTS).map_err(db_err)?;
        w.open_table(META).map_err(db_err)?;
        w.commit().map_err(db_err)?;
    }
    let r = db.begin_read().map_err(db_err)?;
    let meta = r.open_table(META).map_err(db_err)?;
    let rv = meta
        .get(RV_KEY)
        .map_err(db_err)?
        .map(|v| v.value())
        .unwrap_or(0);
    let objects_table = r.open_table(OBJECTS).map_err(db_err)?;
    let mut objects = Vec::new();
    for item in objects_table.iter().map_err(db_err)? {
        let (k, v) = item.map_err(db_err)?;
        let k = k.value();
        if let Some((resource, key)) = k.split_once('\u{0}') {
            objects.push((resource.to_string(), key.to_string(), v.value().to_vec()));
        }
    }
    Ok((db, Loaded { rv, objects }))
}

impl<E: Clone + Send + 'static> Committer<E> {
    /// Start the committer thread; with `db`, writes are made durable first.
    pub fn start(db: Option<Database>) -> Committer<E> {
        let (tx, rx) = mpsc::channel::<Msg<E>>();
        let spawned = std::thread::Builder::new()
            .name("coxswain-committer".into())
            .spawn(move || run(db, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the storage committer thread");
        }
        Committer { tx }
    }

    /// Give the committer what it publishes committed events to.
    pub fn attach(&self, publish: Publisher<E>) {
        let _ = self.tx.send(Msg::Attach(publish));
    }

    /// Queue a write (called in resourceVersion order).
    pub fn submit(&self, op: PersistOp, event: E, ack: Ack) {
        if let Err(mpsc::SendError(Msg::Write(_, _, ack))) =
            self.tx.send(Msg::Write(op, event, ack))
        {
            let _ = ack.send(Err("committer is not running".into()));
        }
    }
}

fn run<E: Clone>(db: Option<Database>, rx: mpsc::Receiver<Msg<E>>) {
    let mut publish: Option<Publisher<E>> = None;
    let mut batch: Vec<(PersistOp, E, Ack)> = Vec::new();
    loop {
        let first = match rx.recv() {
            Ok(m) => m,
            Err(_) => {
                tracing::info!("storage committer stops: all senders are gone");
                return;
            }
        };
        let mut pending = vec![first];
        while pending.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(m) => pending.push(m),
                Err(_) => break,
            }
        }
        for m in pending {
            match m {
                Msg::Attach(p) => publish = Some(p),
                Msg::Write(op, ev, ack) => batch.push((op, ev, ack)),
            }
        }
        if batch.is_empty() {
            continue;
        }
        let result = match &db {
            Some(db) => commit(db, &batch),
            None => Ok(()),
        };
        match result {
            Ok(()) => {
                if let Some(p) = &publish {
                    p(batch.iter().map(|(_, e, _)| e.clone()).collect());
                }
                for (_, _, ack) in batch.drain(..) {
                    let _ = ack.send(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "storage commit failed");
                for (_, _, ack) in batch.drain(..) {
                    let _ = ack.send(Err(e.to_string()));
                }
            }
        }
    }
}

fn commit<E>(db: &Database, batch: &[(PersistOp, E, Ack)]) -> Result<(), PersistError> {
    let w = db.begin_write().map_err(db_err)?;
    let mut max_rv = 0;
    {
        let mut objects = w.open_table(OBJECTS).map_err(db_err)?;
        for (op, _, _) in batch {
            let k = db_key(&op.resource, &op.key);
            match &op.json {
                Some(json) => {
                    objects.insert(k.as_str(), json.as_ref()).map_err(db_err)?;
                }
                None => {
                    objects.remove(k.as_str()).map_err(db_err)?;
                }
            }
            max_rv = max_rv.max(op.rv);
        }
        let mut meta = w.open_table(META).map_err(db_err)?;
        meta.insert(RV_KEY, max_rv).map_err(db_err)?;
    }
    w.commit().map_err(db_err)?;
    Ok(())
}
