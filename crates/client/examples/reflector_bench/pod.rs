//! The bench pod as a listwatch-client resource (`shared.rs`'s `BenchPod` with the client's
//! `ObjectMeta`); used by the `reflector_bench` example and by `benches/decode.rs`. Kept out of
//! `shared.rs`, which the kube-rs program includes too.

use listwatch_client::{ObjectMeta, Resource};

use super::shared::BenchPod;

pub type Pod = BenchPod<ObjectMeta>;

impl Resource for Pod {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
    const NAMESPACED: bool = true;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
}
