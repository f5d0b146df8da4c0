//! What the commands print on stdout, and how. Every line goes through `outln!`: a reader that
//! stops early (`longrun list | head -1`, `| true`) ends the command quietly with exit 0, as
//! SIGPIPE ends a C tool (Rust ignores SIGPIPE, and `println!` would panic with exit 101).
//! Colour only for a person at a terminal: never in a pipe or a file, nor with `NO_COLOR` set.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

/// Writes to stdout and flushes, so a closed pipe is found at the write that meets it.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        gone(&e);
    }
}

/// `write` for bytes (an exported document).
pub fn bytes(b: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(b).and_then(|()| out.flush()) {
        gone(&e);
    }
}

/// Ends the process for a stdout that cannot be written: quietly for a reader that left.
fn gone(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: writing to stdout: {e}");
    std::process::exit(i32::from(longrun::exit::ERROR))
}

macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Whether stdout gets colour: a terminal, and `NO_COLOR` unset or empty (<https://no-color.org>).
fn colour() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    })
}

/// A run status as text, padded to `width`, coloured by how it reads on a terminal: green
/// completed, red failed, yellow stopped or canceled, magenta waiting on someone.
pub fn status(s: &str, width: usize) -> String {
    let padded = format!("{s:<width$}");
    let code = match s {
        "completed" => "32",
        "failed" => "31",
        "stopped" | "canceled" => "33",
        "waiting_on_user" | "waiting_on_children" => "35",
        "running" => "36",
        _ => return padded,
    };
    if colour() {
        format!("\x1b[{code}m{s}\x1b[0m{}", &padded[s.len()..])
    } else {
        padded
    }
}
