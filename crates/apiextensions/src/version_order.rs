//! kube's order of API versions (`k8s.io/apimachinery/pkg/version`
//! `CompareKubeAwareVersionStrings`), which discovery lists a CRD group's versions in, the
//! first being the preferred one: GA versions by major number (`v2`, `v1`), then betas
//! (`v2beta1`, `v1beta2`, `v1beta1`), then alphas, then anything else in string order.

use std::cmp::Ordering;

/// `(major, stability, minor)`: stability 2 for GA, 1 beta, 0 alpha.
fn kube_version(v: &str) -> Option<(u64, u8, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    if digits == 0 || rest.starts_with('0') {
        return None;
    }
    let major = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) || minor.starts_with('0') {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// How `a` ranks against `b`: `Greater` when `a` comes first in discovery.
pub fn compare(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// Sorts versions in discovery order (the preferred first).
pub fn sort(versions: &mut [String]) {
    versions.sort_by(|a, b| compare(b, a));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_kube_does() {
        let mut v: Vec<String> =
            ["foo10", "v1alpha1", "v1", "v2beta1", "v1beta2", "foo1", "v10", "v2", "v11alpha2", "v1beta1"]
                .iter()
                .map(ToString::to_string)
                .collect();
        sort(&mut v);
        assert_eq!(v, ["v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo1", "foo10"]);
    }
}
