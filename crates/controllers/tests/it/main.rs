//! The integration tests of `coxswain-controllers`, linked into one binary: each test
//! binary links the whole dependency tree, so one binary instead of several keeps
//! the build small and fast.

mod common;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
mod endpoint;
mod endpointslice;
mod faults;
mod gc;
mod job;
mod namespace;
mod nodeipam;
mod nodelifecycle;
mod podautoscaler;
mod podgc;
mod replicaset;
mod resourcequota;
mod sa_credentials;
mod sa_tokens;
mod small;
mod statefulset;
mod tainteviction;
mod ttl;
mod ttl_controller;
mod volume_binder;
mod volume_controllers;
