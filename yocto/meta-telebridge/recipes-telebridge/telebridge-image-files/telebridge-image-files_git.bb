SUMMARY = "Telebridge image: first boot, read-only root, data partition, A/B updates"
DESCRIPTION = "The files that make a root file system a Telebridge box, shared with the image \
built from Debian's archive (image/rootfs in the repository): the every-boot setup (grow the \
data partition, the box's name, settings and Wi-Fi left on the boot partition, the ssh switch), \
boot-ok (mark the slot good once the daemon is ready, or go back), the console banner, the \
mounts that keep the root read-only, networking, journald in memory; and, for the Pi's firmware \
A/B, RAUC's configuration with the tryboot backend and its post-install handler."

require recipes-telebridge/telebridge/telebridge.inc

SRC_URI += " \
    file://rauc-post-install \
    file://rauc-tryboot \
    file://system.conf \
"

inherit systemd allarch

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    # The image's files, as the Debian image has them.
    cp -R --no-preserve=ownership ${S}/image/rootfs/. ${D}/
    # The Debian image's GRUB-based RAUC configuration gives way to the Pi firmware's A/B.
    install -m 0644 ${UNPACKDIR}/system.conf ${D}${sysconfdir}/rauc/system.conf
    install -m 0755 ${UNPACKDIR}/rauc-tryboot ${UNPACKDIR}/rauc-post-install ${D}${libdir}/telebridge/
    install -D -m 0644 ${S}/image/fstab ${D}${sysconfdir}/fstab.telebridge
    install -d ${D}/data ${D}/boot/firmware
}

SYSTEMD_SERVICE:${PN} = "telebridge-boot.service telebridge-boot-ok.service telebridge-console.service telebridge-console.path"

FILES:${PN} += " \
    ${libdir}/telebridge \
    ${nonarch_base_libdir}/udev \
    ${nonarch_libdir}/tmpfiles.d \
    ${systemd_system_unitdir} \
    /boot/firmware \
    /data \
"

RDEPENDS:${PN} = " \
    avahi-daemon \
    e2fsprogs-resize2fs \
    libnss-mdns \
    openssh-keygen \
    rauc \
    telebridge \
    util-linux-findmnt \
    util-linux-lsblk \
    util-linux-partx \
    util-linux-sfdisk \
    wpa-supplicant-passphrase \
"
