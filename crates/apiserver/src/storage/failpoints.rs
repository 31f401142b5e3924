//! Fault injection for the storage layer's tests: a redb [`StorageBackend`] wrapping the
//! database file that fails on command.
//!
//! Built only with the `failpoints` feature (the API server's own tests turn it on; the
//! product never does). A test creates one [`Failpoints`], hands it to the server
//! through `Config::failpoints`, and arms faults while the server runs:
//!
//! - [`Failpoints::fail_commit`]: every write to the file during the N-th commit from now
//!   fails with an I/O error (`EIO`), as a disk that drops a write would;
//! - [`Failpoints::fail_sync`]: the N-th `fsync` (`sync_data`) from now fails with `EIO`;
//! - [`Failpoints::set_no_space`]: every write (and every growth of the file) fails with
//!   `ENOSPC` until cleared, as a full file system would;
//! - [`Failpoints::crash_after_commit`]: the process aborts right after the N-th commit
//!   from now is durable and before any of its writes is acknowledged (only for a test's
//!   child process: it ends the whole process).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use redb::backends::FileBackend;
use redb::StorageBackend;

/// `ENOSPC` on Linux and macOS.
const ENOSPC: i32 = 28;
/// `EIO` on Linux and macOS.
const EIO: i32 = 5;

/// Faults to inject, shared by a test and the server's storage (counters count down:
/// 0 is disarmed, 1 fires on the next event).
#[derive(Debug, Default)]
pub struct Failpoints {
    fail_commit: AtomicU64,
    fail_sync: AtomicU64,
    crash_after_commit: AtomicU64,
    no_space: AtomicBool,
    /// Set while the armed commit runs: its writes fail.
    failing_commit: AtomicBool,
    commits: AtomicU64,
    injected: AtomicU64,
}

impl Failpoints {
    /// No fault armed.
    pub fn new() -> Arc<Failpoints> {
        Arc::new(Failpoints::default())
    }

    /// The `n`-th commit from now (1: the next) fails: its writes to the file return `EIO`.
    pub fn fail_commit(&self, n: u64) {
        self.fail_commit.store(n, Ordering::SeqCst);
    }

    /// The `n`-th `fsync` from now (1: the next) returns `EIO`.
    pub fn fail_sync(&self, n: u64) {
        self.fail_sync.store(n, Ordering::SeqCst);
    }

    /// While `on`, every write and every growth of the file returns `ENOSPC`.
    pub fn set_no_space(&self, on: bool) {
        self.no_space.store(on, Ordering::SeqCst);
    }

    /// Abort the process once the `n`-th commit from now (1: the next) is durable,
    /// before its writes are acknowledged.
    pub fn crash_after_commit(&self, n: u64) {
        self.crash_after_commit.store(n, Ordering::SeqCst);
    }

    /// Commits that succeeded so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Faults injected so far (failed writes and fsyncs).
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Count down an armed counter: true when it fires now.
    fn fires(counter: &AtomicU64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok_and(|before| before == 1)
    }

    /// Called by the committer before it starts a commit.
    pub(crate) fn begin_commit(&self) {
        let fail = Self::fires(&self.fail_commit);
        self.failing_commit.store(fail, Ordering::SeqCst);
    }

    /// Called by the committer once a commit is durable, before the acknowledgements.
    pub(crate) fn end_commit(&self, ok: bool) {
        self.failing_commit.store(false, Ordering::SeqCst);
        if ok {
            self.commits.fetch_add(1, Ordering::SeqCst);
            if Self::fires(&self.crash_after_commit) {
                eprintln!("failpoint: aborting after a durable commit, before acknowledging it");
                std::process::abort();
            }
        }
    }

    fn injected_error(&self, code: i32) -> io::Error {
        self.injected.fetch_add(1, Ordering::SeqCst);
        io::Error::from_raw_os_error(code)
    }

    fn check_write(&self) -> io::Result<()> {
        if self.no_space.load(Ordering::SeqCst) {
            return Err(self.injected_error(ENOSPC));
        }
        if self.failing_commit.load(Ordering::SeqCst) {
            return Err(self.injected_error(EIO));
        }
        Ok(())
    }
}

/// The database file, failing as its [`Failpoints`] say.
#[derive(Debug)]
pub struct FaultyBackend {
    inner: FileBackend,
    faults: Arc<Failpoints>,
}

impl FaultyBackend {
    /// Wrap the file backend `inner`.
    pub fn new(inner: FileBackend, faults: Arc<Failpoints>) -> FaultyBackend {
        FaultyBackend { inner, faults }
    }
}

impl StorageBackend for FaultyBackend {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        if len > self.inner.len()? {
            self.faults.check_write()?;
        }
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        if Failpoints::fires(&self.faults.fail_sync) {
            return Err(self.faults.injected_error(EIO));
        }
        self.faults.check_write()?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.faults.check_write()?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_fire_once_on_the_nth_event() {
        let c = AtomicU64::new(3);
        assert!(!Failpoints::fires(&c));
        assert!(!Failpoints::fires(&c));
        assert!(Failpoints::fires(&c));
        assert!(!Failpoints::fires(&c), "disarmed after firing");
        assert_eq!(c.load(Ordering::SeqCst), 0);
    }
}
