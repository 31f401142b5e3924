//! Durable storage with redb and group commit.
//!
//! The [`Committer`] runs on its own thread. Writes reach it in resourceVersion order;
//! it takes every write waiting at that moment, stores them in one redb transaction,
//! commits (fsync) once, then hands their events to the [`Sink`] it was given (the
//! store, which wakes watchers) and acknowledges the requests. Many requests in flight
//! thus share one fsync, so durability does not cap throughput. Without a data
//! directory the committer only publishes. The committer knows nothing of what it
//! publishes: events are opaque to it.
//!
//! When a commit fails (an I/O error, a full disk, a panic inside the storage engine),
//! the committer asks the sink to roll back every write not yet durable (the failed
//! batch and the later writes already applied in memory, which may build on it), fails
//! their requests, and closes the database; the next write reopens it, so writes work
//! again once the disk recovers. A failed fsync may still leave the batch in the file:
//! the committer then writes the batch's previous values back before anything else, so
//! that the file agrees with memory.
//!
//! Opening checks what the file is before redb reads it and catches the storage engine's
//! panics on damaged files ([`open`]): every failure names the file, what was found and
//! what to do.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::oneshot;

#[cfg(feature = "failpoints")]
use crate::storage::failpoints::{Failpoints, FaultyBackend};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RV_KEY: &str = "resourceVersion";
const FORMAT_KEY: &str = "formatVersion";
/// Version of the layout of the database (tables, keys, values) this build writes and
/// reads; a file of a newer version is refused.
pub const FORMAT_VERSION: u64 = 1;
/// Name of the database file in the data directory.
pub const DB_FILE: &str = "coxswain.redb";
/// Most writes stored in one transaction.
const MAX_BATCH: usize = 4096;
/// redb's page cache: every object is also in memory, so the cache only serves the
/// commits' page writes and the start-up read, and 2 MiB of it is enough.
const CACHE_SIZE: usize = 2 * 1024 * 1024;
/// Least time between two attempts to reopen a database that failed.
const REOPEN_INTERVAL: Duration = Duration::from_millis(200);
/// redb's magic number, the first bytes of its files.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
/// `ENOSPC` on Linux and macOS.
const ENOSPC: i32 = 28;

/// Error of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// redb failed.
    #[error("database: {0}")]
    Db(String),
    /// The file system of the data directory is full.
    #[error("{}", no_space_message(path))]
    NoSpace {
        /// The database file.
        path: PathBuf,
    },
    /// Another process holds the database.
    #[error("{}: Database already open. Cannot acquire lock. Another coxswain process uses the data directory {}: stop it, or choose another --data-dir", path.display(), dir(path).display())]
    Busy {
        /// The database file.
        path: PathBuf,
    },
    /// The file is not a database this build can read.
    #[error("the database file {} is damaged or not a coxswain database: {found}. {}", path.display(), remedy(path))]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What was found.
        found: String,
    },
    /// The file is empty (0 bytes): refused unless starting afresh was asked for.
    #[error("the database file {} is empty (0 bytes), so it holds no cluster: refusing to start an empty cluster in its place. {} To start afresh with an empty cluster, pass --allow-empty-database", path.display(), remedy(path))]
    Empty {
        /// The database file.
        path: PathBuf,
    },
    /// A newer coxswain wrote the file.
    #[error("the database file {} has storage format version {found}, newer than version {supported}, the newest this coxswain ({}) reads: run a newer coxswain, or restore a snapshot into another data directory (`coxswain snapshot restore SNAPSHOT --data-dir DIR`)", path.display(), env!("CARGO_PKG_VERSION"))]
    NewerFormat {
        /// The database file.
        path: PathBuf,
        /// Version in the file.
        found: u64,
        /// Newest version this build reads.
        supported: u64,
    },
}

fn dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

fn remedy(path: &Path) -> String {
    format!(
        "Move the file away (`mv {p} {p}.damaged`), then restore a snapshot (`coxswain snapshot restore SNAPSHOT --data-dir {d}`) or start again with an empty cluster.",
        p = path.display(),
        d = dir(path).display()
    )
}

