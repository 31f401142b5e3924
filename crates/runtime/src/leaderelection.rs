//! Leader election on a `coordination.k8s.io/v1` Lease, with the semantics of
//! client-go's `tools/leaderelection`.
//!
//! Several replicas of a controller manager run at once, but only one of them, the
//! *leader*, may run the controllers. They agree on who leads through one shared
//! Lease object: its `spec.holderIdentity` names the leader, who keeps proving it is
//! alive by updating `spec.renewTime` every [`retry_period`](LeaderElectionConfig::retry_period).
//!
//! * **Campaign.** A candidate reads the Lease every `retry_period` (with jitter). It
//!   takes the Lease when it does not exist (create), when nobody holds it (empty
//!   holder, e.g. after a release), when it already holds it, or when the record has
//!   not changed for the lease's duration **measured on the candidate's own clock**
//!   since it last saw a change. Timestamps written by other processes are never
//!   compared with the local clock, so clock skew between machines does not matter.
//! * **Optimistic concurrency.** Every write is an update with the `resourceVersion`
//!   that was read (or a create), so when two candidates race only one write succeeds;
//!   the other gets `409 Conflict` and keeps campaigning.
//! * **Renewal.** The leader renews every `retry_period`. If it has not renewed
//!   successfully within [`renew_deadline`](LeaderElectionConfig::renew_deadline) of
//!   sending its last successful renewal, it considers leadership lost *at once*, even
//!   while a request is still in flight. Since `renew_deadline < lease_duration` and a
//!   candidate can take over only `lease_duration` after it observed that renewal,
//!   the old leader always stops before a new one can start. Observing another holder
//!   in the Lease also ends leadership immediately. API errors while leading only count
//!   against the deadline; while campaigning they are retried.
//! * **Release.** With [`release_on_cancel`](LeaderElectionConfig::release_on_cancel),
//!   a leader that stops gracefully writes an empty holder (and `leaseDurationSeconds:
//!   1`, keeping `leaseTransitions`), so a successor takes over on its next attempt
//!   instead of waiting out the lease.
//!
//! `leaseTransitions` counts changes of holder; `acquireTime` is when the current
//! holder acquired the Lease.
//!
//! As in client-go, this is not fencing: the guarantee relies on the processes'
//! clocks advancing at similar rates (`lease_duration / renew_deadline` is the
//! tolerated ratio), and code guarded by leadership must stop when
//! [`Leadership::lost`] fires.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use coxswain_runtime::leaderelection::{LeaderElectionConfig, LeaderElector};
//! use tokio_util::sync::CancellationToken;
//!
//! let mut config = LeaderElectionConfig::new("kube-system", "my-controller");
//! config.release_on_cancel = true;
//! let elector = LeaderElector::new(client, config)?;
//! let shutdown = CancellationToken::new();
//! if let Some(leadership) = elector.acquire(&shutdown).await {
//!     let lost = leadership.lost();
//!     tokio::select! {
//!         _ = lost.cancelled() => { /* stop at once: another replica may lead soon */ }
//!         _ = shutdown.cancelled() => { /* stop the controllers first, then: */ }
//!     }
//!     leadership.release().await;
//! }
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::sync::{watch, Mutex, OwnedMutexGuard};
use tokio::task::JoinHandle;
use tokio::time::{sleep, sleep_until, timeout, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, trace, warn};

/// Candidates wait between `retry_period` and `retry_period × (1 + JITTER_FACTOR)`
/// between attempts, and `renew_deadline` must exceed `retry_period × JITTER_FACTOR`
/// (client-go's `JitterFactor`).
pub const JITTER_FACTOR: f64 = 1.2;

