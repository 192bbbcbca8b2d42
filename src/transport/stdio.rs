//! The process's stdin and stdout on the runtime's own thread.
//!
//! tokio's `Stdin` and `Stdout` do every read and write on a thread of the blocking pool, one
//! hop per call, because a plain `read(2)`/`write(2)` on a pipe can block. When stdin or stdout
//! is a pipe or a socket (how a host spawns an agent), they are read and written here with
//! `preadv2`/`pwritev2` and `RWF_NOWAIT` instead: a call that would block fails with `EAGAIN`
//! (a write into a nearly full pipe writes what fits). stdin then waits for readiness in the
//! runtime's own `epoll` ([`AsyncFd`]); stdout, the first time it is full (a burst the host reads
//! slower than we write), hands the rest of the session's writing to a thread, so that encoding
//! and writing run on two cores side by side ([`super::writer::spawn_piped_writer`]). The file
//! status flags are left alone: `O_NONBLOCK` would be set on the open file description, which
//! the host (or a shell pipeline) may share, and would outlive this process.
//!
//! What this buys (docs/performance.md, "Start-up"): spawn →
//! first answer no longer waits for three threads to be created (the stdin reader, the stdout
//! writer, the hang-up watcher), and frames are read without a hand-off between threads.
//!
//! Anything else — a regular file, a terminal, `/dev/null`, a kernel without `RWF_NOWAIT` for
//! pipes (before Linux 5.7 or so) — is served as before, through tokio's blocking pool or a
//! thread: [`Stdin`] falls back to tokio's `Stdin` (also after an `EOPNOTSUPP` on its first
//! read, which consumes nothing), and stdout's writer moves to its thread on `EOPNOTSUPP` as it
//! does on `EAGAIN`.
//!
//! Each handle reads or writes a duplicate of the descriptor (close-on-exec); descriptors 0 and
//! 1 themselves stay open and untouched.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, Interest, ReadBuf};

/// Whether `fd` is a pipe (FIFO) or a socket: the kinds `epoll` takes and `RWF_NOWAIT` serves.
fn is_pipe_or_socket(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: `fstat` writes one `struct stat` into `st`; `fd` is open for the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK)
}

/// A close-on-exec duplicate of `fd`, when `fd` is a pipe or a socket.
fn piped(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    is_pipe_or_socket(fd).then(|| fd.try_clone_to_owned().ok()).flatten()
}

/// [`piped`]'s duplicate registered with the runtime for `interest`, when the runtime's `epoll`
/// takes it.
fn register(fd: BorrowedFd<'_>, interest: Interest) -> Option<AsyncFd<OwnedFd>> {
    let owned = piped(fd)?;
    // SAFETY: an `OwnedFd` is an open descriptor that stays open, the same one, until the
    // `AsyncFd` that owns it drops it.
    unsafe { AsyncFd::register_with_interest(owned, interest) }.ok()
}

/// Whether `e` says the descriptor does not take `RWF_NOWAIT` (nothing was read or written).
pub(super) fn nowait_unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// One `preadv2(fd, buf, -1, RWF_NOWAIT)`: reads what is there, `WouldBlock` when nothing is.
#[cfg(target_os = "linux")]
fn read_nowait(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: one iovec over `buf`, valid and writable for the call; offset -1 reads at the
    // current position, the only one a pipe or socket has.
    counted(|| unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) })
}

/// One `pwritev2(fd, buf, -1, RWF_NOWAIT)`: writes what fits, `WouldBlock` when nothing does.
#[cfg(target_os = "linux")]
pub(super) fn write_nowait(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    let iov = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
    // SAFETY: one iovec over `buf`, valid for the call (only read by the kernel).
    counted(|| unsafe { libc::pwritev2(fd.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) })
}

