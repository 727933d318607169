//! The one place with `unsafe`: work done in the forked child between `fork` and `exec`.
//!
//! Only async-signal-safe system calls on memory allocated before the fork are allowed here,
//! because the server is multi-threaded and another thread may hold the allocator's lock.

use std::ffi::CString;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

use rustix::io::{FdFlags, fcntl_setfd, write};
use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketType, bind, listen,
    sendmsg, socket,
};
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
    /// Which network namespace the child ends up in (default: the one bubblewrap makes).
    pub network: Option<NetworkSetup>,
    /// Become this host uid and gid (no supplementary groups) before anything else runs.
    pub host_uid: Option<u32>,
}

/// The network namespace work a child does before it execs. Everything is prepared in the
/// parent, so the child only makes system calls on memory allocated before the fork.
#[derive(Debug)]
pub(crate) enum NetworkSetup {
    /// New user and network namespaces with a listener on `127.0.0.1:port`, sent to the
    /// server over `channel` (the registry network of installs; see `net.rs`).
    Proxy {
        fresh: FreshNamespaces,
        port: u16,
        channel: OwnedFd,
    },
    /// New user and network namespaces whose descriptors are sent to the server over
    /// `channel`: the sandbox's own network, which its execs then join.
    Export {
        fresh: FreshNamespaces,
        channel: OwnedFd,
    },
    /// Join a sandbox's network (its user namespace first, which grants the right to).
    Join(Arc<Namespaces>),
    /// Join a sandbox's network, connect to `127.0.0.1:port` there and send the socket to the
    /// server over `channel` (port preview).
    Connect {
        namespaces: Arc<Namespaces>,
        port: u16,
        channel: OwnedFd,
    },
}

/// A sandbox's network: descriptors of its user namespace and of the network namespace that
/// user namespace owns. Holding them keeps both alive without any process.
#[derive(Debug)]
pub(crate) struct Namespaces {
    pub user: OwnedFd,
    pub net: OwnedFd,
}

impl Namespaces {
    fn join(&self) -> std::io::Result<()> {
        use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
        move_into_link_name_space(self.user.as_fd(), Some(LinkNameSpaceType::User))?;
        move_into_link_name_space(self.net.as_fd(), Some(LinkNameSpaceType::Network))?;
        Ok(())
    }
}

/// New user and network namespaces, prepared by the child itself so no privilege is needed:
/// it maps only its own uid (which any user may do) and brings loopback up.
#[derive(Debug)]
pub(crate) struct FreshNamespaces {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    setgroups_path: CString,
    uid_map_path: CString,
    gid_map_path: CString,
    user_ns_path: CString,
    net_ns_path: CString,
}

impl FreshNamespaces {
    /// Everything the child will need, allocated now (in the parent). `host_uid` is the uid
    /// and gid the child will have switched to, if any.
    pub fn new(host_uid: Option<u32>) -> Self {
        let path =
            |name: &str| CString::new(format!("/proc/self/{name}")).expect("no NUL in a literal");
        let uid = host_uid.unwrap_or_else(|| rustix::process::getuid().as_raw());
        let gid = host_uid.unwrap_or_else(|| rustix::process::getgid().as_raw());
        Self {
            uid_map: format!("0 {uid} 1\n").into_bytes(),
            gid_map: format!("0 {gid} 1\n").into_bytes(),
            setgroups_path: path("setgroups"),
            uid_map_path: path("uid_map"),
            gid_map_path: path("gid_map"),
            user_ns_path: path("ns/user"),
            net_ns_path: path("ns/net"),
        }
    }

    /// Runs in the child. Async-signal-safe: system calls on memory prepared in `new`.
    fn enter(&self) -> std::io::Result<()> {
        use rustix::thread::UnshareFlags;
        // SAFETY: unshare_unsafe is unsafe because CLONE_FILES would split the descriptor
        // table between threads; only user and network namespaces are requested, in a
        // single-threaded child about to exec.
        unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNET) }?;
        write_file(&self.setgroups_path, b"deny")?;
        write_file(&self.uid_map_path, &self.uid_map)?;
        write_file(&self.gid_map_path, &self.gid_map)?;
        loopback_up()
    }

    /// Runs in the child, after [`FreshNamespaces::enter`]: sends descriptors of the new
    /// namespaces over `channel`.
    fn export(&self, channel: &OwnedFd) -> std::io::Result<()> {
        use rustix::fs::{Mode, OFlags, open};
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let user = open(self.user_ns_path.as_c_str(), flags, Mode::empty())?;
        let net = open(self.net_ns_path.as_c_str(), flags, Mode::empty())?;
        send_fds(channel, &[user.as_fd(), net.as_fd()])
    }
}

