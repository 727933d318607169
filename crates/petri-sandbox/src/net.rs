//! Network namespaces, made without privilege by a forked child that enters new user and
//! network namespaces (mapping only its own uid) and hands the server what it needs over a
//! socket pair:
//! - the "registries" profile of installs: a namespace of the exec's own whose only way out is
//!   a listener on `127.0.0.1:<port>` created inside it, which the server serves from the
//!   host's namespace (no veth, no routes, no resolver);
//! - the sandbox's network: one namespace per sandbox, loopback only, that every exec of the
//!   sandbox joins, so a background server is reachable from later execs and from the port
//!   preview, and never from another sandbox. The server holds descriptors of the namespaces,
//!   which keeps them alive without a process; dropping them (sandbox deleted) frees them.

use std::collections::HashMap;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SocketFlags, SocketType,
    recvmsg, socketpair,
};

use crate::sys::{
    ChildSetup, FreshNamespaces, Namespaces, NetworkSetup, connect_loopback, install,
};
use crate::{SandboxError, SandboxSpec};

/// The two ends of the channel a child sends descriptors over.
pub(crate) fn channel() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    socketpair(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| SandboxError::Network(e.into()))
}

/// Receives the descriptors the child sent (already queued once it has exited or exec'd).
fn receive_fds(channel: &OwnedFd) -> Result<Vec<OwnedFd>, SandboxError> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    recvmsg(
        channel,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| SandboxError::Network(e.into()))?;
    Ok(control
        .drain()
        .filter_map(|message| match message {
            RecvAncillaryMessage::ScmRights(fds) => Some(fds.collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect())
}

/// Receives the proxy listener the child sent (it is already queued once spawn has returned).
pub(crate) fn receive_listener(channel: &OwnedFd) -> Result<TcpListener, SandboxError> {
    receive_fds(channel)?
        .into_iter()
        .next()
        .map(TcpListener::from)
        .ok_or_else(|| SandboxError::Network(std::io::Error::other("the sandbox sent no listener")))
}

/// Runs a short-lived child (`/bin/true` after its setup) and waits for it.
fn run_helper(setup: ChildSetup) -> std::io::Result<()> {
    let mut command = std::process::Command::new("/bin/true");
    command
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    install(&mut command, setup);
    let status = command.status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("network helper: {status}")))
    }
}

/// The network namespace of each sandbox, made at its first exec.
#[derive(Debug, Default)]
pub(crate) struct SandboxNetworks(Mutex<HashMap<String, Arc<Namespaces>>>);

impl SandboxNetworks {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Namespaces>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sandbox's network, made now if it has none yet.
    pub fn get_or_create(&self, sandbox: &SandboxSpec) -> Result<Arc<Namespaces>, SandboxError> {
        let mut map = self.map();
        if let Some(namespaces) = map.get(&sandbox.id) {
            return Ok(namespaces.clone());
        }
        let (ours, childs) = channel()?;
        run_helper(ChildSetup {
            network: Some(NetworkSetup::Export {
                fresh: FreshNamespaces::new(sandbox.host_uid),
                channel: childs,
            }),
            host_uid: sandbox.host_uid,
            ..ChildSetup::default()
        })
        .map_err(SandboxError::Network)?;
        let mut fds = receive_fds(&ours)?.into_iter();
        let (Some(user), Some(net)) = (fds.next(), fds.next()) else {
            return Err(SandboxError::Network(std::io::Error::other(
                "the namespace helper sent no descriptors",
            )));
        };
        let namespaces = Arc::new(Namespaces { user, net });
        map.insert(sandbox.id.clone(), namespaces.clone());
        Ok(namespaces)
    }

    /// A connection to `127.0.0.1:port` inside the sandbox's network; it may still be
    /// completing (the socket is non-blocking).
    pub fn connect(&self, sandbox: &SandboxSpec, port: u16) -> Result<TcpStream, SandboxError> {
        let closed = || SandboxError::PortClosed {
            sandbox_id: sandbox.id.clone(),
            port,
        };
        // No namespace yet means no exec has run since the server started: nothing listens.
        let namespaces = self.map().get(&sandbox.id).cloned().ok_or_else(closed)?;
        let connected = match connect_from_thread(&namespaces, port) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                connect_from_helper(namespaces, port, sandbox.host_uid)
            }
            other => other,
        };
        connected.map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => closed(),
            _ => SandboxError::Network(e),
        })
    }

    pub fn remove(&self, sandbox_id: &str) {
        self.map().remove(sandbox_id);
    }
}

/// Connects from a short-lived thread of the server that enters the sandbox's network
/// namespace (a thread's network namespace is its own, and the thread ends right after, so
/// no other work ever runs in there). Needs CAP_SYS_ADMIN over the namespace, i.e. root:
/// elsewhere it fails with PermissionDenied. About 0.1 ms, against a few for a helper child.
fn connect_from_thread(namespaces: &Arc<Namespaces>, port: u16) -> std::io::Result<TcpStream> {
    let namespaces = namespaces.clone();
    std::thread::Builder::new()
        .name("petri-preview".into())
        .spawn(move || -> std::io::Result<TcpStream> {
            use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
            move_into_link_name_space(namespaces.net.as_fd(), Some(LinkNameSpaceType::Network))?;
            connect_loopback(port).map(TcpStream::from)
        })?
        .join()
        .map_err(|_| std::io::Error::other("the preview thread panicked"))?
}

/// Connects from a helper child that joins the sandbox's user and network namespaces (which
/// needs no privilege when it runs as the namespaces' owner) and sends the socket back.
fn connect_from_helper(
    namespaces: Arc<Namespaces>,
    port: u16,
    host_uid: Option<u32>,
) -> std::io::Result<TcpStream> {
    let (ours, childs) = channel().map_err(std::io::Error::other)?;
    run_helper(ChildSetup {
        network: Some(NetworkSetup::Connect {
            namespaces,
            port,
            channel: childs,
        }),
        host_uid,
        ..ChildSetup::default()
    })?;
    receive_fds(&ours)
        .map_err(std::io::Error::other)?
        .into_iter()
        .next()
        .map(TcpStream::from)
        .ok_or_else(|| std::io::Error::other("the connect helper sent no socket"))
}
