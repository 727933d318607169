use petri_sandbox::SandboxError;
use petri_store::StoreError;

/// Everything the engine can refuse or fail at. The HTTP layer maps each variant to a status
/// code and a stable error code; internal variants are logged, never shown in detail.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Sandbox not found")]
    SandboxNotFound { id: String },
    #[error("Run not found")]
    RunNotFound { id: String },
    #[error("unsupported language {language:?}; supported: {}", supported.join(", "))]
    UnsupportedLanguage {
        language: String,
        supported: Vec<&'static str>,
    },
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: String },
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("path {path:?} does not exist in the sandbox")]
    PathNotFound { path: String },
    #[error("invalid zip archive: {reason}")]
    InvalidZip { reason: String },
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge { what: String, limit: String },
    #[error("sandbox {id} already has {queued} execs waiting; try again when one finishes")]
    SandboxBusy { id: String, queued: usize },
    #[error("output of run {id} was evicted by log retention (PETRI_LOG_MAX_MB)")]
    OutputEvicted { id: String },
    #[error("run {id} installed no dependencies, so it has no bill of materials")]
    SbomNotFound { id: String },
    #[error("no background process {id} in this sandbox")]
    ProcessNotFound { id: String },
    #[error("background process {id} is still starting (installing dependencies); try again")]
    ProcessStarting { id: String },
    #[error("background process {id} is not running any more")]
    ProcessEnded { id: String },
    #[error(
        "sandbox {id} already runs {max} background processes (PETRI_BACKGROUND_MAX); stop one first"
    )]
    TooManyProcesses { id: String, max: usize },
    #[error("nothing listens on port {port} in sandbox {id}")]
    PortClosed { id: String, port: u16 },
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("registry error: {0}")]
    Store(#[from] StoreError),
    #[error("isolation error: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("background task failed: {0}")]
    Task(String),
}

impl EngineError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}
