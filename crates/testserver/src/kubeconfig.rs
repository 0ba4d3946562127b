//! The kubeconfig a test hands to a program that reads one (kubectl, a controller binary, a
//! client in another language): the server's URL, no credentials (the server lets anyone in,
//! as envtest's insecure port did), the `default` namespace.

use std::path::{Path, PathBuf};

/// Writes the kubeconfig for `url` into `dir`; answers its path.
pub(crate) fn write(dir: &Path, url: &str) -> std::io::Result<PathBuf> {
    let path = dir.join("kubeconfig");
    let lines = [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: listwatch",
        "  cluster:",
        &format!("    server: {url}"),
        "users:",
        "- name: listwatch",
        "  user: {}",
        "contexts:",
        "- name: listwatch",
        "  context:",
        "    cluster: listwatch",
        "    user: listwatch",
        "    namespace: default",
        "current-context: listwatch",
    ];
    let text = lines.join("\n") + "\n";
    std::fs::write(&path, text)?;
    Ok(path)
}
