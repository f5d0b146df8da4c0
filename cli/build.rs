//! Embeds the web console's build output (`web/dist`) into the binary. When `web/dist` is
//! missing or older than the console's sources, and npm is on PATH, it is built first
//! (`npm ci`, then `npm run build` in `web/`: what `make web` does), so `cargo build` and
//! `cargo install --path cli` give a binary with the console. Without npm (or with
//! `LONGRUN_BUILD_CONSOLE=0`) the binary still builds, the build warns how to add the console,
//! and `/` explains it too.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The console's sources: what a change of makes `web/dist` stale.
const SOURCES: [&str; 6] = [
    "src",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
];

fn newest(paths: &[PathBuf]) -> Option<SystemTime> {
    let mut found = vec![];
    for p in paths {
        if p.is_dir() {
            files(p, &mut found);
        } else {
            found.push(p.clone());
        }
    }
    found
        .iter()
        .filter_map(|f| f.metadata().and_then(|m| m.modified()).ok())
        .max()
}

fn warn(message: &str) {
    for line in message.lines() {
        println!("cargo:warning={line}");
    }
}

/// Runs `npm args…` in `web`; the tail of its output when it fails.
fn npm(web: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("npm")
        .args(args)
        .current_dir(web)
        .output()
        .map_err(|e| format!("npm {}: {e}", args.join(" ")))?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "`npm {}` failed:\n{}",
        args.join(" "),
        tail.join("\n")
    ))
}

/// Builds `web/dist` when it is missing or stale and npm is available; says why not otherwise.
fn build_console(web: &Path, dist: &Path) {
    let sources: Vec<PathBuf> = SOURCES.iter().map(|s| web.join(s)).collect();
    let index = dist.join("index.html");
    let built = index.metadata().and_then(|m| m.modified()).ok();
    let stale = match (built, newest(&sources)) {
        (None, _) => true,
        (Some(b), Some(s)) => s > b,
        (Some(_), None) => false,
    };
    if !stale || !web.join("package.json").is_file() {
        return;
    }
    let how = "install Node 20+ (npm) and build again, or run `make web` (scripts/web build) \
               and build again";
    if std::env::var("LONGRUN_BUILD_CONSOLE").as_deref() == Ok("0") {
        if built.is_none() {
            warn(&format!(
                "building without the web console (LONGRUN_BUILD_CONSOLE=0); to add it, {how}"
            ));
        }
        return;
    }
    if Command::new("npm").arg("--version").output().is_err() {
        let state = if built.is_none() {
            "the web console is NOT in this build: npm was not found"
        } else {
            "the embedded web console is older than web/: npm was not found to rebuild it"
        };
        warn(&format!("{state}; {how}"));
        return;
    }
    let lock = web.join("node_modules/.package-lock.json");
    let fresh_deps = match (
        lock.metadata().and_then(|m| m.modified()),
        web.join("package-lock.json")
            .metadata()
            .and_then(|m| m.modified()),
    ) {
        (Ok(installed), Ok(wanted)) => installed >= wanted,
        _ => false,
    };
    let result = if fresh_deps {
        Ok(())
    } else {
        npm(web, &["ci", "--no-audit", "--no-fund"])
    }
    .and_then(|()| npm(web, &["run", "build"]));
    if let Err(e) = result {
        warn(&format!(
            "the web console could not be built, so this build has {}:\n{e}",
            if built.is_none() {
                "no console"
            } else {
                "an older one"
            }
        ));
    }
}

fn main() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let dist = web.join("dist");
    println!("cargo:rerun-if-env-changed=LONGRUN_BUILD_CONSOLE");
    build_console(&web, &dist);
    // A change of the sources rebuilds the console; a new web/dist (`make web`) is embedded.
    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", web.join(s).display());
    }
    // (A path that does not exist would rerun this on every build: watch web/ until it does.)
    let watched = if dist.is_dir() { &dist } else { &web };
    println!("cargo:rerun-if-changed={}", watched.display());

    let mut found = vec![];
    files(&dist, &mut found);
    found.sort();
    let mut code = String::from("pub static ASSETS: &[longrun_http::console::Asset] = &[\n");
    for f in &found {
        let Ok(rel) = f.strip_prefix(&dist) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            f.display().to_string()
        );
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("console_assets.rs");
    if let Err(e) = std::fs::write(&out, code) {
        panic!("writing {}: {e}", out.display());
    }
}
