# shellcheck shell=bash
# Environment for cross-building the firmware for aarch64 (Raspberry Pi 3/4/5, CM4, Zero 2 W)
# on a Debian machine with arm64 multiarch. Source it: `. scripts/cross-env.sh`.
#
# Debian's libgstreamer-plugins-{base,bad}1.0-dev cannot be installed for amd64 and arm64 at
# once, so the host keeps the -dev packages and the arm64 side gets only the runtime libraries;
# this writes the pkg-config files and link names (gstreamer-app, -video, -sdp, -webrtc) the
# build needs into target/cross-sysroot.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sysroot="$root/target/cross-sysroot"
multiarch=/usr/lib/aarch64-linux-gnu
mkdir -p "$sysroot/pkgconfig" "$sysroot/lib"
version=$(sed -n 's/^Version: *//p' "$multiarch/pkgconfig/gstreamer-1.0.pc")
for lib in app video sdp webrtc; do
  ln -sf "$multiarch/libgst$lib-1.0.so.0" "$sysroot/lib/libgst$lib-1.0.so"
  requires="gstreamer-1.0 gstreamer-base-1.0"
  [ "$lib" = webrtc ] && requires="$requires gstreamer-sdp-1.0"
  cat > "$sysroot/pkgconfig/gstreamer-$lib-1.0.pc" <<PC
libdir=$sysroot/lib
includedir=/usr/include/gstreamer-1.0
Name: gstreamer-$lib-1.0
Description: GStreamer $lib library (arm64 runtime, for linking only)
Version: $version
Requires: $requires
Libs: -L\${libdir} -lgst$lib-1.0
Cflags:
PC
done
export PKG_CONFIG_ALLOW_CROSS=1
export PKG_CONFIG_LIBDIR_aarch64_unknown_linux_gnu="$sysroot/pkgconfig:$multiarch/pkgconfig:/usr/share/pkgconfig"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=-Wl,-rpath-link,$multiarch"
export BINDGEN_EXTRA_CLANG_ARGS_aarch64_unknown_linux_gnu="--target=aarch64-linux-gnu -I/usr/include/aarch64-linux-gnu"
export QEMU_LD_PREFIX=/
export GST_REGISTRY_FORK=no
