//! End-to-end tests: the built `listwatch` binary, real etcd, real kubectl and raw HTTP.

mod support;

mod api_errors;
mod bad_input;
mod gates;
mod gc;
mod informer_cli;
mod kubectl;
mod listing;
mod semantics;
mod transports;
mod watching;
