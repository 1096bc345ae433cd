//! What this kernel's Landlock can do, probed from Rust for `reprolab env` and the one-time
//! warning. The restriction itself is entered by the Python processes that run user code
//! (python/reprolab/sandbox.py): it must happen after `unshare` has written the namespace's
//! uid map (a write a file-system restriction would forbid) and before any thread exists.

/// `landlock_create_ruleset` with this flag returns the ABI version instead of a ruleset.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// LANDLOCK_ACCESS_FS_WRITE_FILE.
const FS_WRITE_FILE: u64 = 1 << 1;
/// LANDLOCK_ACCESS_FS_RESOLVE_UNIX (connecting to path-named Unix sockets; kernels from 2026).
const FS_RESOLVE_UNIX: u64 = 1 << 16;

/// The kernel's Landlock ABI version; 0 when Landlock is not built in or not enabled.
pub fn abi() -> u32 {
    // SAFETY: a null attribute with size 0 and the version flag only queries the kernel.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

/// Whether Landlock can restrict connecting to path-named Unix sockets: the kernel rejects a
/// ruleset that handles a right it does not know.
pub fn restricts_unix_sockets() -> bool {
    #[repr(C)]
    struct Attr {
        handled_access_fs: u64,
    }
    let attr = Attr {
        handled_access_fs: FS_WRITE_FILE | FS_RESOLVE_UNIX,
    };
    // SAFETY: `attr` outlives the call and its size is passed; a returned fd is closed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const Attr,
            std::mem::size_of::<Attr>(),
            0 as libc::c_uint,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` is a descriptor this function owns.
    unsafe { libc::close(fd as libc::c_int) };
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn probing_never_fails() {
        // Whatever the kernel: the ABI is a number and RESOLVE_UNIX implies Landlock.
        let abi = super::abi();
        assert!(abi < 1000);
        if super::restricts_unix_sockets() {
            assert!(abi >= 1);
        }
    }
}
