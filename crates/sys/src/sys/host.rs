//! The machine rtgauge runs on, as the system tells it: the architecture (`uname`), the C library,
//! the hypervisor's signature (CPUID), and unpredictable bytes from the kernel's random pool.

use std::io;

/// The machine (architecture) field of `uname(2)`, e.g. `x86_64` or `aarch64` (the call cannot
/// fail: its only error is a bad buffer address).
pub fn uname_machine() -> String {
    rustix::system::uname().machine().to_string_lossy().into_owned()
}

/// The C library rtgauge was built with and runs on: `("glibc", "2.36")`, or `("musl", "")`
/// (musl has no call that tells its version).
pub fn c_library() -> (&'static str, String) {
    #[cfg(target_env = "gnu")]
    {
        // Raw: the C library's own function (no system call behind it).
        // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        ("glibc", v.to_string_lossy().into_owned())
    }
    #[cfg(target_env = "musl")]
    {
        ("musl", String::new())
    }
    #[cfg(not(any(target_env = "gnu", target_env = "musl")))]
    {
        ("unknown", String::new())
    }
}

/// The hypervisor's signature from CPUID leaf 0x40000000 (`KVMKVMKVM`, `VMwareVMware`,
/// `Microsoft Hv`, `TCGTCGTCGTCG`, ...), when the CPU says it runs under one (x86 only).
pub fn hypervisor_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 ECX bit 31 says whether leaf
        // 0x40000000 is the hypervisor's.
        #[allow(unused_unsafe)]
        let (leaf1, leaf) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx].iter().flat_map(|r| r.to_le_bytes()).collect();
        let s = String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string();
        Some(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Eight unpredictable bytes from the kernel's random pool (`getrandom(2)`), for names in shared
/// namespaces (message queues, trace instances) that another user must not be able to take first.
pub fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    let mut got = 0;
    while got < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[got..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(u64::from_le_bytes(bytes))
}