fn no_space_message(path: &Path) -> String {
    format!(
        "database space exceeded: no space left on device writing {}: free space on the file system of the data directory {} (writes are refused until then; reads and watches keep working)",
        path.display(),
        dir(path).display()
    )
}

fn is_no_space(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(ENOSPC) || e.kind() == std::io::ErrorKind::StorageFull
}

/// Classify a redb error met while reading the file at start.
fn read_err(path: &Path, e: impl Into<redb::Error>) -> PersistError {
    let path = path.to_path_buf();
    match e.into() {
        redb::Error::DatabaseAlreadyOpen => PersistError::Busy { path },
        redb::Error::Io(io) if is_no_space(&io) => PersistError::NoSpace { path },
        redb::Error::Io(io)
            if !matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
            ) =>
        {
            PersistError::Db(format!("{}: I/O error: {io}", path.display()))
        }
        redb::Error::UpgradeRequired(v) => PersistError::Damaged {
            path,
            found: format!("a redb file of the old file format {v}"),
        },
        other => PersistError::Damaged {
            path,
            found: format!("the storage engine reports: {other}"),
        },
    }
}

/// Classify a redb error met while committing.
fn commit_err(path: &Path, no_space: bool, e: impl Into<redb::Error>) -> PersistError {
    match e.into() {
        redb::Error::Io(io) if is_no_space(&io) => PersistError::NoSpace {
            path: path.to_path_buf(),
        },
        // after a failed write redb refuses everything: report the first cause
        redb::Error::PreviousIo if no_space => PersistError::NoSpace {
            path: path.to_path_buf(),
        },
        other => PersistError::Db(format!("writing {}: {other}", path.display())),
    }
}

