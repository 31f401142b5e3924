//! Tests: ports of upstream structured-merge-diff and kube-apiserver
//! field manager test tables.

mod fieldmanager_tests;
mod fieldpath_tests;
mod harness;
mod smd_tests;
mod smd_tests2;
