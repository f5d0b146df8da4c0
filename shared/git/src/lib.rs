//! The `Git` port's adapters (ARCHITECTURE.md, "Repository runs"): `CliGit` drives the `git` binary (no libgit2: the
//! binary is what users' repositories, hooks and credentials are set up for), `InMemoryGit`
//! keeps branches, commits and worktrees in memory for the simulator and fast tests. Both pass
//! the one conformance suite in `tests/conformance.rs`. Depends on ports and domain only.

mod cli;
pub mod memory;
mod process;

pub use cli::CliGit;
pub use memory::InMemoryGit;
pub use process::CHECK_TAIL_BYTES;
