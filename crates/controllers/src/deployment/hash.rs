//! The `pod-template-hash` a Deployment gives each ReplicaSet, and template comparison that
//! ignores it.
//!
//! kube hashes the Go struct of the template as `spew` prints it (`controller.ComputeHash`),
//! which cannot be reproduced outside Go; this hashes the template's JSON with its keys sorted
//! instead, with the same FNV-1a (32 bit), the same `collisionCount` suffix and the same
//! encoding (`rand.SafeEncodeString`). The names therefore look like kube's (`web-7d9c5b8f6d`)
//! and are stable, but differ from those a real cluster gives the same template.

use serde_json::Value;

/// The label on a ReplicaSet, its selector and its pods that tells templates apart.
pub const HASH_LABEL: &str = "pod-template-hash";

/// Characters of `rand.SafeEncodeString`: no vowels (no words), no look-alikes.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The hash of `template` (a PodTemplateSpec) and `collision_count`.
pub fn compute(template: &Value, collision_count: Option<i64>) -> String {
    let mut hash = Fnv1a::new();
    write_canonical(template, &mut hash);
    if let Some(count) = collision_count {
        hash.write(&(count as u32).to_le_bytes());
    }
    hash.0.to_string().bytes().map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()])).collect()
}

/// Whether two templates are equal once the hash label is removed from both (kube's
/// `EqualIgnoreHash`).
pub fn equal_ignoring_hash(a: &Value, b: &Value) -> bool {
    without_hash(a) == without_hash(b)
}

/// `template` without the hash label (and without a labels map left empty by that).
pub fn without_hash(template: &Value) -> Value {
    let mut template = template.clone();
    if let Some(metadata) = template.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
            labels.remove(HASH_LABEL);
            if labels.is_empty() {
                metadata.remove("labels");
            }
        }
        if metadata.is_empty() {
            template.as_object_mut().map(|t| t.remove("metadata"));
        }
    }
    template
}

struct Fnv1a(u32);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0x811c_9dc5)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u32::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// Feeds `value` as JSON with object keys sorted, so equal templates hash alike whatever
/// order their fields came in.
fn write_canonical(value: &Value, hash: &mut Fnv1a) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hash.write(b"{");
            for key in keys {
                hash.write(serde_json::to_string(key).unwrap_or_default().as_bytes());
                hash.write(b":");
                write_canonical(&map[key], hash);
                hash.write(b",");
            }
            hash.write(b"}");
        }
        Value::Array(items) => {
            hash.write(b"[");
            for item in items {
                write_canonical(item, hash);
                hash.write(b",");
            }
            hash.write(b"]");
        }
        other => hash.write(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_hash_ignores_field_order_and_uses_safe_characters() {
        let a =
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let b =
            json!({"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}});
        assert_eq!(compute(&a, None), compute(&b, None));
        assert_ne!(compute(&a, None), compute(&a, Some(1)));
        assert!(compute(&a, None).bytes().all(|c| ALPHANUMS.contains(&c)));
        let c = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
        assert_ne!(compute(&a, None), compute(&c, None));
    }

    #[test]
    fn templates_compare_without_the_hash_label() {
        let a = json!({"metadata": {"labels": {"app": "web"}}, "spec": {}});
        let b = json!({"metadata": {"labels": {"app": "web", HASH_LABEL: "x"}}, "spec": {}});
        assert!(equal_ignoring_hash(&a, &b));
        assert!(!equal_ignoring_hash(&a, &json!({"metadata": {"labels": {"app": "api"}}, "spec": {}})));
    }
}