impl NetworkSetup {
    /// Runs in the child, after it switched to the sandbox's uid.
    fn apply(&self) -> std::io::Result<()> {
        match self {
            NetworkSetup::Proxy {
                fresh,
                port,
                channel,
            } => {
                fresh.enter()?;
                let listener = socket(AddressFamily::INET, SocketType::STREAM, None)?;
                bind(&listener, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, *port))?;
                listen(&listener, 128)?;
                send_fds(channel, &[listener.as_fd()])
            }
            NetworkSetup::Export { fresh, channel } => {
                fresh.enter()?;
                fresh.export(channel)
            }
            NetworkSetup::Join(namespaces) => namespaces.join(),
            NetworkSetup::Connect {
                namespaces,
                port,
                channel,
            } => {
                namespaces.join()?;
                let stream = connect_loopback(*port)?;
                send_fds(channel, &[stream.as_fd()])
            }
        }
    }
}

/// A TCP socket connecting to `127.0.0.1:port` in the caller's network namespace. Non-blocking:
/// a listener with a full backlog must not hold the caller (and the server's request) for the
/// kernel's SYN retries; the server waits for the connection, with its own deadline. Also
/// async-signal-safe (it runs in forked children too): nothing is allocated.
pub(crate) fn connect_loopback(port: u16) -> std::io::Result<OwnedFd> {
    let stream = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        rustix::net::SocketFlags::NONBLOCK | rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    match rustix::net::connect(&stream, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => Ok(stream),
        Err(e) => Err(e.into()),
    }
}

/// Sends `fds` with a one-byte message. Async-signal-safe: the control buffer is on the stack.
fn send_fds(channel: &OwnedFd, fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other(
            "too many descriptors for one message",
        ));
    }
    sendmsg(
        channel,
        &[IoSlice::new(b"F")],
        &mut control,
        SendFlags::empty(),
    )?;
    Ok(())
}

fn write_file(path: &CString, content: &[u8]) -> std::io::Result<()> {
    let fd = rustix::fs::open(
        path.as_c_str(),
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    write(&fd, content)?;
    Ok(())
}

/// Brings the loopback interface of the current network namespace up.
fn loopback_up() -> std::io::Result<()> {
    let socket = socket(AddressFamily::INET, SocketType::DGRAM, None)?;
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

pub(crate) fn install(command: &mut std::process::Command, setup: ChildSetup) {
    let ChildSetup {
        cgroup_procs,
        rlimits,
        inherit,
        network,
        host_uid,
    } = setup;
    let child_setup = move || -> std::io::Result<()> {
        // Descriptors the server inherited from whatever started it (a shell, a supervisor)
        // are not close-on-exec; none of them may reach the sandbox.
        mark_all_close_on_exec()?;
        // Cgroups first: joining needs the host's view, and accounts everything after.
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
        if let Some(uid) = host_uid {
            become_user(uid)?;
        }
        if let Some(network) = &network {
            network.apply()?;
        }
        Ok(())
    };
    // SAFETY: `pre_exec` closures run in the child after fork. This one only performs
    // close_range, write, setrlimit, fcntl, setgroups, setresgid, setresuid, prctl, unshare,
    // setns, open, socket, ioctl, bind, listen, connect and sendmsg on descriptors and buffers allocated before the fork (or on the stack); it
    // allocates nothing, takes no locks and touches no state shared with other threads.
    unsafe {
        command.pre_exec(child_setup);
    }
}

/// Drops every privilege: uid and gid `uid` (real, effective, saved), no supplementary groups.
/// The child stays dumpable so it may still write its own `/proc/self/uid_map` (changing
/// credentials makes a process non-dumpable, which hands its `/proc` files to root).
fn become_user(uid: u32) -> std::io::Result<()> {
    use rustix::process::{Gid, Uid};
    use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};
    // The raw per-thread calls are right here: the forked child has a single thread.
    set_thread_groups(&[])?;
    let gid = Gid::from_raw(uid);
    set_thread_res_gid(gid, gid, gid)?;
    let uid = Uid::from_raw(uid);
    set_thread_res_uid(uid, uid, uid)?;
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable)?;
    Ok(())
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

/// The Landlock ABI version the kernel offers (`None` when Landlock is absent or disabled).
pub(crate) fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset with a null attribute pointer, size 0 and the VERSION
    // flag only returns the ABI version; it reads no memory and creates no descriptor.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (version > 0).then_some(version)
}

/// Takes ownership of descriptor `fd`, which this process inherited across exec (test mode's
/// server channel, passed to `petri-init` by number). Reopening it through `/proc/self/fd`
/// is no alternative: the pipe belongs to the server's uid, not the sandbox's.
pub(crate) fn adopt_inherited(fd: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: F_GETFD only reads the descriptor's flags; it fails with EBADF when `fd` is not
    // open, which is how an invalid number is rejected before anything takes ownership.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is open (checked above) and was inherited for this purpose only: nothing
    // else in this process refers to it, so the OwnedFd is its sole owner.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}
