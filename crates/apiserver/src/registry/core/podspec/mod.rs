//! Pod specs and pod templates: what every kind holding one (Pod, PodTemplate,
//! ReplicationController, the apps workloads, Job, CronJob) validates and defaults
//! the same way.

pub mod defaults;
pub mod validation;
