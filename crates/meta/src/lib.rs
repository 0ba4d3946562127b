//! Kubernetes API machinery shared by the server and its tests: the pieces of
//! `k8s.io/apimachinery` that listwatch needs, written for JSON objects.

pub mod admission_validation;
pub mod apps_validation;
pub mod continue_token;
pub mod defaults;
pub mod fingerprint;
pub mod object;
pub mod pod_validation;
pub mod policy_validation;
pub mod rbac_validation;
pub mod registry;
pub mod selector;
pub mod status;
pub mod validation;
pub mod watch_event;
pub mod write_validation;

pub use object::Object;
pub use registry::{Registry, Resource};
pub use status::{ApiError, GroupResource, Status};
pub use watch_event::{EventType, WatchEvent};