/// How to take part in a leader election.
///
/// Build it with [`LeaderElectionConfig::new`] and adjust the public fields; the
/// durations are checked by [`LeaderElectionConfig::validate`] (also called by
/// [`LeaderElector::new`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease object.
    pub lease_namespace: String,
    /// Name of the Lease object.
    pub lease_name: String,
    /// This candidate's identity, written to `spec.holderIdentity`; must be unique
    /// among the candidates. Default: `<hostname>_<uuid v4>` (see [`default_identity`]).
    pub identity: String,
    /// How long candidates wait without seeing the record change before they may take
    /// over (written to `leaseDurationSeconds`, rounded up to whole seconds). Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership,
    /// counted from when its last successful renewal was sent. Default 10 s.
    pub renew_deadline: Duration,
    /// Interval between attempts to acquire or renew. Default 2 s.
    pub retry_period: Duration,
    /// Whether a leader that stops through [`Leadership::release`] empties the Lease
    /// so that a successor takes over at once. Only set this if everything guarded by
    /// leadership has stopped before `release` is called. Default `false`.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// A configuration for the Lease `namespace/name` with the defaults of
    /// controller-runtime and kube-controller-manager: a fresh [`default_identity`],
    /// lease 15 s, renew deadline 10 s, retry period 2 s, no release on cancel.
    pub fn new(lease_namespace: impl Into<String>, lease_name: impl Into<String>) -> Self {
        Self {
            lease_namespace: lease_namespace.into(),
            lease_name: lease_name.into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
        }
    }

    /// Check the configuration like client-go: `lease_duration > renew_deadline >
    /// retry_period × JITTER_FACTOR`, all durations positive, and names and identity
    /// not empty.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |m: &str| Err(Error::InvalidConfig(m.to_string()));
        if self.lease_duration <= self.renew_deadline {
            return invalid("lease_duration must be greater than renew_deadline");
        }
        if self.renew_deadline.as_secs_f64() <= self.retry_period.as_secs_f64() * JITTER_FACTOR {
            return invalid("renew_deadline must be greater than retry_period * JITTER_FACTOR");
        }
        if self.lease_duration.is_zero() {
            return invalid("lease_duration must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return invalid("renew_deadline must be greater than zero");
        }
        if self.retry_period.is_zero() {
            return invalid("retry_period must be greater than zero");
        }
        if self.lease_duration > Duration::from_secs(i32::MAX as u64) {
            return invalid("lease_duration is too long");
        }
        if self.lease_name.is_empty() {
            return invalid("lease_name must not be empty");
        }
        if self.lease_namespace.is_empty() {
            return invalid("lease_namespace must not be empty");
        }
        if self.identity.is_empty() {
            return invalid("identity must not be empty");
        }
        Ok(())
    }

    /// `leaseDurationSeconds` to write: the lease duration rounded up, so that the
    /// written promise is never shorter than the one the leader keeps.
    fn lease_seconds(&self) -> i32 {
        let secs =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX).max(1)
    }
}

/// A unique identity like controller-runtime's: `<hostname>_<uuid v4>` (the hostname
/// is `unknown` if it cannot be read).
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Errors of the leader election API. Errors talking to the API server are not
/// returned: they are retried (campaign) or count against the renew deadline.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The configuration is not valid; the message says why.
    #[error("invalid leader election configuration: {0}")]
    InvalidConfig(String),
}

/// Why a [`Leadership`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// No renewal succeeded within the renew deadline (API server unreachable, slow or
    /// failing).
    RenewDeadlineExceeded,
    /// The Lease names another holder (empty if it was emptied or re-created by
    /// someone else).
    Taken {
        /// The holder found in the Lease.
        holder: String,
    },
    /// The handle was released or dropped: leadership ended on purpose.
    Stopped,
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostReason::RenewDeadlineExceeded => f.write_str("renew deadline exceeded"),
            LostReason::Taken { holder } if holder.is_empty() => {
                f.write_str("the lease was emptied by someone else")
            }
            LostReason::Taken { holder } => write!(f, "the lease is held by {holder}"),
            LostReason::Stopped => f.write_str("stopped"),
        }
    }
}

/// A candidate in the election for one Lease. Cheap to clone (clones share state).
///
/// One campaign or leadership runs at a time per elector: a second
/// [`acquire`](Self::acquire) waits until the first one has ended.
#[derive(Clone)]
pub struct LeaderElector {
    shared: Arc<Shared>,
}

struct Shared {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    /// Held by the campaign and then by the renew task.
    lock: Arc<Mutex<LockState>>,
    leader: watch::Sender<bool>,
    holder: StdMutex<Option<String>>,
}

/// What this candidate knows about the Lease.
struct LockState {
    /// The spec last seen, and when (on our clock) it was first seen like this.
    observed: Option<(LeaseSpec, Instant)>,
    /// The Lease last read or written (its resourceVersion guards the next update).
    lease: Option<Lease>,
}

/// Result of one attempt to acquire or renew.
enum Attempt {
    /// Written; the instant is when the successful write was sent.
    Success(Instant),
    /// Another holder's lease is still valid (campaign).
    Held(String),
    /// The Lease names someone else (while leading).
    Taken(String),
    Failed(String),
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lease", &self.shared.describe())
            .field("identity", &self.shared.config.identity)
            .field("leader", &self.is_leader())
            .finish()
    }
}

