//! `agentwire login`: a provider's API key stored in the config dir.

use std::process::ExitCode;

use super::fail;

/// `agentwire login`: asks for (or reads) the provider and the key, stores them.
pub(super) fn run(config_dir: Option<&std::path::Path>, provider: Option<String>) -> ExitCode {
    use std::io::{BufRead, IsTerminal, Write};
    let Some(dir) = crate::providers::config::config_dir(config_dir) else { return fail("no config dir: set --config-dir, AGENTWIRE_CONFIG_DIR or HOME") };
    let interactive = std::io::stdin().is_terminal();
    let mut input = std::io::stdin().lock();
    let mut read_line = |prompt: &str, echo: bool| -> std::io::Result<String> {
        if interactive {
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
        }
        let _quiet = (interactive && !echo).then(EchoOff::new).flatten();
        let mut line = String::new();
        input.read_line(&mut line)?;
        if interactive && !echo {
            eprintln!();
        }
        Ok(line.trim().to_owned())
    };
    let provider = match provider {
        Some(p) => p,
        None if interactive => match read_line("Provider (openai, anthropic, google, openrouter, or one from models.json) [openai]: ", true) {
            Ok(p) if p.is_empty() => "openai".to_owned(),
            Ok(p) => p,
            Err(e) => return fail(&format!("reading the provider: {e}")),
        },
        None => "openai".to_owned(),
    };
    let key = match read_line(&format!("API key for {provider}: "), false) {
        Ok(k) if k.is_empty() => return fail("no key given; nothing stored"),
        Ok(k) => k,
        Err(e) => return fail(&format!("reading the key: {e}")),
    };
    match crate::providers::keys::store(&dir, &provider, &key) {
        Ok(path) => {
            eprintln!("Stored the {provider} key in {} (mode 0600).", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// Terminal echo turned off while a key is typed; restored on drop.
struct EchoOff {
    saved: libc::termios,
}

impl EchoOff {
    fn new() -> Option<Self> {
        // SAFETY: tcgetattr/tcsetattr on stdin with a termios we own; failure leaves echo on.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 {
                return None;
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            (libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) == 0).then_some(Self { saved })
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `new`.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}
