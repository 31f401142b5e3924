//! The integration tests of `coxswain-runtime`, linked into one binary: each test
//! binary links the whole dependency tree, so one binary instead of several keeps
//! the build small and fast.

mod client;
mod controller;
mod custom_resource;
mod envtest;
mod events;
mod faults;
mod helpers;
mod informer;
mod leaderelection;
mod manager;
mod webhook;
