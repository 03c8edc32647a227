//! Devices: a 32-bit device register reached through a mapped file (the event probe's `ack=`).

use std::io;

/// One 32-bit device register reached through a mapped file (a PCI device's
/// `/sys/bus/pci/devices/*/resourceN`): the event probe writes its `ack=` value there after
/// each UIO interrupt, as a UIO driver's user space acknowledges its device.
pub struct Register {
    base: *mut std::ffi::c_void,
    len: usize,
    offset: usize,
}

// SAFETY: the mapping is owned by this value alone and only written through `write`.
unsafe impl Send for Register {}

impl Register {
    /// Maps the page of `file` holding `offset` (which must be 4-byte aligned and within the file).
    pub fn map(file: &std::fs::File, offset: u64) -> io::Result<Register> {
        use rustix::mm::{MapFlags, ProtFlags};
        let size = file.metadata()?.len();
        if !offset.is_multiple_of(4) || offset.checked_add(4).is_none_or(|end| end > size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("offset {offset:#x} is not a 4-byte register within {size} bytes"),
            ));
        }
        let page = 4096u64;
        let start = offset / page * page;
        let len = (offset - start + 4) as usize;
        // SAFETY: a shared mapping of `len` bytes of the file from a page-aligned offset within it;
        // it is unmapped on drop and reached only through `write`, within its bounds.
        let base = unsafe {
            rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, file, start)?
        };
        Ok(Register { base, len, offset: (offset - start) as usize })
    }

    /// Writes `value` to the register (a volatile 32-bit store).
    #[inline(always)]
    pub fn write(&self, value: u32) {
        // SAFETY: `offset + 4 <= len` (checked in `map`), 4-byte aligned, within the live mapping.
        unsafe { std::ptr::write_volatile(self.base.cast::<u8>().add(self.offset).cast::<u32>(), value) }
    }
}

impl Drop for Register {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping made in `map`, unmapped once.
        let _ = unsafe { rustix::mm::munmap(self.base, self.len) };
    }
}
