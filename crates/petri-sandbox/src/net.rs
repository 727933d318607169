//! The "registries" network profile: the exec's own network namespace whose only way out is a
//! listener on `127.0.0.1:<port>` created inside it (by the child itself, see
//! `sys::ProxyNetwork`), which the server serves from the host's namespace. No veth, no
//! routes, no resolver, and no privilege needed.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::TcpListener;
use std::os::fd::OwnedFd;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SocketFlags, SocketType,
    recvmsg, socketpair,
};

use crate::SandboxError;

/// The two ends of the channel the child sends its listener over.
pub(crate) fn listener_channel() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    socketpair(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| SandboxError::Network(e.into()))
}

/// Receives the listener the child sent (it is already queued once spawn has returned).
pub(crate) fn receive_listener(channel: &OwnedFd) -> Result<TcpListener, SandboxError> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    recvmsg(
        channel,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| SandboxError::Network(e.into()))?;
    let fd = control
        .drain()
        .find_map(|message| match message {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .ok_or_else(|| {
            SandboxError::Network(std::io::Error::other("the sandbox sent no listener"))
        })?;
    Ok(TcpListener::from(fd))
}