impl LeaderElector {
    /// A candidate for the Lease in `config`, talking to the API server through
    /// `client`. Fails if the configuration is not valid. Nothing is sent until
    /// [`acquire`](Self::acquire).
    pub fn new(client: kube::Client, config: LeaderElectionConfig) -> Result<Self, Error> {
        config.validate()?;
        let api = Api::namespaced(client, &config.lease_namespace);
        let (leader, _) = watch::channel(false);
        Ok(Self {
            shared: Arc::new(Shared {
                api,
                config,
                lock: Arc::new(Mutex::new(LockState {
                    observed: None,
                    lease: None,
                })),
                leader,
                holder: StdMutex::new(None),
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.shared.config
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.shared.config.identity
    }

    /// Whether this candidate currently leads.
    pub fn is_leader(&self) -> bool {
        *self.shared.leader.borrow()
    }

    /// Follow [`is_leader`](Self::is_leader), e.g. for the
    /// `leader_election_master_status{name}` gauge. It turns `false` at the moment
    /// leadership is lost, before [`Leadership::lost`] fires.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.shared.leader.subscribe()
    }

    /// The holder identity last observed in the Lease (`None` before the first read
    /// or when nobody holds it). Informational: for logs and status only.
    pub fn current_leader(&self) -> Option<String> {
        self.shared.holder.lock().ok().and_then(|h| h.clone())
    }

    /// Campaign until this candidate leads, then return the handle that keeps
    /// renewing the Lease in the background. Returns `None` if `cancel` fires first.
    ///
    /// If `cancel` interrupts a write in flight and `release_on_cancel` is set, a
    /// Lease that this write may have taken is released before returning.
    pub async fn acquire(&self, cancel: &CancellationToken) -> Option<Leadership> {
        let shared = &self.shared;
        let mut state = tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            guard = shared.lock.clone().lock_owned() => guard,
        };
        info!(lease = %shared.describe(), identity = %shared.config.identity, "attempting to acquire leader lease");
        loop {
            let attempt = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    if shared.config.release_on_cancel {
                        let _ = timeout(shared.config.renew_deadline, shared.release(&mut state)).await;
                    }
                    return None;
                }
                attempt = shared.attempt(&mut state, false) => attempt,
            };
            match attempt {
                Attempt::Success(sent) => {
                    info!(lease = %shared.describe(), identity = %shared.config.identity, "successfully acquired lease");
                    return Some(Leadership::start(shared.clone(), state, sent));
                }
                Attempt::Held(holder) | Attempt::Taken(holder) => {
                    debug!(lease = %shared.describe(), %holder, "lease is held and has not yet expired")
                }
                Attempt::Failed(err) => {
                    debug!(lease = %shared.describe(), %err, "failed to acquire lease")
                }
            }
            let jitter = rand::random::<f64>() * JITTER_FACTOR;
            let wait = shared.config.retry_period.mul_f64(1.0 + jitter);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = sleep(wait) => {}
            }
        }
    }
}

impl Shared {
    fn describe(&self) -> String {
        format!("{}/{}", self.config.lease_namespace, self.config.lease_name)
    }

    /// Remember `spec` as observed; the observation time moves only when it changed.
    fn observe(&self, state: &mut LockState, spec: &LeaseSpec) {
        if state
            .observed
            .as_ref()
            .is_some_and(|(seen, _)| seen == spec)
        {
            return;
        }
        state.observed = Some((spec.clone(), Instant::now()));
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        if let Ok(mut current) = self.holder.lock() {
            if *current != holder {
                if let Some(h) = &holder {
                    info!(lease = %self.describe(), holder = %h, "new leader observed");
                }
                *current = holder;
            }
        }
    }

    /// Whether the observed record is still within its lease duration on our clock.
    fn observed_valid(&self, state: &LockState) -> bool {
        let Some((spec, at)) = &state.observed else {
            return false;
        };
        let secs = spec.lease_duration_seconds.filter(|s| *s > 0);
        let duration = secs.map_or(self.config.lease_duration, |s| {
            Duration::from_secs(u64::from(s.unsigned_abs()))
        });
        // a duration too long to represent never expires
        at.checked_add(duration)
            .is_none_or(|end| end > Instant::now())
    }

