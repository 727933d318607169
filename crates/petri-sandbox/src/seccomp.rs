//! The syscall filters every sandboxed process runs under (bubblewrap loads them right before
//! it executes the command, after its own setup).
//!
//! The policy is data, reviewed like code: `resources/seccomp/default.json`, one rule per
//! system call, each with the reason it is denied. It is a deny list in the style of Docker's
//! default profile: calls no program needs inside a sandbox and that make up most of the
//! kernel attack surface reachable from an unprivileged user namespace. Denied calls fail with
//! `EPERM`; `clone3` fails with `ENOSYS` so C libraries fall back to `clone`.

use seccompiler::TargetArch;

use crate::SandboxError;

/// The reviewed policy, compiled into the binary.
const POLICY: &str = include_str!("../../../resources/seccomp/default.json");
/// Filters of the policy, in the order they are loaded.
const FILTERS: [&str; 2] = ["deny", "clone3"];

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// The compiled filters, as bubblewrap reads them (raw `struct sock_filter` arrays).
#[derive(Debug, Clone)]
pub(crate) struct SeccompPrograms {
    pub programs: Vec<Vec<u8>>,
}

/// Compiles the policy once, at start-up.
pub(crate) fn programs() -> Result<SeccompPrograms, SandboxError> {
    let mut compiled = seccompiler::compile_from_json(POLICY.as_bytes(), ARCH)
        .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let programs = FILTERS
        .iter()
        .map(|name| {
            let program = compiled.remove(*name).ok_or_else(|| {
                SandboxError::Seccomp(format!("the policy has no {name:?} filter"))
            })?;
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
        })
        .collect::<Result<_, SandboxError>>()?;
    Ok(SeccompPrograms { programs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_compiles_to_whole_instructions() {
        let programs = programs().unwrap();
        assert_eq!(programs.programs.len(), 2);
        for program in &programs.programs {
            assert!(!program.is_empty());
            assert_eq!(program.len() % 8, 0);
        }
    }

    #[test]
    fn every_rule_says_why() {
        let policy: serde_json::Value = serde_json::from_str(POLICY).unwrap();
        for name in FILTERS {
            for rule in policy[name]["filter"].as_array().unwrap() {
                let comment = rule["comment"].as_str().unwrap_or("");
                assert!(!comment.trim().is_empty(), "rule without a reason: {rule}");
            }
        }
    }
}
