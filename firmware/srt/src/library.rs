//! Which libsrt runs, in words for the log: its own version, and the distribution's package
//! where one can be read. Debian patches security fixes into an unchanged upstream version
//! (its libsrt reports 1.5.1; the fixes of CVE-2026-55869 and CVE-2026-55868 are in the package
//! revision 1.5.1-1+deb12u2), so the package's version is what says whether they are in.

/// The packages of libsrt a Debian system may carry.
const PACKAGES: [&str; 2] = ["libsrt1.5-gnutls", "libsrt1.5-openssl"];

/// The installed version of the first libsrt package `status` (dpkg's status file) lists.
pub fn package_version(status: &str) -> Option<(String, String)> {
    status.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')).map(str::trim))
        };
        let package = field("Package")?;
        let installed = field("Status").is_some_and(|s| s.ends_with(" installed"));
        let version = field("Version")?;
        (installed && PACKAGES.contains(&package)).then(|| (package.to_string(), version.to_string()))
    })
}

/// libsrt in words: `libsrt 1.5.1 (package libsrt1.5-gnutls 1.5.1-1+deb12u2)`, or without the
/// package where dpkg has none (a Yocto image says its version in its build manifest).
pub fn describe() -> String {
    let (major, minor, patch) = crate::ffi::library_version();
    let package = std::fs::read_to_string("/var/lib/dpkg/status").ok().and_then(|s| package_version(&s));
    match package {
        Some((name, version)) => format!("libsrt {major}.{minor}.{patch} (package {name} {version})"),
        None => format!("libsrt {major}.{minor}.{patch}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_version_is_read_from_dpkg_status() {
        let status = "Package: libsrt1.5-gnutls\nStatus: deinstall ok config-files\nVersion: 1.5.1-1\n\n\
                      Package: libsrtp2-1\nStatus: install ok installed\nVersion: 2.5.0-3\n\n\
                      Package: libsrt1.5-gnutls\nStatus: install ok installed\nPriority: optional\nVersion: 1.5.1-1+deb12u2\n";
        assert_eq!(package_version(status), Some(("libsrt1.5-gnutls".into(), "1.5.1-1+deb12u2".into())));
        assert_eq!(package_version("Package: libsrtp2-1\nStatus: install ok installed\nVersion: 2.5.0-3\n"), None);
        assert_eq!(package_version(""), None);
        assert!(describe().starts_with("libsrt 1.5."), "{}", describe());
    }
}
