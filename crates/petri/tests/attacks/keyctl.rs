//! Kernel keyrings: `keyctl`, `add_key` and `request_key` (shared kernel state and a history
//! of kernel bugs). Contained by the seccomp filter: EPERM.

use crate::helpers::*;
use crate::{SYSCALL_PRELUDE, assert_unaffected, bystander, python};

const KEYCTL: &str = r#"
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, -3
call("keyctl", 250, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
ptr = lambda s: ctypes.cast(ctypes.c_char_p(s), ctypes.c_void_p).value
call("add_key", 248, ptr(b"user"), ptr(b"petri"), ptr(b"secret"), 6, KEY_SPEC_SESSION_KEYRING)
call("request_key", 249, ptr(b"user"), ptr(b"petri"), 0, KEY_SPEC_SESSION_KEYRING)
"#;

#[tokio::test]
async fn keyctl_is_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{SYSCALL_PRELUDE}{KEYCTL}")).await;
    assert_eq!(
        output,
        "keyctl -1 EPERM\nadd_key -1 EPERM\nrequest_key -1 EPERM\n"
    );
    assert_unaffected(&server, &other).await;
}
