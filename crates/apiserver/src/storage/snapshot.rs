//! Snapshots of a running cluster (etcd's `snapshot save` / `snapshot restore`).
//!
//! `GET /coxswain/v1/snapshot` (a non-resource URL: `system:masters` and roles granting
//! it, such as `cluster-admin`) answers with every object as of the last durable
//! resourceVersion. Taking it holds the store lock only to clone the tables (persistent
//! maps) and undo the writes not yet durable; the body is then written while writes go
//! on. `coxswain snapshot restore` turns such a file into a new database ([`restore`]).
//!
//! The format is JSON lines: a header
//! `{"kind":"CoxswainSnapshot","formatVersion":1,"resourceVersion":"N"}`, one line per
//! object `{"resource":"/configmaps","key":"ns/name","object":{...}}` in resource then
//! key order, and a trailer `{"end":true,"objects":COUNT,"sha256":"..."}` holding the
//! SHA-256 of every line before it, so that a truncated or altered file is refused.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use sha2::{Digest, Sha256};

use crate::storage::persist::{self, PersistError};
use crate::storage::store::{Store, StoredObject, Table};

/// Path of the snapshot endpoint.
pub const PATH: &str = "/coxswain/v1/snapshot";
/// `kind` of a snapshot's header line.
pub const KIND: &str = "CoxswainSnapshot";
/// Version of the snapshot format.
pub const FORMAT_VERSION: u64 = 1;
/// Bytes per chunk of the answer.
const CHUNK: usize = 256 * 1024;

/// The lines of a snapshot, produced as the body is sent.
pub struct Lines {
    resources: std::vec::IntoIter<(Arc<str>, Table)>,
    current: Option<(Arc<str>, <Table as IntoIterator>::IntoIter)>,
    header: Option<Bytes>,
    hash: Option<Sha256>,
    count: u64,
}

impl Lines {
    /// The snapshot of `store` at its last durable resourceVersion.
    pub fn of(store: &Store) -> (u64, Lines) {
        let (rv, tables) = store.committed_tables();
        let mut resources: Vec<(Arc<str>, Table)> = tables.into_iter().collect();
        resources.sort_by(|a, b| a.0.cmp(&b.0));
        let header = serde_json::json!({
            "kind": KIND,
            "formatVersion": FORMAT_VERSION,
            "resourceVersion": rv.to_string(),
        });
        let mut line = serde_json::to_vec(&header).unwrap_or_default();
        line.push(b'\n');
        (
            rv,
            Lines {
                resources: resources.into_iter(),
                current: None,
                header: Some(line.into()),
                hash: Some(Sha256::new()),
                count: 0,
            },
        )
    }

    fn next_object(&mut self) -> Option<(Arc<str>, String, Arc<StoredObject>)> {
        loop {
            if let Some((resource, items)) = &mut self.current {
                if let Some((key, obj)) = items.next() {
                    return Some((resource.clone(), key, obj));
                }
            }
            let (resource, table) = self.resources.next()?;
            self.current = Some((resource, table.into_iter()));
        }
    }
}

impl Iterator for Lines {
    type Item = Bytes;

    /// The next chunk of the body (whole lines).
    fn next(&mut self) -> Option<Bytes> {
        self.hash.as_ref()?;
        let mut buf = BytesMut::with_capacity(CHUNK + 4096);
        if let Some(h) = self.header.take() {
            buf.put_slice(&h);
        }
        while buf.len() < CHUNK {
            let Some((resource, key, obj)) = self.next_object() else {
                break;
            };
            // the stored JSON is embedded as is: it is one line (serde_json writes no
            // newlines) and already valid JSON
            buf.put_slice(b"{\"resource\":");
            buf.put_slice(&serde_json::to_vec(&*resource).unwrap_or_default());
            buf.put_slice(b",\"key\":");
            buf.put_slice(&serde_json::to_vec(&key).unwrap_or_default());
            buf.put_slice(b",\"object\":");
            buf.put_slice(&obj.json);
            buf.put_slice(b"}\n");
            self.count += 1;
        }
        if let Some(h) = self.hash.as_mut() {
            h.update(&buf);
        }
        if buf.len() < CHUNK {
            // the objects are done: the trailer ends the body
            let digest = self.hash.take().map(|h| h.finalize()).unwrap_or_default();
            let trailer = serde_json::json!({
                "end": true,
                "objects": self.count,
                "sha256": hex(&digest),
            });
            buf.put_slice(&serde_json::to_vec(&trailer).unwrap_or_default());
            buf.put_slice(b"\n");
        }
        Some(buf.freeze())
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The HTTP answer of [`PATH`]: the snapshot, streamed.
pub fn response(store: &Store) -> axum::response::Response {
    let (rv, lines) = Lines::of(store);
    tracing::info!(resource_version = rv, "serving a snapshot");
    let stream = futures::stream::iter(lines.map(Ok::<Bytes, std::convert::Infallible>));
    let mut r = axum::response::Response::new(axum::body::Body::from_stream(stream));
    r.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/x-ndjson"),
    );
    if let Ok(v) = axum::http::HeaderValue::from_str(&rv.to_string()) {
        r.headers_mut().insert("x-coxswain-resource-version", v);
    }
    r
}

/// What a snapshot file holds, once verified.
#[derive(Debug)]
pub struct Verified {
    /// Its resourceVersion.
    pub rv: u64,
    /// Its objects: (resource storage key, object key, JSON).
    pub objects: Vec<(String, String, Vec<u8>)>,
}

#[derive(serde::Deserialize)]
struct Header {
    kind: String,
    #[serde(rename = "formatVersion")]
    format_version: u64,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(default)]
    end: bool,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    key: String,
    #[serde(borrow, default)]
    object: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    objects: u64,
    #[serde(default)]
    sha256: String,
}

