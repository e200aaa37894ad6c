//! Programs some suites need when they are installed (bats, jq, docker-registry); a suite whose
//! program is missing says SKIPPED and what to install.

use std::path::PathBuf;

/// `name` on PATH.
pub fn installed(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
