//! Test support shared by the crates' tests, the end-to-end suite and `listwatch bench`.
//!
//! * [`etcd`]: real etcd servers for tests: one shared per test process, or private ones that a
//!   test can kill and restart.
//! * [`server`]: the built `listwatch` binary as a server, on any [`server::Backend`].

pub mod etcd;
mod process;
pub mod server;
