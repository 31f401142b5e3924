//! Simulated nodes and kubelet behaviour (pod lifecycle, node heartbeats) and a small
//! scheduler, so that workloads progress with no real nodes. Empty until the simulator
//! issue lands.
