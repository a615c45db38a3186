SUMMARY = "Telebridge: a Raspberry Pi as a broadcast video link"
DESCRIPTION = "The Telebridge daemon (telebridge run): HDMI or camera capture, H.264 encoded in \
hardware (v4l2h264enc on a Pi 0-4, x264 on a Pi 5), MPEG-TS over SRT (libsrt), RTMP(S) and \
recordings; SRT decoding to HDMI; the pairing of two boxes; the web panel (embedded), the REST \
API and Prometheus metrics; LEDs and a button on GPIO."

require telebridge.inc
require telebridge-crates.inc

inherit cargo cargo-update-recipe-crates pkgconfig systemd useradd

DEPENDS += "glib-2.0 gstreamer1.0 gstreamer1.0-plugins-bad gstreamer1.0-plugins-base srt"

# Only the firmware's binaries (the workspace also holds the benchmarks and the fuzz targets).
CARGO_BUILD_FLAGS:append = " --package telebridge"

do_install:append() {
    install -d ${D}${systemd_system_unitdir} ${D}${datadir}/telebridge ${D}${libdir}/telebridge \
        ${D}${nonarch_base_libdir}/udev/rules.d
    install -m 0644 ${S}/packaging/telebridge.service ${S}/packaging/telebridge-helper.path \
        ${S}/packaging/telebridge-helper.service ${D}${systemd_system_unitdir}/
    install -m 0755 ${S}/packaging/lib/helper ${D}${libdir}/telebridge/helper
    install -m 0644 ${S}/packaging/deb/60-telebridge-gpio.rules ${D}${nonarch_base_libdir}/udev/rules.d/
    # The defaults, copied to /etc/telebridge once by the image's first boot (the daemon
    # rewrites that file: it is no conffile).
    install -m 0644 ${S}/firmware/config/telebridge.example.toml ${D}${datadir}/telebridge/telebridge.toml
}

SYSTEMD_SERVICE:${PN} = "telebridge.service telebridge-helper.path"

USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system gpio"
USERADD_PARAM:${PN} = "--system --home-dir ${localstatedir}/lib/telebridge --no-create-home --shell /sbin/nologin \
    --user-group --groups video,render,audio,gpio telebridge"

FILES:${PN} += "${systemd_system_unitdir} ${nonarch_base_libdir}/udev/rules.d"

# What the pipelines are made of, by element (firmware/media): capture (v4l2src, libcamerasrc),
# encoders (v4l2h264enc on a Pi 0-4, x264enc on a Pi 5, openh264enc as the last resort), the
# muxer and parsers (mpegtsmux, tsdemux, h264parse, aacparse), the decoder (v4l2h264dec or
# avdec_h264), HDMI out (kmssink), the slate's words (textoverlay), the preview (jpegenc),
# sound (alsasrc, alsasink, AAC) and its meters (level), RTMP (flvmux, rtmp2sink), the live
# monitor and the WHIP output (webrtcbin with libnice's ICE, DTLS and SRTP; rtph264pay,
# capssetter, opusenc, rtpopuspay); TLS for RTMPS and WHIP over https (glib-networking, GIO's).
RDEPENDS:${PN} = " \
    glib-networking \
    gstreamer1.0-libav \
    gstreamer1.0-plugins-bad-dtls \
    gstreamer1.0-plugins-bad-kms \
    gstreamer1.0-plugins-bad-mpegtsdemux \
    gstreamer1.0-plugins-bad-mpegtsmux \
    gstreamer1.0-plugins-bad-rtmp2 \
    gstreamer1.0-plugins-bad-srtp \
    gstreamer1.0-plugins-bad-videoparsersbad \
    gstreamer1.0-plugins-bad-webrtc \
    gstreamer1.0-plugins-base-alsa \
    gstreamer1.0-plugins-base-app \
    gstreamer1.0-plugins-base-audioconvert \
    gstreamer1.0-plugins-base-audioresample \
    gstreamer1.0-plugins-base-audiotestsrc \
    gstreamer1.0-plugins-base-opus \
    gstreamer1.0-plugins-base-pango \
    gstreamer1.0-plugins-base-typefindfunctions \
    gstreamer1.0-plugins-base-videoconvertscale \
    gstreamer1.0-plugins-base-videorate \
    gstreamer1.0-plugins-base-videotestsrc \
    gstreamer1.0-plugins-good-audioparsers \
    gstreamer1.0-plugins-good-debug \
    gstreamer1.0-plugins-good-flv \
    gstreamer1.0-plugins-good-jpeg \
    gstreamer1.0-plugins-good-level \
    gstreamer1.0-plugins-good-rtp \
    gstreamer1.0-plugins-good-rtpmanager \
    gstreamer1.0-plugins-good-video4linux2 \
    gstreamer1.0-plugins-ugly-x264 \
    libcamera-gst \
    libnice \
    ttf-bitstream-vera \
"
