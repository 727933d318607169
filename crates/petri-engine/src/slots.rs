//! Live per-sandbox state: the exec queue and the kill switch.
//!
//! Execs on one sandbox run one at a time, in arrival order (tokio's mutex is fair). A
//! queued exec streams keepalives until its turn; beyond `exec_queue_max` waiting execs the
//! next is refused with 429. Serialising keeps concurrent writers (installers, builds) from
//! corrupting a workspace, and makes the per-sandbox limits mean what they say.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

use crate::exec::BackgroundHandle;

/// Queue and kill switch of one sandbox.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub queue: tokio::sync::Mutex<()>,
    pub waiting: AtomicUsize,
    pub running: AtomicUsize,
    /// Cancelled when the sandbox is deleted or expires: kills what runs and what waits.
    pub doomed: CancellationToken,
    /// Background processes still running, by run id.
    background: std::sync::Mutex<HashMap<String, Arc<BackgroundHandle>>>,
}

impl Slot {
    /// An exec runs or waits. Background processes do not count: they do not keep an idle
    /// sandbox from expiring.
    pub fn busy(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) + self.running.load(Ordering::SeqCst) > 0
    }

    /// Nothing of the sandbox runs any more, background processes included.
    pub fn settled(&self) -> bool {
        !self.busy() && self.background_processes().is_empty()
    }

    pub fn background_processes(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<BackgroundHandle>>> {
        self.background.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Decrements a counter when dropped.
#[derive(Debug)]
pub(crate) struct CountGuard<'a>(&'a AtomicUsize);

impl<'a> CountGuard<'a> {
    pub fn enter(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// All slots, keyed by sandbox id.
#[derive(Debug, Default)]
pub(crate) struct Slots(std::sync::Mutex<HashMap<String, Arc<Slot>>>);

impl Slots {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get_or_create(&self, id: &str) -> Arc<Slot> {
        self.map().entry(id.to_string()).or_default().clone()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Slot>> {
        self.map().get(id).cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Slot>> {
        self.map().remove(id)
    }

    pub fn is_busy(&self, id: &str) -> bool {
        self.get(id).is_some_and(|slot| slot.busy())
    }

    pub fn is_running(&self, id: &str) -> bool {
        self.get(id)
            .is_some_and(|slot| slot.running.load(Ordering::SeqCst) > 0)
    }
}
