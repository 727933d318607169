//! eBPF: `bpf(BPF_MAP_CREATE)` and `bpf(BPF_PROG_LOAD)` with real attribute blocks, and
//! `perf_event_open`. Contained by the seccomp filter: EPERM, whatever the arguments.

use crate::helpers::*;
use crate::{SYSCALL_PRELUDE, assert_unaffected, bystander, python};

const BPF: &str = r#"
import struct
# BPF_MAP_CREATE: an array map of 4-byte keys and values, one entry.
attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1), 128)
call("bpf_map_create", 321, 0, ctypes.addressof(attr), 128)
# BPF_PROG_LOAD: a socket filter "r0 = 0; exit".
insns = ctypes.create_string_buffer(struct.pack("<BBhiBBhi", 0xb7, 0, 0, 0, 0x95, 0, 0, 0), 16)
license = ctypes.create_string_buffer(b"GPL")
attr = ctypes.create_string_buffer(struct.pack("IIQQ", 1, 2, ctypes.addressof(insns), ctypes.addressof(license)), 128)
call("bpf_prog_load", 321, 5, ctypes.addressof(attr), 128)
perf = ctypes.create_string_buffer(struct.pack("II", 1, 128), 128)
call("perf_event_open", 298, ctypes.addressof(perf), 0, -1, -1, 0)
"#;

#[tokio::test]
async fn bpf_is_denied() {
    let server = TestServer::start().await;
    let other = bystander(&server).await;
    let id = server.sandbox().await;
    let output = python(&server, &id, &format!("{SYSCALL_PRELUDE}{BPF}")).await;
    assert_eq!(
        output,
        "bpf_map_create -1 EPERM\nbpf_prog_load -1 EPERM\nperf_event_open -1 EPERM\n"
    );
    assert_unaffected(&server, &other).await;
}
