//! The options of a request, read from its query (and, for a delete, its body) and validated
//! as kube-apiserver validates them: list and watch options, write options, delete options.
//! The registry takes them as they are parsed here; the handlers parse them.

pub mod delete;
pub mod list;
pub mod write;

pub use delete::{DeleteOptions, delete_options};
pub use list::{
    ListOptions, RequestedVersion, ResourceVersionMatch, parse, parse_resource_version, with_client_version,
};
pub use write::{ApplyOptions, FieldValidation, OptionsKind, apply_options, write_options};
