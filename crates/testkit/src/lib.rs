//! Test support shared by the crates' tests, the end-to-end suite and `listwatch bench`.
//!
//! * [`etcd`]: real etcd servers for tests: one shared per test process, or private ones that a
//!   test can kill and restart.
//! * [`server`]: the built `listwatch` binary as a server, on any [`server::Backend`].
//! * [`plot`]: what every picture the tools draw shares (the simulator's timelines, the
//!   benches' sweep plots).

pub mod etcd;
pub mod plot;
mod process;
pub mod server;
