//! Field manager names: the ones kube and kubectl use, and the one kube
//! makes up when a write names none (`handlers/create.go`
//! `managerOrUserAgent`, `internal/buildmanagerinfo.go`).

/// The longest field manager name kube accepts, in bytes.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The name kube records for an empty manager.
pub const UNKNOWN_MANAGER: &str = "unknown";

/// The `Update` manager that an apply to an object without managedFields
/// first gives every existing field to, so that changing them conflicts.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// `kubectl apply --server-side`'s manager; the only one for which the
/// server forces conflicts with client-side apply and keeps the
/// last-applied annotation up to date.
pub const KUBECTL: &str = "kubectl";

/// Client-side `kubectl apply`'s manager (an `Update` entry).
pub const KUBECTL_CLIENT_SIDE_APPLY: &str = "kubectl-client-side-apply";

/// The manager kubectl applies the last-applied annotation alone with when
/// it moves an object from client-side to server-side apply.
pub const KUBECTL_LAST_APPLIED: &str = "kubectl-last-applied";

/// The manager kubectl sends for one of its writing commands: `kubectl` for
/// server-side apply, `kubectl-client-side-apply` for client-side apply, and
/// otherwise `kubectl-<command>` (`kubectl-edit`, `kubectl-create`,
/// `kubectl-replace`, `kubectl-patch`, `kubectl-label`, `kubectl-annotate`,
/// `kubectl-set`, `kubectl-rollout`, …).
pub fn kubectl_manager(command: &str, server_side: bool) -> String {
    match (command, server_side) {
        ("apply", true) => KUBECTL.to_owned(),
        ("apply", false) => KUBECTL_CLIENT_SIDE_APPLY.to_owned(),
        (command, _) => format!("kubectl-{command}"),
    }
}

/// The manager of a non-apply write: the `fieldManager` parameter if
/// given, else derived from the User-Agent ([`prefix_from_user_agent`]).
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: &str) -> String {
    match field_manager {
        Some(manager) if !manager.is_empty() => manager.to_owned(),
        _ => prefix_from_user_agent(user_agent),
    }
}

/// The User-Agent up to its first `/`, printable characters only, cut to
/// [`FIELD_MANAGER_MAX_LENGTH`] bytes: `kubectl/v1.32.0 (linux/amd64) …`
/// gives `kubectl`.
pub fn prefix_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| super::fieldpath::is_go_printable(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The name kube records for `manager`: [`UNKNOWN_MANAGER`] when empty.
pub(crate) fn recorded(manager: &str) -> &str {
    if manager.is_empty() { UNKNOWN_MANAGER } else { manager }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_managers_as_kube() {
        assert_eq!(manager_or_user_agent(None, "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "kubectl");
        assert_eq!(manager_or_user_agent(Some("m"), "kubectl/v1.32.0"), "m");
        assert_eq!(manager_or_user_agent(Some(""), "Go-http-client/1.1"), "Go-http-client");
        assert_eq!(prefix_from_user_agent("a\u{1}b\tc"), "abc");
        assert_eq!(prefix_from_user_agent(&"x".repeat(200)).len(), FIELD_MANAGER_MAX_LENGTH);
        assert_eq!(kubectl_manager("edit", false), "kubectl-edit");
        assert_eq!(kubectl_manager("apply", false), KUBECTL_CLIENT_SIDE_APPLY);
        assert_eq!(recorded(""), "unknown");
    }
}
