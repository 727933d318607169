//! The "registries" network profile: a fresh network namespace whose only way out is a
//! listener on `127.0.0.1:<port>` created inside it, which the server serves from the host's
//! namespace (the egress proxy). No veth, no routes, no DNS: sandboxed code can reach that
//! one port on loopback and nothing else.

use std::fs::File;
use std::net::TcpListener;
use std::os::fd::OwnedFd;

use crate::SandboxError;
use crate::sys::{loopback_up, unshare_thread_network};

/// A network namespace prepared for one exec.
#[derive(Debug)]
pub(crate) struct PrivateNetwork {
    /// `/proc/thread-self/ns/net` of the namespace; the child enters it.
    pub namespace: OwnedFd,
    /// Bound inside the namespace, accepted from the host's.
    pub listener: TcpListener,
}

/// Creates the namespace on a short-lived thread: namespaces are per thread, so the server's
/// own threads never leave the host's network.
pub(crate) fn private_network(port: u16) -> Result<PrivateNetwork, SandboxError> {
    let setup = std::thread::spawn(move || -> std::io::Result<PrivateNetwork> {
        unshare_thread_network()?;
        loopback_up()?;
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let namespace = OwnedFd::from(File::open("/proc/thread-self/ns/net")?);
        Ok(PrivateNetwork {
            namespace,
            listener,
        })
    });
    setup
        .join()
        .map_err(|_| SandboxError::Network(std::io::Error::other("network setup thread panicked")))?
        .map_err(SandboxError::Network)
}
