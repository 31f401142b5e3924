//! `apiregistration.k8s.io`: APIServices, the aggregator's registrations of the group
//! versions the server serves itself (`spec.service` unset: local) and of those served
//! by other API servers behind a Service (proxied by `crate::server::aggregator`).

pub mod apiservice;
