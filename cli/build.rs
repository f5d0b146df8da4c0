//! Embeds the web console's build output (`web/dist`, made by `make web`) into the binary.
//! Without it the binary still builds, and `/` explains how to add the console.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

fn main() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let dist = web.join("dist");
    // Watching web/ while dist/ is absent notices when a build creates it.
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
