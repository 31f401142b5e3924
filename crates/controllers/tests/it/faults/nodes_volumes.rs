//! Fault-injection scenarios (issue 21): see `mod.rs`.
