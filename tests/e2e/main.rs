//! End-to-end tests: the built `listwatch` binary, real etcd, real kubectl and raw HTTP.

mod support;

mod admission;
mod api_errors;
mod auth;
mod bad_input;
mod client_audit;
mod controllers;
mod crds;
mod fixtures;
mod gates;
mod gc;
mod http_edges;
mod informer_cli;
mod kube_rs;
mod kubectl;
mod limits;
mod listing;
mod nodes;
mod python_client;
mod rbac;
mod semantics;
mod server_side_apply;
mod sim_server;
mod simulate;
mod stages;
mod transports;
mod validation;
mod watching;
mod workloads;
mod zoo;
