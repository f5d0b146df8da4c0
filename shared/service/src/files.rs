//! Files the platform writes that hold what runs hold: readable by their owner only.

use std::path::Path;

/// `dir`, made if absent, readable by its owner only (0700): it holds the database, the token
/// and the sealing key. One an older version made 0755 is tightened.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Creates (or truncates) `path` readable by its owner only (0600): exported runs hold what
/// the run's documents and records hold.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        open.mode(0o600);
        let file = open.open(path)?;
        // An existing file keeps its mode through `open`: tightened here.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    open.open(path)
}
