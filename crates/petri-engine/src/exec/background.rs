//! Background processes: execs started detached. Each is an ordinary run (recorded, logged,
//! in the sandbox's cgroup and network) that gives the sandbox's turn back once its
//! dependencies are installed, has no timeout unless asked for one, does not keep its sandbox
//! alive, and takes orders (signals, kill) through a [`BackgroundHandle`].

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::ExecEvent;
use super::lines::LineSplitter;
use crate::slots::Slot;

/// An order for a running background process.
#[derive(Debug)]
pub(crate) enum Control {
    /// Send a signal to the command's process group; the reply says whether it was sent.
    Signal {
        signal: i32,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Kill the whole process tree.
    Kill,
}

/// How far a background process's stored output has got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Bytes of output in its log so far.
    pub logged: u64,
    /// The run is over and its record complete.
    pub finished: bool,
}

/// The live side of a background process, kept in its sandbox's slot while it runs.
#[derive(Debug)]
pub(crate) struct BackgroundHandle {
    pub control: mpsc::UnboundedSender<Control>,
    pub progress: Arc<watch::Sender<Progress>>,
}

impl BackgroundHandle {
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Control>) {
        let (control, orders) = mpsc::unbounded_channel();
        let (progress, _) = watch::channel(Progress::default());
        let handle = Arc::new(Self {
            control,
            progress: Arc::new(progress),
        });
        (handle, orders)
    }

    /// Marks the run over (after its record is complete) and forgets it.
    pub fn finish(&self, slot: &Slot, run_id: &str) {
        self.progress.send_modify(|p| p.finished = true);
        slot.background_processes().remove(run_id);
    }
}

/// Signals a client may send, by name (with or without `SIG`) or number.
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc_signal::HUP),
    ("INT", libc_signal::INT),
    ("QUIT", libc_signal::QUIT),
    ("KILL", libc_signal::KILL),
    ("USR1", libc_signal::USR1),
    ("USR2", libc_signal::USR2),
    ("TERM", libc_signal::TERM),
    ("CONT", libc_signal::CONT),
    ("STOP", libc_signal::STOP),
];

/// Linux signal numbers (x86-64 and aarch64 agree on these).
mod libc_signal {
    pub const HUP: i32 = 1;
    pub const INT: i32 = 2;
    pub const QUIT: i32 = 3;
    pub const KILL: i32 = 9;
    pub const USR1: i32 = 10;
    pub const USR2: i32 = 12;
    pub const TERM: i32 = 15;
    pub const CONT: i32 = 18;
    pub const STOP: i32 = 19;
}

pub(crate) const SIGKILL: i32 = libc_signal::KILL;

/// The number of a signal a client named: `TERM`, `SIGTERM`, `sigterm` or `15`.
pub(crate) fn parse_signal(name: &str) -> Option<i32> {
    let name = name.trim();
    if let Ok(number) = name.parse::<i32>() {
        return SIGNALS.iter().find(|(_, n)| *n == number).map(|(_, n)| *n);
    }
    let upper = name.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS.iter().find(|(n, _)| *n == bare).map(|(_, n)| *n)
}

/// The names accepted by [`parse_signal`], for error messages.
pub(crate) fn signal_names() -> String {
    SIGNALS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Streams a background process's output from its log as `output` events, from the start,
/// then live as it is written, until the run is over; the caller sends the final `done`.
/// Returns when everything logged has been sent, or when the receiver is gone.
pub(crate) async fn tail_log(
    log: PathBuf,
    mut progress: Option<watch::Receiver<Progress>>,
    events: &mpsc::UnboundedSender<ExecEvent>,
) {
    let mut offset = 0u64;
    let mut lines = LineSplitter::new(64 * 1024);
    loop {
        // Read the state before the file: whatever was logged before "finished" is then
        // certainly in the file when we read it.
        let finished = progress.as_ref().is_none_or(|p| p.borrow().finished);
        let chunk = {
            let (log, from) = (log.clone(), offset);
            tokio::task::spawn_blocking(move || read_from(&log, from))
                .await
                .unwrap_or_default()
        };
        offset += chunk.len() as u64;
        for line in lines.push(&chunk) {
            if events.send(ExecEvent::Output(line)).is_err() {
                return;
            }
        }
        if finished {
            break;
        }
        let Some(watching) = progress.as_mut() else {
            break;
        };
        tokio::select! {
            changed = watching.changed() => {
                if changed.is_err() {
                    progress = None;
                }
            }
            () = events.closed() => return,
        }
    }
    if let Some(rest) = lines.finish() {
        let _ = events.send(ExecEvent::Output(rest));
    }
}

/// The bytes of `path` from `offset` to its current end (nothing if it does not exist yet).
fn read_from(path: &std::path::Path, offset: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path)
        && file.seek(SeekFrom::Start(offset)).is_ok()
    {
        let _ = file.read_to_end(&mut bytes);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_like_kill_does() {
        assert_eq!(parse_signal("TERM"), Some(15));
        assert_eq!(parse_signal("SIGTERM"), Some(15));
        assert_eq!(parse_signal("sigint"), Some(2));
        assert_eq!(parse_signal("9"), Some(9));
        assert_eq!(parse_signal("SIGSEGV"), None);
        assert_eq!(parse_signal("11"), None);
        assert_eq!(parse_signal(""), None);
        assert_eq!(parse_signal("-15"), None);
    }
}
