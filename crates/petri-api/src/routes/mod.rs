//! One module per resource; handlers parse input, call the engine and map the reply.

pub(crate) mod dashboard;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod ports;
pub(crate) mod processes;
pub(crate) mod runs;
pub(crate) mod sandboxes;
pub(crate) mod status;
