//! Compiles the workspace's `proto/` tree into one `FileDescriptorSet` that the crate embeds.
//!
//! Nothing is generated as Rust: the conversion code walks the descriptors at run time (through
//! prost-reflect), so one descriptor set is all the build has to produce. `protoc` is taken
//! from `$PROTOC`, else from `PATH` (Debian: `protobuf-compiler`); it also supplies
//! `google/protobuf/descriptor.proto`, which `listwatch/go_json.proto` imports.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let proto_root = manifest_dir.join("../../proto");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("k8s.descriptor.bin");

    // A directory makes cargo rescan the whole tree for changes.
    println!("cargo:rerun-if-changed={}", proto_root.display());
    println!("cargo:rerun-if-env-changed=PROTOC");

    let mut files = Vec::new();
    collect_protos(&proto_root, &proto_root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no .proto files under {}", proto_root.display());

    let protoc = env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let status = Command::new(&protoc)
        .arg(format!("--proto_path={}", proto_root.display()))
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.display()))
        .args(&files)
        .status()
        .unwrap_or_else(|err| {
            panic!(
                "could not run {} ({err}): install protoc (Debian: protobuf-compiler) or point PROTOC at it",
                protoc.to_string_lossy()
            )
        });
    assert!(status.success(), "protoc failed on {}: {status}", proto_root.display());
}

/// Paths relative to the proto root, so descriptor file names match the `import` lines
/// (`k8s.io/api/core/v1/generated.proto`).
fn collect_protos(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|err| panic!("reading {}: {err}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_protos(root, &path, files);
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            let relative = path.strip_prefix(root).expect("path under the proto root");
            files.push(relative.to_string_lossy().into_owned());
        }
    }
}
