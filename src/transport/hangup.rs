//! Noticing that the reader of our stdout went away while we have nothing to write: a pipe whose
//! read end is closed reports an error (`POLLERR`) to `poll(2)` on its write end, whatever
//! events were asked for. Without this, a host that closes stdout while a tool runs silently
//! (no progress frames) would only be noticed at the next frame, maybe minutes later.

use tokio_util::sync::CancellationToken;

/// A token cancelled when stdout (a pipe, a socket or a terminal) reports an error or a hang-up:
/// the host is gone. A pipe or a socket is watched by a task in the runtime's own `epoll`
/// ([`super::stdio::stdout_hangup`]); anything else by a detached thread parked in `poll(2)`
/// (for a file, which never reports one, the token stays uncancelled). Must be called inside a
/// tokio runtime.
pub fn watch_stdout_hangup() -> CancellationToken {
    let gone = CancellationToken::new();
    let token = gone.clone();
    if let Some(hangup) = super::stdio::stdout_hangup() {
        tokio::spawn(async move {
            hangup.await;
            token.cancel();
        });
        return gone;
    }
    let spawned = std::thread::Builder::new().name("stdout-hangup".into()).spawn(move || {
        let mut fd = libc::pollfd { fd: libc::STDOUT_FILENO, events: 0, revents: 0 };
        loop {
            // SAFETY: one valid pollfd for the duration of the call.
            let n = unsafe { libc::poll(&mut fd, 1, -1) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // POLLNVAL (stdout was never open) or an error of poll itself: nothing to watch.
            if n < 0 || fd.revents & libc::POLLNVAL != 0 {
                return;
            }
            if fd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                token.cancel();
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::debug!("cannot watch stdout for a hang-up ({e}); a failed write still notices it");
    }
    gone
}