thread_local! {
    /// Set while this thread runs storage-engine code whose panics are caught.
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`, turning a panic into `Err(message)` without printing it: the storage engine
/// panics on some damaged files, and those panics are reported as errors instead.
fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET_PANICS.with(|q| q.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(was));
    result.map_err(|p| panic_message(p.as_ref()))
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    let message = if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".into()
    };
    if message.contains("raw_file_len") {
        // redb's assertion when the file ends before the regions its header lists
        format!("the file is shorter than its header says: it was truncated ({message})")
    } else {
        message
    }
}

/// How to open the database.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The database file.
    pub path: PathBuf,
    /// Start afresh when the file exists but is empty (0 bytes) instead of refusing.
    pub allow_empty: bool,
    /// Faults to inject (tests only).
    #[cfg(feature = "failpoints")]
    pub failpoints: Option<Arc<Failpoints>>,
}

impl OpenOptions {
    /// Options for the database file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> OpenOptions {
        OpenOptions {
            path: path.into(),
            allow_empty: false,
            #[cfg(feature = "failpoints")]
            failpoints: None,
        }
    }

    #[cfg(feature = "failpoints")]
    fn begin_commit(&self) {
        if let Some(f) = &self.failpoints {
            f.begin_commit();
        }
    }

    #[cfg(not(feature = "failpoints"))]
    fn begin_commit(&self) {}

    #[cfg(feature = "failpoints")]
    fn end_commit(&self, ok: bool) {
        if let Some(f) = &self.failpoints {
            f.end_commit(ok);
        }
    }

    #[cfg(not(feature = "failpoints"))]
    fn end_commit(&self, _ok: bool) {}
}

/// Describe the first bytes of a file that is not a redb database.
fn describe(head: &[u8], len: u64) -> String {
    let what = if head.starts_with(b"SQLite format 3\0") {
        "a SQLite database".to_string()
    } else if head.starts_with(b"PK\x03\x04") {
        "a zip archive".to_string()
    } else if head.starts_with(&[0x1f, 0x8b]) {
        "a gzip file".to_string()
    } else if head.starts_with(b"{\"kind\":\"CoxswainSnapshot\"") {
        "a coxswain snapshot (restore it with `coxswain snapshot restore`)".to_string()
    } else if head.len() < REDB_MAGIC.len() && REDB_MAGIC.starts_with(head) {
        "the first bytes of a redb file only (the file is truncated)".into()
    } else if let Ok(text) = std::str::from_utf8(head) {
        if text
            .chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace())
        {
            format!("text starting with {:?}", text)
        } else {
            format!("bytes {}", hex(head))
        }
    } else {
        format!("bytes {}", hex(head))
    };
    format!("it is not a redb database: its {len} bytes start with {what}")
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Look at the file before redb does: missing is a fresh start; empty is refused unless
/// allowed; a file not starting with redb's magic number is named for what it is.
fn inspect(opts: &OpenOptions) -> Result<(), PersistError> {
    use std::io::Read;
    let path = &opts.path;
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(PersistError::Db(format!("{}: {e}", path.display()))),
    };
    if len == 0 {
        if opts.allow_empty {
            tracing::warn!(file = %path.display(), "the database file is empty: starting afresh with an empty cluster (--allow-empty-database)");
            return Ok(());
        }
        return Err(PersistError::Empty { path: path.clone() });
    }
    let mut head = [0u8; 24];
    let n = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut n = 0;
            while n < head.len() {
                match f.read(&mut head[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        })
        .map_err(|e| PersistError::Db(format!("{}: {e}", path.display())))?;
    if !head[..n].starts_with(&REDB_MAGIC) {
        return Err(PersistError::Damaged {
            path: path.clone(),
            found: describe(&head[..n], len),
        });
    }
    Ok(())
}

/// Open the redb database of `opts` (no checks of our own).
fn open_database(opts: &OpenOptions) -> Result<Database, PersistError> {
    let mut builder = Database::builder();
    builder.set_cache_size(CACHE_SIZE);
    #[cfg(feature = "failpoints")]
    if let Some(f) = &opts.failpoints {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&opts.path)
            .map_err(|e| read_err(&opts.path, e))?;
        let backend =
            redb::backends::FileBackend::new(file).map_err(|e| read_err(&opts.path, e))?;
        return builder
            .create_with_backend(FaultyBackend::new(backend, f.clone()))
            .map_err(|e| read_err(&opts.path, e));
    }
    builder
        .create(&opts.path)
        .map_err(|e| read_err(&opts.path, e))
}

/// An open database and how to reopen it.
pub struct Durable {
    db: Option<Database>,
    opts: OpenOptions,
}

/// One change to persist.
pub struct PersistOp {
    /// Storage key of the resource.
    pub resource: Arc<str>,
    /// Object key.
    pub key: String,
    /// New JSON, or `None` for a delete.
    pub json: Option<Bytes>,
    /// The JSON before the change (`None`: the object did not exist), to undo the change
    /// in the file should its commit fail after reaching the file.
    pub prev: Option<Bytes>,
    /// The resourceVersion of the change.
    pub rv: u64,
}

type Ack = oneshot::Sender<Result<(), String>>;

/// Where the committer reports, in commit order.
pub trait Sink<E>: Send {
    /// These writes are durable: publish their events.
    fn publish(&self, events: Vec<E>);
    /// A commit failed: undo every write not yet durable and return the highest
    /// resourceVersion undone (writes up to it are failed as they reach the committer).
    fn roll_back(&self) -> u64;
}

enum Msg<E> {
    Attach(Box<dyn Sink<E>>),
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

/// Open (or create) the database of `opts` and read everything in it. Damage is
/// reported as [`PersistError::Damaged`] naming the file, never as a panic.
pub fn open(opts: &OpenOptions) -> Result<(Durable, Loaded), PersistError> {
    inspect(opts)?;
    let path = &opts.path;
    let (db, loaded) = catch_panic(|| -> Result<_, PersistError> {
        let db = open_database(opts)?;
        let format = {
            let w = db.begin_write().map_err(|e| read_err(path, e))?;
            let format = {
                w.open_table(OBJECTS).map_err(|e| read_err(path, e))?;
                let mut meta = w.open_table(META).map_err(|e| read_err(path, e))?;
                let format = meta
                    .get(FORMAT_KEY)
                    .map_err(|e| read_err(path, e))?
                    .map(|v| v.value());
                if format.is_none() {
                    // a new file, or one written before the version was recorded
                    meta.insert(FORMAT_KEY, FORMAT_VERSION)
                        .map_err(|e| read_err(path, e))?;
                }
                format.unwrap_or(FORMAT_VERSION)
            };
            if format > FORMAT_VERSION {
                w.abort().map_err(|e| read_err(path, e))?;
            } else {
                w.commit().map_err(|e| read_err(path, e))?;
            }
            format
        };
        if format > FORMAT_VERSION {
            return Err(PersistError::NewerFormat {
                path: path.clone(),
                found: format,
                supported: FORMAT_VERSION,
            });
        }
        let loaded = read_all(&db, path)?;
        Ok((db, loaded))
    })
    .map_err(|panic| PersistError::Damaged {
        path: path.clone(),
        found: format!("the storage engine failed reading it ({panic})"),
    })??;
    Ok((
        Durable {
            db: Some(db),
            opts: opts.clone(),
        },
        loaded,
    ))
}

fn read_all(db: &impl ReadableDatabase, path: &Path) -> Result<Loaded, PersistError> {
    let r = db.begin_read().map_err(|e| read_err(path, e))?;
    let meta = r.open_table(META).map_err(|e| read_err(path, e))?;
    let rv = meta
        .get(RV_KEY)
        .map_err(|e| read_err(path, e))?
        .map(|v| v.value())
        .unwrap_or(0);
    let objects_table = r.open_table(OBJECTS).map_err(|e| read_err(path, e))?;
    let mut objects = Vec::new();
    for item in objects_table.iter().map_err(|e| read_err(path, e))? {
        let (k, v) = item.map_err(|e| read_err(path, e))?;
        let k = k.value();
        match k.split_once('\u{0}') {
            Some((resource, key)) => {
                objects.push((resource.to_string(), key.to_string(), v.value().to_vec()))
            }
            None => {
                return Err(PersistError::Damaged {
                    path: path.to_path_buf(),
                    found: format!("a key without a resource: {k:?}"),
                })
            }
        }
    }
    Ok(Loaded { rv, objects })
}

/// Write a new database at `path` holding `objects` at resourceVersion `rv` (a snapshot
/// restore). The file must not exist.
pub fn create(
    path: &Path,
    rv: u64,
    objects: impl IntoIterator<Item = (String, String, Vec<u8>)>,
) -> Result<(), PersistError> {
    if path.exists() {
        return Err(PersistError::Db(format!(
            "{} exists: refusing to overwrite a database",
            path.display()
        )));
    }
    let db = Database::builder()
        .set_cache_size(CACHE_SIZE)
        .create(path)
        .map_err(|e| read_err(path, e))?;
    let w = db.begin_write().map_err(|e| read_err(path, e))?;
    {
        let mut table = w.open_table(OBJECTS).map_err(|e| read_err(path, e))?;
        for (resource, key, json) in objects {
            table
                .insert(db_key(&resource, &key).as_str(), json.as_slice())
                .map_err(|e| read_err(path, e))?;
        }
        let mut meta = w.open_table(META).map_err(|e| read_err(path, e))?;
        meta.insert(RV_KEY, rv).map_err(|e| read_err(path, e))?;
        meta.insert(FORMAT_KEY, FORMAT_VERSION)
            .map_err(|e| read_err(path, e))?;
    }
    w.commit().map_err(|e| read_err(path, e))?;
    Ok(())
}

/// Result of [`check`].
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Stored resourceVersion.
    pub rv: u64,
    /// Objects checked.
    pub objects: usize,
    /// Problems found (empty: the database is sound).
    pub problems: Vec<String>,
    /// Remarks that are no problem (a repair after an unclean shutdown).
    pub notes: Vec<String>,
}

/// Verify the database file at `path` without serving it: it opens, redb's integrity
/// check passes, every object parses as JSON, its `metadata.resourceVersion` is at most
/// the stored resourceVersion, and its key matches its namespace and name. `Err` when the
/// file cannot be opened at all.
pub fn check(path: &Path) -> Result<CheckReport, PersistError> {
    if !path.exists() {
        return Err(PersistError::Db(format!(
            "{}: no database file (nothing to check)",
            path.display()
        )));
    }
    let opts = OpenOptions::new(path);
    inspect(&opts)?;
    catch_panic(|| -> Result<CheckReport, PersistError> {
        let mut db = open_database(&opts)?;
        let mut report = CheckReport::default();
        match db.check_integrity() {
            Ok(true) => {}
            Ok(false) => report.notes.push(
                "the file was not closed cleanly (a crash or kill): redb repaired its allocator state"
                    .into(),
            ),
            Err(e) => {
                return Err(PersistError::Damaged {
                    path: path.to_path_buf(),
                    found: format!("redb integrity check failed: {e}"),
                })
            }
        }
        {
            let r = db.begin_read().map_err(|e| read_err(path, e))?;
            let meta = r.open_table(META).map_err(|e| read_err(path, e))?;
            let format = meta
                .get(FORMAT_KEY)
                .map_err(|e| read_err(path, e))?
                .map(|v| v.value());
            match format {
                Some(v) if v > FORMAT_VERSION => {
                    return Err(PersistError::NewerFormat {
                        path: path.to_path_buf(),
                        found: v,
                        supported: FORMAT_VERSION,
                    })
                }
                None => report
                    .problems
                    .push("no storage format version recorded".into()),
                _ => {}
            }
        }
        let loaded = read_all(&db, path)?;
        report.rv = loaded.rv;
        report.objects = loaded.objects.len();
        for (resource, key, json) in &loaded.objects {
            report
                .problems
                .extend(check_object(resource, key, json, loaded.rv));
        }
        Ok(report)
    })
    .map_err(|panic| PersistError::Damaged {
        path: path.to_path_buf(),
        found: format!("the storage engine failed reading it ({panic})"),
    })?
}

/// Problems of one stored object.
pub(crate) fn check_object(
    resource: &str,
    key: &str,
    json: &[u8],
    stored_rv: u64,
) -> Option<String> {
    let value: serde_json::Value = match serde_json::from_slice(json) {
        Ok(v) => v,
        Err(e) => return Some(format!("{resource} {key}: not JSON: {e}")),
    };
    let meta = value.get("metadata");
    let rv = meta
        .and_then(|m| m.get("resourceVersion"))
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse::<u64>().ok());
    let Some(rv) = rv else {
        return Some(format!(
            "{resource} {key}: no numeric metadata.resourceVersion"
        ));
    };
    if rv > stored_rv {
        return Some(format!(
            "{resource} {key}: resourceVersion {rv} is newer than the database's {stored_rv}"
        ));
    }
    let name = meta.and_then(|m| m.get("name")).and_then(|v| v.as_str());
    let ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(|v| v.as_str());
    let expected = match (ns, name) {
        (Some(ns), Some(name)) if !ns.is_empty() => format!("{ns}/{name}"),
        (_, Some(name)) => name.to_string(),
        (_, None) => return Some(format!("{resource} {key}: no metadata.name")),
    };
    (expected != key).then(|| {
        format!("{resource} {key}: stored under a key that is not its namespace/name ({expected})")
    })
}

impl<E: Clone + Send + 'static> Committer<E> {
    /// Start the committer thread; with `db`, writes are made durable first.
    pub fn start(db: Option<Durable>) -> Committer<E> {
        let (tx, rx) = mpsc::channel::<Msg<E>>();
        let spawned = std::thread::Builder::new()
            .name("coxswain-committer".into())
            .spawn(move || run(db, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the storage committer thread");
        }
        Committer { tx }
    }

    /// Give the committer what it reports committed and failed writes to.
    pub fn attach(&self, sink: Box<dyn Sink<E>>) {
        let _ = self.tx.send(Msg::Attach(sink));
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

/// A failed batch that may still be in the file: its writes' previous values.
struct Undo {
    /// The batch's resourceVersion (the file's when the batch reached it).
    rv: u64,
    /// The resourceVersion before the batch.
    prev_rv: u64,
    /// (database key, previous JSON), in write order.
    ops: Vec<(String, Option<Bytes>)>,
}

/// The committer's view of the file.
struct Disk {
    durable: Durable,
    /// Last resourceVersion known durable.
    rv: u64,
    /// The last failure was a full disk.
    no_space: bool,
    /// A failed batch to take out of the file once it opens again.
    undo: Option<Undo>,
    /// Last failure (for writes refused before a reopen is tried again).
    last_error: Option<(Instant, String)>,
}

impl Disk {
    fn path(&self) -> &Path {
        &self.durable.opts.path
    }

    /// The database, reopened after a failure (at most every [`REOPEN_INTERVAL`]), with
    /// a failed batch that reached the file taken out again.
    fn db(&mut self) -> Result<&Database, String> {
        if self.durable.db.is_none() {
            if let Some((at, e)) = &self.last_error {
                if at.elapsed() < REOPEN_INTERVAL {
                    return Err(e.clone());
                }
            }
            let opts = self.durable.opts.clone();
            let opened = catch_panic(|| open_database(&opts))
                .map_err(|p| {
                    format!(
                        "reopening {}: the storage engine failed: {p}",
                        opts.path.display()
                    )
                })
                .and_then(|r| r.map_err(|e| self.describe(e)));
            match opened {
                Ok(db) => {
                    tracing::info!(file = %opts.path.display(), "database reopened after a failed commit");
                    self.durable.db = Some(db);
                }
                Err(e) => {
                    self.last_error = Some((Instant::now(), e.clone()));
                    return Err(e);
                }
            }
        }
        if let Some(undo) = self.undo.take() {
            if let Err(e) = self.take_out(&undo) {
                self.undo = Some(undo);
                self.fail(e.clone());
                return Err(e);
            }
        }
        self.durable
            .db
            .as_ref()
            .ok_or_else(|| "database closed".to_string())
    }

    fn describe(&mut self, e: PersistError) -> String {
        if matches!(e, PersistError::NoSpace { .. }) {
            self.no_space = true;
        }
        e.to_string()
    }

    /// Remove a failed batch from the file if it reached it.
    fn take_out(&mut self, undo: &Undo) -> Result<(), String> {
        let path = self.path().to_path_buf();
        let Some(db) = self.durable.db.as_ref() else {
            return Err("database closed".into());
        };
        let no_space = self.no_space;
        let result = catch_panic(|| -> Result<bool, PersistError> {
            let w = db
                .begin_write()
                .map_err(|e| commit_err(&path, no_space, e))?;
            let on_disk = {
                let meta = w
                    .open_table(META)
                    .map_err(|e| commit_err(&path, no_space, e))?;
                let v = meta
                    .get(RV_KEY)
                    .map_err(|e| commit_err(&path, no_space, e))?;
                v.map(|v| v.value()).unwrap_or(0)
            };
            if on_disk != undo.rv {
                w.abort().map_err(|e| commit_err(&path, no_space, e))?;
                return Ok(false);
            }
            {
                let mut objects = w
                    .open_table(OBJECTS)
                    .map_err(|e| commit_err(&path, no_space, e))?;
                for (k, prev) in undo.ops.iter().rev() {
                    match prev {
                        Some(json) => objects.insert(k.as_str(), json.as_ref()).map(|_| ()),
                        None => objects.remove(k.as_str()).map(|_| ()),
                    }
                    .map_err(|e| commit_err(&path, no_space, e))?;
                }
                let mut meta = w
                    .open_table(META)
                    .map_err(|e| commit_err(&path, no_space, e))?;
                meta.insert(RV_KEY, undo.prev_rv)
                    .map_err(|e| commit_err(&path, no_space, e))?;
            }
            w.commit().map_err(|e| commit_err(&path, no_space, e))?;
            Ok(true)
        });
        match result {
            Ok(Ok(true)) => {
                tracing::warn!(file = %path.display(), rv = undo.rv, "a failed commit had reached the file: its writes were taken out again");
                Ok(())
            }
            Ok(Ok(false)) => Ok(()),
            Ok(Err(e)) => Err(self.describe(e)),
            Err(p) => Err(format!("the storage engine failed: {p}")),
        }
    }

    /// Record a failure and close the database (redb refuses everything after an I/O
    /// error until it is reopened).
    fn fail(&mut self, e: String) {
        self.durable.db = None;
        self.last_error = Some((Instant::now(), e));
    }

    fn commit<E>(&mut self, batch: &[(PersistOp, E, Ack)]) -> Result<(), String> {
        let path = self.path().to_path_buf();
        let no_space = self.no_space;
        let opts = self.durable.opts.clone();
        let db = self.db()?;
        opts.begin_commit();
        let result = catch_panic(|| commit(db, &path, no_space, batch));
        let ok = matches!(result, Ok(Ok(_)));
        opts.end_commit(ok);
        match result {
            Ok(Ok(rv)) => {
                self.rv = rv;
                self.no_space = false;
                self.last_error = None;
                Ok(())
            }
            failed => {
                let e = match failed {
                    Ok(Err(e)) => self.describe(e),
                    Err(p) => format!("writing {}: the storage engine failed: {p}", path.display()),
                    Ok(Ok(_)) => unreachable!("handled above"),
                };
                // the batch may have reached the file (a failed fsync after the header was
                // written): take it out once the file opens again
                self.undo = Some(Undo {
                    rv: batch.iter().map(|(op, _, _)| op.rv).max().unwrap_or(0),
                    prev_rv: self.rv,
                    ops: batch
                        .iter()
                        .map(|(op, _, _)| (db_key(&op.resource, &op.key), op.prev.clone()))
                        .collect(),
                });
                self.fail(e.clone());
                // reopen now, so that the file agrees with memory as soon as possible
                let _ = self.db_now();
                Err(e)
            }
        }
    }

    /// Reopen without waiting for the retry interval.
    fn db_now(&mut self) -> Result<(), String> {
        self.last_error = None;
        self.db().map(|_| ())
    }
}

fn run<E: Clone>(durable: Option<Durable>, rx: mpsc::Receiver<Msg<E>>) {
    let mut disk = durable.map(|durable| Disk {
        durable,
        rv: 0,
        no_space: false,
        undo: None,
        last_error: None,
    });
    if let Some(d) = disk.as_mut() {
        // the file's resourceVersion at start
        if let Some(db) = d.durable.db.as_ref() {
            d.rv = db
                .begin_read()
                .ok()
                .and_then(|r| r.open_table(META).ok())
                .and_then(|m| m.get(RV_KEY).ok().flatten().map(|v| v.value()))
                .unwrap_or(0);
        }
    }
    let mut sink: Option<Box<dyn Sink<E>>> = None;
    let mut batch: Vec<(PersistOp, E, Ack)> = Vec::new();
    // writes up to this resourceVersion were rolled back: fail them as they arrive
    let mut failed_through = 0u64;
    let mut failure = String::new();
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
                Msg::Attach(s) => sink = Some(s),
                Msg::Write(op, ev, ack) if op.rv <= failed_through => {
                    let _ = ack.send(Err(format!(
                        "not stored: an earlier write it may build on failed: {failure}"
                    )));
                    drop(ev);
                }
                Msg::Write(op, ev, ack) => batch.push((op, ev, ack)),
            }
        }
        if batch.is_empty() {
            continue;
        }
        let result = match disk.as_mut() {
            Some(d) => d.commit(&batch),
            None => Ok(()),
        };
        match result {
            Ok(()) => {
                if let Some(s) = &sink {
                    s.publish(batch.iter().map(|(_, e, _)| e.clone()).collect());
                }
                for (_, _, ack) in batch.drain(..) {
                    let _ = ack.send(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, writes = batch.len(), "storage commit failed: its writes and those after it are rolled back");
                let batch_rv = batch.iter().map(|(op, _, _)| op.rv).max().unwrap_or(0);
                failed_through = failed_through.max(batch_rv);
                if let Some(s) = &sink {
                    failed_through = failed_through.max(s.roll_back());
                }
                failure = e.clone();
                for (_, _, ack) in batch.drain(..) {
                    let _ = ack.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Store a batch in one transaction; returns the batch's resourceVersion.
fn commit<E>(
    db: &Database,
    path: &Path,
    no_space: bool,
    batch: &[(PersistOp, E, Ack)],
) -> Result<u64, PersistError> {
    let err = |e: redb::Error| commit_err(path, no_space, e);
    let w = db.begin_write().map_err(|e| err(e.into()))?;
    let mut max_rv = 0;
    {
        let mut objects = w.open_table(OBJECTS).map_err(|e| err(e.into()))?;
        for (op, _, _) in batch {
            let k = db_key(&op.resource, &op.key);
            match &op.json {
                Some(json) => {
                    objects
                        .insert(k.as_str(), json.as_ref())
                        .map_err(|e| err(e.into()))?;
                }
                None => {
                    objects.remove(k.as_str()).map_err(|e| err(e.into()))?;
                }
            }
            max_rv = max_rv.max(op.rv);
        }
        let mut meta = w.open_table(META).map_err(|e| err(e.into()))?;
        meta.insert(RV_KEY, max_rv).map_err(|e| err(e.into()))?;
    }
    w.commit().map_err(|e| err(e.into()))?;
    Ok(max_rv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, rv: u64) -> (String, String, Vec<u8>) {
        let json = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv.to_string()}});
        (
            "/configmaps".into(),
            format!("default/{name}"),
            serde_json::to_vec(&json).unwrap_or_default(),
        )
    }

    #[test]
    fn a_newer_format_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(DB_FILE);
        create(&path, 1, [object("a", 1)]).expect("create");
        {
            let db = Database::create(&path).expect("open");
            let w = db.begin_write().expect("write");
            w.open_table(META)
                .expect("meta")
                .insert(FORMAT_KEY, 7)
                .expect("insert");
            w.commit().expect("commit");
        }
        let err = open(&OpenOptions::new(&path)).err().expect("refused");
        let text = err.to_string();
        assert!(matches!(
            err,
            PersistError::NewerFormat {
                found: 7,
                supported: 1,
                ..
            }
        ));
        assert!(
            text.contains("format version 7") && text.contains("version 1"),
            "{text}"
        );
        assert!(text.contains(&path.display().to_string()), "{text}");
        let err = check(&path).expect_err("refused by the check too");
        assert!(matches!(err, PersistError::NewerFormat { .. }));
    }

    #[test]
    fn open_records_the_format_version_and_reads_what_create_wrote() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(DB_FILE);
        create(&path, 5, [object("a", 3), object("b", 5)]).expect("create");
        let (_, loaded) = open(&OpenOptions::new(&path)).expect("open");
        assert_eq!(loaded.rv, 5);
        assert_eq!(loaded.objects.len(), 2);
    }

    #[test]
    fn check_reports_objects_that_do_not_fit() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(DB_FILE);
        let mut bad_key = object("c", 2);
        bad_key.1 = "default/other".into();
        create(
            &path,
            4,
            [
                object("a", 3),
                object("future", 9),
                bad_key,
                (
                    "/configmaps".into(),
                    "default/x".into(),
                    b"{not json".to_vec(),
                ),
            ],
        )
        .expect("create");
        let report = check(&path).expect("check");
        assert_eq!(report.objects, 4);
        assert_eq!(report.problems.len(), 3, "{:?}", report.problems);
        let all = report.problems.join("\n");
        assert!(
            all.contains("resourceVersion 9 is newer than the database's 4"),
            "{all}"
        );
        assert!(all.contains("not JSON"), "{all}");
        assert!(all.contains("not its namespace/name (default/c)"), "{all}");
    }

    #[test]
    fn foreign_files_are_described() {
        assert!(describe(b"SQLite format 3\0abc", 100).contains("a SQLite database"));
        assert!(describe(b"PK\x03\x04", 100).contains("a zip archive"));
        assert!(describe(b"hello\n", 6).contains("text starting with \"hello\\n\""));
        assert!(describe(b"redb\x1a", 5).contains("truncated"));
        assert!(describe(&[0, 159, 146, 150], 4).contains("bytes 00 9f 92 96"));
    }
}
