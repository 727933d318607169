//! The syscall filter every sandboxed process runs under (bubblewrap loads it right before it
//! executes the command, after its own setup).
//!
//! A deny list in the style of Docker's default profile: system calls that no program needs
//! inside a sandbox and that make up most of the kernel attack surface reachable from an
//! unprivileged user namespace. Denied calls fail with `EPERM`, so programs see an ordinary
//! permission error; `clone3` fails with `ENOSYS` so C libraries fall back to `clone`, whose
//! namespace flags need capabilities the sandbox does not have.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

use crate::SandboxError;

/// Denied system calls, grouped by why.
const DENIED: &[(&str, &[i64])] = &[
    // Mounting and namespaces: the sandbox's view of the world is fixed by the server.
    (
        "filesystem and namespace changes",
        &[
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_mount_setattr,
            libc::SYS_chroot,
        ],
    ),
    // Inspecting or steering other processes, and the kernel's own tracing machinery.
    (
        "process inspection and kernel tracing",
        &[
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_perf_event_open,
            libc::SYS_bpf,
            libc::SYS_userfaultfd,
            libc::SYS_kcmp,
        ],
    ),
    // Large, frequently exploited interfaces no sandboxed program needs.
    (
        "io_uring and kernel keyrings",
        &[
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
        ],
    ),
    // Whole-machine operations.
    (
        "host administration",
        &[
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_reboot,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_acct,
            libc::SYS_syslog,
            libc::SYS_quotactl,
            libc::SYS_vhangup,
            libc::SYS_settimeofday,
            libc::SYS_clock_settime,
            libc::SYS_clock_adjtime,
            libc::SYS_adjtimex,
            libc::SYS_open_by_handle_at,
            libc::SYS_name_to_handle_at,
            libc::SYS_iopl,
            libc::SYS_ioperm,
        ],
    ),
];

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// The compiled filters, as bubblewrap reads them (raw `struct sock_filter` arrays).
#[derive(Debug, Clone)]
pub(crate) struct SeccompPrograms {
    pub programs: Vec<Vec<u8>>,
}

fn compile(syscalls: &[i64], action: SeccompAction) -> Result<Vec<u8>, SandboxError> {
    let rules = syscalls
        .iter()
        .map(|nr| (*nr, Vec::new()))
        .collect::<BTreeMap<_, _>>();
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, ARCH)
        .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string()))?;
    Ok(program
        .iter()
        .flat_map(|f| {
            let mut bytes = Vec::with_capacity(8);
            bytes.extend_from_slice(&f.code.to_ne_bytes());
            bytes.push(f.jt);
            bytes.push(f.jf);
            bytes.extend_from_slice(&f.k.to_ne_bytes());
            bytes
        })
        .collect())
}

/// Builds the filters once, at start-up.
pub(crate) fn programs() -> Result<SeccompPrograms, SandboxError> {
    let denied: Vec<i64> = DENIED
        .iter()
        .flat_map(|(_, calls)| calls.iter().copied())
        .collect();
    Ok(SeccompPrograms {
        programs: vec![
            compile(&denied, SeccompAction::Errno(libc::EPERM as u32))?,
            compile(
                &[libc::SYS_clone3],
                SeccompAction::Errno(libc::ENOSYS as u32),
            )?,
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_to_whole_instructions() {
        let programs = programs().unwrap();
        assert_eq!(programs.programs.len(), 2);
        for program in &programs.programs {
            assert!(!program.is_empty());
            assert_eq!(program.len() % 8, 0);
        }
    }
}
