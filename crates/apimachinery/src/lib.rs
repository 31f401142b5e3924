//! What every coxswain component shares of Kubernetes' apimachinery.
//!
//! Upstream keeps these in `k8s.io/apimachinery`, used by the API server, client-go, the
//! controllers and kubectl alike; coxswain does the same, so each rule exists once:
//!
//! - [`status`]: `Status` errors ([`status::ApiError`]) with upstream's codes, reasons
//!   and messages;
//! - [`field`]: field errors (`field.Invalid`, `field.Required`, ...) and the lists
//!   that become `Invalid` Status errors;
//! - [`names`]: DNS-1123/1035 names, qualified names, label values and the other
//!   `util/validation` rules;
//! - [`selector`]: label and field selectors, parsed and matched;
//! - [`quantity`]: resource quantities;
//! - [`quota`]: resource quota evaluators (what objects use, which quotas match);
//! - [`cron`]: cron schedules as robfig/cron v3 parses and runs them (CronJobs);
//! - [`tz`]: Go's time zones (`time.LoadLocation`, `time.Date`);
//! - [`duration`]: Go durations and `kubectl`'s human durations;
//! - [`time`]: `metav1.Time` and `MicroTime` formats, civil dates, ages;
//! - [`serviceaccount`]: service account tokens (JWTs): keys, claims, signing and
//!   verification;
//! - [`pem`] and [`x509`]: Go's `encoding/pem` decoding and the parts of
//!   `crypto/x509` certificate requests and certificates are checked with (the API
//!   server's CSR validation, the CSR signing controller);
//! - [`gofmt`]: Go's `%q`, `%v` and `encoding/json` renderings, which upstream's
//!   messages are made of.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cron;
pub mod duration;
pub mod field;
pub mod gofmt;
pub mod mergepatch;
pub mod names;
pub mod pem;
pub mod quantity;
pub mod quota;
pub mod selector;
pub mod serviceaccount;
pub mod status;
pub mod taints;
pub mod time;
pub mod tls;
pub mod tz;
pub mod x509;
