//! Tests of the built-in kinds through the catalogue: each kind's behaviour as clients
//! see it, compared with a real kube-apiserver's answers.

mod defaults;
mod generation;
mod new_kinds;
mod printers_cluster;
mod printers_core;
mod printers_pod;
mod printers_storage;
mod printers_workloads;
mod roundtrip;
mod storage_admission;
mod validation;

use crate::registry::catalog::Catalog;
use crate::registry::table::Printer;

/// The printer of a built-in kind, through its strategy.
fn printer(group: &str, kind: &str) -> &'static Printer {
    let version = if group == "autoscaling" { "v2" } else { "v1" };
    Catalog::builtin()
        .by_kind(group, version, kind)
        .and_then(|d| d.strategy.printer())
        .unwrap_or_else(|| panic!("no printer for {group} {kind}"))
}
