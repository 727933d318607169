//! Egress proxy events into the registry, against their sandbox and run.

use std::sync::Arc;

use petri_egress::{AuditSink, ConnectionEvent};
use petri_store::{EgressRecord, Store};

use crate::ids::{format_time, now};

/// Writes every proxy connection event to the `egress` table.
#[derive(Debug)]
pub(crate) struct StoreAudit {
    store: Arc<Store>,
}

impl StoreAudit {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }
}

impl AuditSink for StoreAudit {
    fn record(&self, event: ConnectionEvent) {
        let record = EgressRecord {
            sandbox_id: event.tag.sandbox_id,
            run_id: event.tag.run_id,
            at: format_time(now()),
            target: event.target,
            allowed: event.allowed,
            detail: event.detail,
            bytes_up: event.bytes_up,
            bytes_down: event.bytes_down,
        };
        let store = self.store.clone();
        // Called from proxy tasks: keep SQLite off the async threads.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = store.record_egress(&record) {
                tracing::error!(error = %e, "cannot record an egress event");
            }
        });
    }
}
