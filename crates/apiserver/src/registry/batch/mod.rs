//! `batch`: Jobs and CronJobs.

pub mod cronjob;
pub mod job;
