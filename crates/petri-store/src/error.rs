use std::path::PathBuf;

/// Everything that can go wrong talking to the registry.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open registry database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create or restrict the registry database {path}: {source}")]
    Restrict {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("registry database has schema version {found}, this build knows only {known}")]
    NewerSchema { found: usize, known: usize },
    #[error("unknown {kind} value {value:?} in the registry")]
    BadEnum { kind: &'static str, value: String },
    #[error("registry query failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}
