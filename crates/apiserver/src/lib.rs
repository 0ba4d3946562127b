//! The Kubernetes REST API over the storage layer. The folders are its wings, each depending
//! only on those listed after it:
//!
//! * [`server`]: [`start`] builds the state and starts the controllers; [`serve`] accepts
//!   connections;
//! * [`handlers`]: the router and the verbs (get, list, watch, create, update, patch, delete,
//!   scale), admission, request bodies, and the debug API;
//! * [`discovery`]: `/api`, `/apis`, `/version` and OpenAPI;
//! * [`transport`]: the listener, connections (TLS, HTTP/2, header limits), the max-in-flight
//!   filter, response bodies, and the watch pump with its chunked and WebSocket framings;
//! * [`authn`]: who is asking (token file, client certificates, anonymous);
//! * [`authz`]: whether they may (AlwaysAllow or RBAC), impersonation, the access reviews and
//!   the default roles;
//! * [`client_audit`]: what each client asked and was sent, judged by the client audit;
//! * [`upkeep`]: the CRD controllers, the garbage collector, graceful deletion, namespace cleanup;
//! * [`state`]: what handlers and controllers share ([`ApiState`]), built from [`config`];
//! * [`customresources`]: the resources CRDs add while the server runs, beside the built-ins;
//! * [`registry`]: one resource's objects below HTTP, with the one delegator that picks the
//!   watch cache or storage for every read, the guaranteed update and deletion;
//! * [`options`]: list, watch, write and delete options, validated as kube does;
//! * [`request`], [`response`], [`metrics`], [`panics`], [`faults`]: what a request is, how an
//!   answer is built, what is counted, the last-resort panic guard, injected faults;
//! * [`control`]: the faults a test causes, as calls on [`ApiState`] (the debug API's and
//!   `listwatch-testserver`'s one home for them).
//!
//! Only what the `listwatch` binary needs is public: [`start`], [`serve`], [`ServerConfig`],
//! [`ApiState`], [`WatchBreaker`], [`StreamFault`], [`authn`], [`listener`] and [`tls`]. The map above links the private modules
//! for readers of the source (`cargo doc --document-private-items` renders them).
#![allow(rustdoc::private_intra_doc_links)]

mod admission;
pub mod authn;
mod authz;
pub mod client_audit;
mod config;
mod control;
mod customresources;
mod discovery;
mod faults;
mod handlers;
mod metrics;
mod options;
mod panics;
mod registry;
mod request;
mod response;
mod server;
mod state;
mod transport;
mod upkeep;
mod webhook_client;

pub use authz::AuthorizationMode;
pub use config::{REQUEST_THREAD_STACK_BYTES, ServerConfig};
pub use faults::{StreamFault, WatchBreaker};
pub use server::{serve, start};
pub use state::ApiState;
pub use transport::{listener, tls};
pub use webhook_client::ServiceUrl as WebhookServiceUrl;