    /// Our record on top of `base` (other spec fields are kept).
    fn our_spec(&self, base: LeaseSpec, acquire: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: Some(acquire.unwrap_or_else(|| now.clone())),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..base
        }
    }

    /// Write `lease` (create if `create`, else update with its resourceVersion) and
    /// remember the result. Returns when the request was sent: the server cannot have
    /// recorded the write earlier, so nobody can observe it earlier either.
    async fn write(
        &self,
        state: &mut LockState,
        lease: Lease,
        create: bool,
    ) -> Result<Instant, kube::Error> {
        let pp = PostParams::default();
        let sent = Instant::now();
        let written = if create {
            self.api.create(&pp, &lease).await?
        } else {
            self.api
                .replace(&self.config.lease_name, &pp, &lease)
                .await?
        };
        self.observe(state, &written.spec.clone().unwrap_or_default());
        state.lease = Some(written);
        Ok(sent)
    }

    /// One try to acquire (`leading == false`) or renew (`leading == true`).
    async fn attempt(&self, state: &mut LockState, leading: bool) -> Attempt {
        let me = self.config.identity.as_str();
        // Fast path for the leader: update the Lease it wrote last, assuming nobody
        // else changed it; a conflict falls back to reading it.
        if leading {
            if let Some(mut lease) = state.lease.clone() {
                let old = lease.spec.take().unwrap_or_default();
                if old.holder_identity.as_deref() == Some(me) {
                    let (acquire, transitions) =
                        (old.acquire_time.clone(), old.lease_transitions.unwrap_or(0));
                    lease.spec = Some(self.our_spec(old, acquire, transitions));
                    match self.write(state, lease, false).await {
                        Ok(sent) => return Attempt::Success(sent),
                        Err(e) if is_conflict(&e) => {
                            debug!(lease = %self.describe(), "conflict renewing lease, reading it again")
                        }
                        Err(e) => return Attempt::Failed(format!("updating lease: {e}")),
                    }
                }
            }
        }

        let current = match self.api.get_opt(&self.config.lease_name).await {
            Ok(current) => current,
            Err(e) => return Attempt::Failed(format!("reading lease: {e}")),
        };
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.lease_name.clone()),
                    namespace: Some(self.config.lease_namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.our_spec(LeaseSpec::default(), None, 0)),
            };
            return match self.write(state, lease, true).await {
                Ok(sent) => Attempt::Success(sent),
                Err(e) => Attempt::Failed(format!("creating lease: {e}")),
            };
        };
        let old = lease.spec.take().unwrap_or_default();
        self.observe(state, &old);
        state.lease = Some(Lease {
            spec: Some(old.clone()),
            ..lease.clone()
        });
        let holder = old.holder_identity.clone().unwrap_or_default();
        if leading && holder != me {
            return Attempt::Taken(holder);
        }
        if !holder.is_empty() && holder != me && self.observed_valid(state) {
            return Attempt::Held(holder);
        }
        let transitions = old.lease_transitions.unwrap_or(0);
        lease.spec = Some(if holder == me {
            let acquire = old.acquire_time.clone();
            self.our_spec(old, acquire, transitions)
        } else {
            self.our_spec(old, None, transitions.saturating_add(1))
        });
        match self.write(state, lease, false).await {
            Ok(sent) => Attempt::Success(sent),
            Err(e) => Attempt::Failed(format!("updating lease: {e}")),
        }
    }

    /// Empty the Lease if it still names us; retries on conflict. Returns whether it
    /// was released.
    async fn release(&self, state: &mut LockState) -> bool {
        loop {
            let mut lease = match self.api.get_opt(&self.config.lease_name).await {
                Ok(Some(lease)) => lease,
                Ok(None) => {
                    info!(lease = %self.describe(), "lease not found, nothing to release");
                    return false;
                }
                Err(e) => {
                    warn!(lease = %self.describe(), err = %e, "failed to read lease to release it");
                    return false;
                }
            };
            let old = lease.spec.take().unwrap_or_default();
            if old.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                debug!(lease = %self.describe(), "lease is not ours, nothing to release");
                self.observe(state, &old);
                return false;
            }
            let now = MicroTime(Timestamp::now());
            lease.spec = Some(LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..old
            });
            match self.write(state, lease, false).await {
                Ok(_) => return true,
                Err(e) if is_conflict(&e) => {
                    debug!(lease = %self.describe(), "conflict releasing lease, retrying")
                }
                Err(e) => {
                    warn!(lease = %self.describe(), err = %e, "failed to release lease");
                    return false;
                }
            }
        }
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.is_conflict())
}

