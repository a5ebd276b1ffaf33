//! Configuration errors, each with the file and place it points at.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Everything wrong with the file, one problem per line, each as
    /// `file:line:col: message`.
    #[error("{}", problems.join("\n"))]
    Invalid { problems: Vec<String> },
}