/// Read and verify a snapshot: header, every line, count and checksum.
pub fn read(file: &Path) -> Result<Verified, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut reader = std::io::BufReader::new(f);
    let bad = |what: String| {
        format!(
            "{} is not a complete coxswain snapshot: {what}",
            file.display()
        )
    };
    let mut hash = Sha256::new();
    let mut line = Vec::new();
    let mut next = |line: &mut Vec<u8>| -> Result<bool, String> {
        line.clear();
        let n = reader
            .read_until(b'\n', line)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(n > 0)
    };
    if !next(&mut line)? {
        return Err(bad("the file is empty".into()));
    }
    let header: Header = serde_json::from_slice(&line)
        .map_err(|e| bad(format!("the first line is no snapshot header ({e})")))?;
    if header.kind != KIND {
        return Err(bad(format!("the header's kind is {:?}", header.kind)));
    }
    if header.format_version > FORMAT_VERSION {
        return Err(format!(
            "{} has snapshot format version {}, newer than version {FORMAT_VERSION} that this coxswain reads: use a newer coxswain",
            file.display(),
            header.format_version
        ));
    }
    let rv: u64 = header
        .resource_version
        .parse()
        .map_err(|_| bad(format!("resourceVersion {:?}", header.resource_version)))?;
    hash.update(&line);
    let mut objects = Vec::new();
    loop {
        if !next(&mut line)? {
            return Err(bad(format!(
                "it ends after {} objects without its trailer (truncated)",
                objects.len()
            )));
        }
        let parsed: Line<'_> = serde_json::from_slice(&line)
            .map_err(|e| bad(format!("line {}: {e}", objects.len() + 2)))?;
        if parsed.end {
            let digest = hex(&std::mem::take(&mut hash).finalize());
            if parsed.objects != objects.len() as u64 {
                return Err(bad(format!(
                    "the trailer counts {} objects, the file holds {}",
                    parsed.objects,
                    objects.len()
                )));
            }
            if parsed.sha256 != digest {
                return Err(bad("its checksum does not match its contents".into()));
            }
            break;
        }
        let Some(object) = parsed.object else {
            return Err(bad(format!("line {}: no object", objects.len() + 2)));
        };
        let json = object.get().as_bytes().to_vec();
        if let Some(problem) = persist::check_object(&parsed.resource, &parsed.key, &json, rv) {
            return Err(bad(problem));
        }
        objects.push((parsed.resource, parsed.key, json));
        hash.update(&line);
    }
    Ok(Verified { rv, objects })
}

/// Write the snapshot `file` as a new database in `data_dir` (created if missing);
/// refuses a directory that already holds a database. Returns the resourceVersion and
/// the number of objects restored.
pub fn restore(file: &Path, data_dir: &Path) -> Result<(u64, usize), String> {
    let db = data_dir.join(persist::DB_FILE);
    if db.exists() {
        return Err(format!(
            "{} already holds a database ({}): restore into a new directory, or move that file away first",
            data_dir.display(),
            db.display()
        ));
    }
    let snapshot = read(file)?;
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let count = snapshot.objects.len();
    // written under a temporary name and renamed, so that a failed restore leaves no
    // half-written database behind
    let tmp = data_dir.join(format!("{}.restoring", persist::DB_FILE));
    let _ = std::fs::remove_file(&tmp);
    persist::create(&tmp, snapshot.rv, snapshot.objects).map_err(|e: PersistError| {
        let _ = std::fs::remove_file(&tmp);
        e.to_string()
    })?;
    std::fs::rename(&tmp, &db).map_err(|e| format!("{}: {e}", db.display()))?;
    Ok((snapshot.rv, count))
}
