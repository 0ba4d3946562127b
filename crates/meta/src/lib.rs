//! Kubernetes API machinery shared by the server and its tests: the pieces of
//! `k8s.io/apimachinery` that listwatch needs, written for JSON objects.

pub mod continue_token;
pub mod selector;
pub mod validation;
