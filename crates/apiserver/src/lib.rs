//! The Kubernetes REST API over the storage layer.
//!
//! * `request.rs` / `options.rs`: what a request addresses and its validated options;
//! * `server.rs`: state and routing; `discovery.rs`, `openapi.rs`, `metrics.rs`, `debug.rs`;
//! * `list.rs`, `watch.rs`: the read verbs with kube-apiserver's resourceVersion semantics;
//! * `write.rs`, `strategy.rs`, `scale.rs`, `delete_options.rs`: the write verbs and what the
//!   server owns;
//! * `controllers.rs`: finalizers, graceful deletion, namespace cleanup, the compactor;
//! * `listener.rs`, `conn.rs`, `limits.rs`: the listening socket, connection limits (header
//!   size and timeout) and the max-in-flight filter;
//! * `authn/`: who is asking (token file, client certificates, anonymous);
//! * `body.rs` / `body_in.rs` / `response.rs`: HTTP plumbing.

pub mod authn;
pub mod body;
mod body_in;
mod conn;
mod controllers;
mod debug;
mod delete_options;
pub mod discovery;
mod gc;
mod kinds;
pub mod limits;
mod list;
pub mod listener;
mod metrics;
mod openapi;
pub mod options;
mod panics;
pub mod request;
mod resource;
mod response;
mod scale;
mod schema;
pub mod server;
mod strategy;
pub mod tls;
mod watch;
mod websocket;
mod write;

pub use server::{ApiState, ServerConfig, serve};
