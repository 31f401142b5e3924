//! Integration tests of the `coxswain` binary, one test binary for the crate.

mod damaged_data;
mod snapshot;
