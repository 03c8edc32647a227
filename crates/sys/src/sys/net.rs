//! Sockets: the integer socket options the UDP probe sets (`SO_BUSY_POLL`, `SO_PRIORITY`).

use super::check;
use std::io;

/// Sets an integer socket option at level SOL_SOCKET (`SO_BUSY_POLL`, `SO_PRIORITY`). Raw:
/// rustix's `sockopt` has a typed setter per option, and none for these two.
fn socket_option(fd: &impl std::os::fd::AsRawFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a valid int for the call, its size given.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

/// `SO_BUSY_POLL`: the socket's receive busy-polls the device queue for up to `us` µs.
pub fn set_busy_poll(fd: &impl std::os::fd::AsRawFd, us: u32) -> io::Result<()> {
    socket_option(fd, libc::SO_BUSY_POLL, us.min(i32::MAX as u32) as libc::c_int)
}

/// `SO_PRIORITY`: the priority of the socket's packets (queueing discipline, VLAN PCP).
pub fn set_socket_priority(fd: &impl std::os::fd::AsRawFd, priority: u32) -> io::Result<()> {
    socket_option(fd, libc::SO_PRIORITY, priority.min(i32::MAX as u32) as libc::c_int)
}