/// `RWF_NOWAIT` is Linux's: elsewhere the first call says so (`EOPNOTSUPP`, nothing read), and
/// stdin and stdout go to their blocking paths as on an old kernel.
#[cfg(not(target_os = "linux"))]
fn read_nowait(_fd: BorrowedFd<'_>, _buf: &mut [u8]) -> io::Result<usize> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// See [`read_nowait`]: nothing is written.
#[cfg(not(target_os = "linux"))]
pub(super) fn write_nowait(_fd: BorrowedFd<'_>, _buf: &[u8]) -> io::Result<usize> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// The byte count of a read or write system call, made again when a signal interrupted it
/// (`RWF_NOWAIT` calls do not sleep, but the rule costs nothing).
#[cfg(target_os = "linux")]
fn counted(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        if let Ok(n) = usize::try_from(call()) {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The process's stdin as an [`AsyncRead`]: on the runtime's thread for a pipe or a socket,
/// through tokio's blocking pool for anything else.
#[derive(Debug)]
pub enum Stdin {
    /// A pipe or socket, read with `RWF_NOWAIT` when the runtime says it is readable.
    Ready(AsyncFd<OwnedFd>),
    /// tokio's `Stdin` (a file, a terminal, or a kernel without `RWF_NOWAIT` for this kind).
    Blocking(tokio::io::Stdin),
}

/// The process's stdin, read on the runtime's thread where it can be (the module's text).
/// Must be called inside a tokio runtime.
pub fn stdin() -> Stdin {
    match register(io::stdin().as_fd(), Interest::READABLE) {
        Some(fd) => Stdin::Ready(fd),
        None => Stdin::Blocking(tokio::io::stdin()),
    }
}

impl AsyncRead for Stdin {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let fd = match &mut *self {
                Stdin::Blocking(inner) => return Pin::new(inner).poll_read(cx, buf),
                Stdin::Ready(fd) => fd,
            };
            let mut guard = ready!(fd.poll_read_ready(cx))?;
            match guard.try_io(|fd| read_nowait(fd.as_fd(), buf.initialize_unfilled())) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if nowait_unsupported(&e) => {
                    tracing::debug!("stdin does not take RWF_NOWAIT; reading it on the blocking pool");
                    *self = Stdin::Blocking(tokio::io::stdin());
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Nothing to read after all: the readiness is cleared, wait for the next.
                Err(_would_block) => {}
            }
        }
    }
}

/// Waits until stdout, a pipe or a socket, reports an error or a hang-up (its reader is gone),
/// in the runtime's own `epoll`; `None` right away when stdout is anything else (a file or a
/// terminal) or cannot be watched. Must be called inside a tokio runtime; the returned future
/// needs no thread of its own.
pub fn stdout_hangup() -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
    register(io::stdout().as_fd(), Interest::READABLE | Interest::ERROR).map(hangup)
}

/// Resolves when `fd` (registered for reading and errors) reports an error or a hang-up. A
/// pipe's write end reports EPOLLERR once its read end is closed and a socket EPOLLHUP once its
/// peer is (tokio counts a hang-up as "read closed"); data readable on a socket shared with
/// stdin wakes it too, and `poll` tells which it was.
async fn hangup(fd: AsyncFd<OwnedFd>) {
    let interest = Interest::READABLE | Interest::ERROR;
    loop {
        let Ok(mut guard) = fd.ready(interest).await else { return std::future::pending().await };
        let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: 0, revents: 0 };
        // SAFETY: one valid pollfd for the call; a zero timeout never sleeps.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        if n > 0 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return;
        }
        guard.clear_ready();
    }
}

/// The single writer of stdout ([`super::writer`]). A pipe or a socket is written on the
/// runtime's thread until it is first full, then from a thread
/// ([`super::writer::spawn_piped_writer`]); anything else from a thread that owns a duplicate
/// of file descriptor 1 and writes queued frames with plain `write(2)`s (tokio's `Stdout` would
/// copy each write once more and hop to its blocking pool per write); tokio's `Stdout` only if
/// fd 1 cannot be duplicated. Must be called inside a tokio runtime.
pub fn spawn_stdout_writer(budget_bytes: usize) -> (super::Outbox, tokio::task::JoinHandle<io::Result<u64>>) {
    if let Some(fd) = piped(io::stdout().as_fd()) {
        return super::writer::spawn_piped_writer(fd, budget_bytes);
    }
    match super::stdout_sink() {
        Ok(file) => super::spawn_blocking_writer(file, budget_bytes),
        Err(e) => {
            tracing::debug!("stdout cannot be duplicated ({e}); writing through tokio's stdout");
            super::spawn_writer(tokio::io::stdout(), budget_bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `pipe2` writes two descriptors into `fds`, which we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        use std::os::fd::FromRawFd;
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// The kernel this runs on serves `RWF_NOWAIT` on pipes as the module relies on: `EAGAIN`
    /// on an empty pipe, a short write into a full one, and 0 at the end; the descriptor's
    /// status flags stay blocking.
    #[cfg(target_os = "linux")]
    #[test]
    fn nowait_reads_and_writes_never_block_a_pipe() {
        let (r, w) = pipe();
        let mut buf = [0u8; 8];
        assert_eq!(read_nowait(r.as_fd(), &mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        let big = vec![b'x'; 1 << 20];
        let n = write_nowait(w.as_fd(), &big).unwrap();
        assert!(n > 0 && n < big.len(), "a 1 MiB write into an empty pipe is short: {n}");
        assert_eq!(write_nowait(w.as_fd(), &big).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        // SAFETY: reading the flags of an open descriptor.
        assert_eq!(unsafe { libc::fcntl(r.as_raw_fd(), libc::F_GETFL) } & libc::O_NONBLOCK, 0);
        drop(w);
        let mut total = 0;
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            match read_nowait(r.as_fd(), &mut chunk).unwrap() {
                0 => break,
                k => total += k,
            }
        }
        assert_eq!(total, n);
    }

    /// A regular file is not served on the runtime (epoll refuses it); it goes to the fallback.
    #[test]
    fn a_regular_file_is_not_registered() {
        let file = tempfile::tempfile().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { assert!(register(file.as_fd(), Interest::READABLE).is_none()) });
    }

    /// The hang-up watch fires when the pipe's reader goes away, and not before.
    #[test]
    fn a_closed_reader_is_a_hang_up() {
        let (r, w) = pipe();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let watch = hangup(register(w.as_fd(), Interest::READABLE | Interest::ERROR).expect("a pipe registers"));
            tokio::pin!(watch);
            let early = tokio::time::timeout(std::time::Duration::from_millis(50), watch.as_mut()).await;
            assert!(early.is_err(), "a pipe with its reader still open reports nothing");
            drop(r);
            let late = tokio::time::timeout(std::time::Duration::from_secs(5), watch).await;
            assert!(late.is_ok(), "the closed reader is reported");
        });
    }
}
