//! Test support shared by the crates' tests and the end-to-end suite.
//!
//! * [`etcd`]: real etcd servers for tests: one shared per test process, or private ones that a
//!   test can kill and restart.

pub mod etcd;
