//! Links the system libsrt through pkg-config: the same library GStreamer's SRT plugin links
//! (on Debian `libsrt-gnutls`), so one process never maps two copies of libsrt.

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Err(e) = pkg_config::Config::new().atleast_version("1.4.2").probe("srt") {
        panic!(
            "libsrt not found through pkg-config ({e}); install libsrt-gnutls-dev (Debian, Raspberry Pi OS) \
             or run scripts/setup-deps"
        );
    }
}
