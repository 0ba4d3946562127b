//! A fingerprint of an object's content, the same whether it is taken from the stored JSON or
//! from the object a client decoded: what the watch simulator compares to tell that an event
//! carried exactly the state written at its revision.
//!
//! The fingerprint covers everything but `metadata.resourceVersion` (set when the object is
//! read, not stored), `metadata.managedFields`, and `apiVersion` and `kind` (which a client may
//! fill in or drop). Object keys are taken in sorted order, so the order the JSON was written in
//! does not matter. The hash is FNV-1a (64-bit): stable across processes and Rust versions,
//! unlike `std`'s `DefaultHasher`.

use serde_json::Value;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The fingerprint of an object's content (see the module doc).
pub fn object_fingerprint(object: &Value) -> u64 {
    let mut hash = Fnv(FNV_OFFSET);
    match object {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().filter(|k| !matches!(k.as_str(), "apiVersion" | "kind")).collect();
            keys.sort();
            hash.byte(b'{');
            for key in keys {
                hash.string(key);
                if key == "metadata" {
                    metadata(&mut hash, &map[key]);
                } else {
                    value(&mut hash, &map[key]);
                }
            }
            hash.byte(b'}');
        }
        other => value(&mut hash, other),
    }
    hash.0
}

fn metadata(hash: &mut Fnv, meta: &Value) {
    let Value::Object(map) = meta else { return value(hash, meta) };
    let mut keys: Vec<&String> =
        map.keys().filter(|k| !matches!(k.as_str(), "resourceVersion" | "managedFields")).collect();
    keys.sort();
    hash.byte(b'{');
    for key in keys {
        hash.string(key);
        value(hash, &map[key]);
    }
    hash.byte(b'}');
}

fn value(hash: &mut Fnv, v: &Value) {
    match v {
        Value::Null => hash.byte(b'n'),
        Value::Bool(b) => hash.byte(if *b { b't' } else { b'f' }),
        Value::Number(n) => {
            hash.byte(b'#');
            hash.bytes(n.to_string().as_bytes());
        }
        Value::String(s) => hash.string(s),
        Value::Array(items) => {
            hash.byte(b'[');
            for item in items {
                value(hash, item);
            }
            hash.byte(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hash.byte(b'{');
            for key in keys {
                hash.string(key);
                value(hash, &map[key]);
            }
            hash.byte(b'}');
        }
    }
}

struct Fnv(u64);

impl Fnv {
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.byte(*b);
        }
    }

    /// A string, length first, so `"ab","c"` and `"a","bc"` differ.
    fn string(&mut self, s: &str) {
        self.byte(b'"');
        self.bytes(&(s.len() as u64).to_le_bytes());
        self.bytes(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::object_fingerprint;

    #[test]
    fn the_read_only_fields_and_key_order_do_not_count() {
        let stored = json!({"metadata": {"name": "a", "uid": "u"}, "data": {"x": "1", "y": "2"}});
        let read = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "data": {"y": "2", "x": "1"},
            "metadata": {"uid": "u", "resourceVersion": "42", "name": "a"},
        });
        assert_eq!(object_fingerprint(&stored), object_fingerprint(&read));
    }

    #[test]
    fn any_content_change_counts() {
        let a = json!({"metadata": {"name": "a"}, "data": {"x": "1"}});
        for b in [
            json!({"metadata": {"name": "a"}, "data": {"x": "2"}}),
            json!({"metadata": {"name": "a", "labels": {"k": "v"}}, "data": {"x": "1"}}),
            json!({"metadata": {"name": "a"}, "data": {"x": "1", "y": ""}}),
            json!({"metadata": {"name": "a"}, "data": {"x1": ""}}),
        ] {
            assert_ne!(object_fingerprint(&a), object_fingerprint(&b), "{b}");
        }
    }
}