/// Proof of leadership, returned by [`LeaderElector::acquire`]. A background task
/// renews the Lease while this handle lives.
///
/// Dropping the handle stops renewing without releasing the Lease (candidates take
/// over after the lease duration); [`release`](Self::release) stops renewing and, with
/// `release_on_cancel`, empties the Lease for a quick hand-over.
pub struct Leadership {
    lost: CancellationToken,
    stop: CancellationToken,
    release: Arc<AtomicBool>,
    reason: Arc<StdMutex<Option<LostReason>>>,
    task: Option<JoinHandle<()>>,
    lease: String,
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("lease", &self.lease)
            .field("lost", &self.lost_reason())
            .finish()
    }
}

impl Leadership {
    fn start(shared: Arc<Shared>, state: OwnedMutexGuard<LockState>, renewed: Instant) -> Self {
        let lost = CancellationToken::new();
        let stop = CancellationToken::new();
        let release = Arc::new(AtomicBool::new(false));
        let reason = Arc::new(StdMutex::new(None));
        let lease = shared.describe();
        shared.leader.send_replace(true);
        let task = RenewTask {
            shared,
            state,
            last_renewed: renewed,
            lost: lost.clone(),
            stop: stop.clone(),
            release: release.clone(),
            reason: reason.clone(),
        };
        Self {
            lost,
            stop,
            release,
            reason,
            task: Some(tokio::spawn(task.run())),
            lease,
        }
    }

    /// A token cancelled when leadership ends: at once when the renew deadline passes
    /// or another holder is seen in the Lease, and also when this handle is released
    /// or dropped. Everything guarded by leadership must stop when it fires.
    pub fn lost(&self) -> CancellationToken {
        self.lost.child_token()
    }

    /// Whether leadership has ended.
    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    /// Why leadership ended, once it has.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    /// Stop renewing and, if `release_on_cancel` is configured and the Lease still
    /// names this candidate, empty it so that a successor takes over at once. Waits
    /// for the release to finish (bounded by the renew deadline). Stop the work
    /// guarded by leadership before calling this.
    pub async fn release(mut self) {
        self.release.store(true, Ordering::SeqCst);
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The background task that renews the Lease.
struct RenewTask {
    shared: Arc<Shared>,
    state: OwnedMutexGuard<LockState>,
    /// When the last successful acquire or renew was sent.
    last_renewed: Instant,
    lost: CancellationToken,
    stop: CancellationToken,
    release: Arc<AtomicBool>,
    reason: Arc<StdMutex<Option<LostReason>>>,
}

impl RenewTask {
    async fn run(mut self) {
        let shared = self.shared.clone();
        let config = &shared.config;
        let mut next = self.last_renewed + config.retry_period;
        let reason = loop {
            let deadline = self.last_renewed + config.renew_deadline;
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => break LostReason::Stopped,
                _ = sleep_until(deadline) => break LostReason::RenewDeadlineExceeded,
                _ = sleep_until(next) => {}
            }
            let attempt = tokio::select! {
                biased;
                _ = self.stop.cancelled() => break LostReason::Stopped,
                _ = sleep_until(deadline) => break LostReason::RenewDeadlineExceeded,
                attempt = shared.attempt(&mut self.state, true) => attempt,
            };
            match attempt {
                Attempt::Success(sent) => {
                    self.last_renewed = sent;
                    trace!(lease = %shared.describe(), "successfully renewed lease");
                }
                Attempt::Taken(holder) | Attempt::Held(holder) => {
                    break LostReason::Taken { holder }
                }
                Attempt::Failed(err) => {
                    warn!(lease = %shared.describe(), %err, "failed to renew lease, retrying")
                }
            }
            next = Instant::now() + config.retry_period;
        };
        // Stop being leader before anything else can happen.
        shared.leader.send_replace(false);
        if let Ok(mut r) = self.reason.lock() {
            *r = Some(reason.clone());
        }
        self.lost.cancel();
        if reason != LostReason::Stopped {
            warn!(lease = %shared.describe(), identity = %config.identity, %reason, "leader election lost");
            return;
        }
        info!(lease = %shared.describe(), identity = %config.identity, "stopped leading");
        if config.release_on_cancel && self.release.load(Ordering::SeqCst) {
            match timeout(config.renew_deadline, shared.release(&mut self.state)).await {
                Ok(true) => info!(lease = %shared.describe(), "released lease"),
                Ok(false) => {}
                Err(_) => warn!(lease = %shared.describe(), "timed out releasing lease"),
            }
        }
    }
}
