//! Test support shared by the crates' tests and the end-to-end suite.
