//! Landlock, the second wall: inside the sandbox, after bubblewrap has built its mounts, the
//! command's first process restricts itself (and so everything it starts) to reading and
//! executing anywhere it can see, and writing only below the writable directories. Should a
//! mount ever expose more than intended, writes there still fail.
//!
//! bubblewrap's own mount work cannot run under Landlock (it forbids mounting), so the
//! restriction is applied by a tiny init, the `petri-init` binary, that bubblewrap starts
//! instead of the command and that execs the command once confined.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};

/// Where the init is mounted inside every sandbox.
pub const INIT_IN_SANDBOX: &str = "/opt/petri/bin/petri-init";
/// Directories sandboxed code may write below.
pub const WRITABLE: &[&str] = &["/sandbox", "/tmp", "/dev/shm"];
/// Where only writing to existing files is allowed (`/dev/null`, `/proc/self/...`).
const WRITE_EXISTING: &[&str] = &["/dev", "/proc"];
/// Newest ABI this code knows; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V5;

/// Restricts the calling process as described above, with `writable` as the writable
/// directories. Fails unless the kernel enforces the restriction.
pub fn confine(writable: &[PathBuf]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot apply Landlock: {e}");
    let all = AccessFs::from_all(TARGET_ABI);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET_ABI)))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(WRITE_EXISTING, AccessFs::WriteFile))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(writable, all))
        .map_err(|e| fail(&e))?
        .restrict_self()
        .map_err(|e| fail(&e))?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err("Landlock is not enforced by this kernel".into()),
        _ => Ok(()),
    }
}

/// The init's whole job: confine, then become `program`. Returns only on failure.
pub fn confine_and_exec(writable: &[PathBuf], program: &Path, args: &[OsString]) -> String {
    if let Err(e) = confine(writable) {
        return e;
    }
    let error = std::process::Command::new(program).args(args).exec();
    format!("cannot run {}: {error}", program.display())
}
