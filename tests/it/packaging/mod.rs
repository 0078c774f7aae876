//! The packaging tier: the container image, the compose file and the Kubernetes manifests, read
//! and checked against the code without a container engine.

mod compose;
mod deploy_manifests;
mod dockerfile;
mod dockerignore;
mod image;

use std::path::Path;

/// The repository's root.
pub(crate) const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// A file of the repository, whole.
pub(crate) fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(REPO).join(path))
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}
