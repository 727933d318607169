//! The one place with `unsafe`: work done in the forked child between `fork` and `exec`.
//!
//! Only async-signal-safe system calls on memory allocated before the fork are allowed here,
//! because the server is multi-threaded and another thread may hold the allocator's lock.

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::{FdFlags, fcntl_setfd, write};
use rustix::process::{Resource, Rlimit, setrlimit};

/// What the child does to itself before it becomes bubblewrap.
#[derive(Debug, Default)]
pub(crate) struct ChildSetup {
    /// Open `cgroup.procs` (v2) or `tasks` (v1) files; writing "0" moves the writer into that
    /// cgroup, so every process of the sandbox is accounted from its first instruction.
    pub cgroup_procs: Vec<OwnedFd>,
    /// Resource limits to set (the fallback when no cgroup is writable, plus hygiene limits).
    pub rlimits: Vec<(Resource, u64)>,
    /// Descriptors bubblewrap must inherit (they are opened close-on-exec).
    pub inherit: Vec<OwnedFd>,
    /// A network namespace to enter instead of the one bubblewrap would create.
    pub netns: Option<OwnedFd>,
}

pub(crate) fn install(command: &mut tokio::process::Command, setup: ChildSetup) {
    let ChildSetup {
        cgroup_procs,
        rlimits,
        inherit,
        netns,
    } = setup;
    let child_setup = move || -> std::io::Result<()> {
        // Descriptors the server inherited from whatever started it (a shell, a supervisor)
        // are not close-on-exec; none of them may reach the sandbox.
        mark_all_close_on_exec()?;
        for procs in &cgroup_procs {
            write(procs.as_fd(), b"0")?;
        }
        for &(resource, limit) in &rlimits {
            setrlimit(
                resource,
                Rlimit {
                    current: Some(limit),
                    maximum: Some(limit),
                },
            )?;
        }
        for fd in &inherit {
            fcntl_setfd(fd.as_fd(), FdFlags::empty())?;
        }
        if let Some(netns) = &netns {
            rustix::thread::move_into_link_name_space(
                netns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )?;
        }
        Ok(())
    };
    // SAFETY: `pre_exec` closures run in the child after fork. This one only performs
    // close_range(2), write(2), setrlimit(2), fcntl(2) and setns(2) on descriptors and vectors
    // allocated before the fork;
    // it allocates nothing, takes no locks and touches no state shared with other threads.
    unsafe {
        command.pre_exec(child_setup);
    }
}

/// Sets close-on-exec on every descriptor from 3 up, in one system call.
fn mark_all_close_on_exec() -> std::io::Result<()> {
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only changes descriptor flags of the
    // calling process; it takes no pointers and is async-signal-safe.
    let rc = unsafe {
        libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Moves the calling thread (only) into a new network namespace.
pub(crate) fn unshare_thread_network() -> std::io::Result<()> {
    // SAFETY: unshare_unsafe is unsafe because CLONE_FILES would split the descriptor table
    // between threads; only CLONE_NEWNET is requested, which affects nothing but this thread's
    // view of the network.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
    Ok(())
}

/// Brings the loopback interface of the calling thread's network namespace up.
pub(crate) fn loopback_up() -> std::io::Result<()> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the flags of the interface named in `request` into it; the
    // pointer is valid for the whole call and `fd` is an open socket.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFFLAGS the flags member of the union is the initialised one.
    unsafe { request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: SIOCSIFFLAGS reads `request`, valid for the whole call.
    if unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
