//! The bench pod as a listwatch-client resource (`shared.rs`'s `BenchPod` with the client's
//! `ObjectMeta`); used by the `reflector_bench` example and by `benches/decode.rs`. Kept out of
//! `shared.rs`, which the kube-rs program includes too.

use listwatch_client::{ObjectMeta, impl_resource};

use super::shared::BenchPod;

pub type Pod = BenchPod<ObjectMeta>;

impl_resource!(Pod, group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true);
