//! CustomResourceDefinitions as a pure library: everything kube-apiserver's
//! `apiextensions-apiserver` decides about a CRD and its custom resources that does not need
//! a server, so the apiserver crate can wire it in and tests can check it without one.
//!
//! * [`crd`]: the `apiextensions.k8s.io/v1` types, with [`defaults`] (what the server fills
//!   in) and [`strategy`] (what create and update do to status and generation).
//! * [`validation`]: CRD create/update validation with kube's field paths and messages.
//! * [`schema`]: the structural schema of one version, and what it does to custom resources:
//!   pruning, defaulting and validation.
//! * [`names`]: the names discovery needs, and the NamesAccepted / Established conditions.
//! * [`table`]: `additionalPrinterColumns` as a `meta.k8s.io` Table.
//! * [`fields`]: field selectors (`selectableFields`) and the scale subresource's paths.
//! * [`openapi`]: the OpenAPI v3 document of one group-version, for `kubectl explain`.
//! * [`serving`]: one served version compiled for serving its custom resources (what the
//!   apiserver's run-time registry holds per version), and [`version_order`], kube's order of
//!   versions in discovery.
//!
//! Facts come from kube's `apiextensions-apiserver` and `kube-openapi` (release-1.32) and from
//! `shared/spec/crds-and-apply.md`.

pub mod crd;
pub mod defaults;
pub mod errors;
pub mod fields;
pub mod go_value;
pub mod jsonpath;
pub mod names;
pub mod openapi;
pub mod path;
pub mod schema;
pub mod serving;
pub mod strategy;
pub mod table;
pub mod validation;
pub mod version_order;

pub use crd::CustomResourceDefinition;
pub use path::FieldPath;
pub use schema::Schema;
