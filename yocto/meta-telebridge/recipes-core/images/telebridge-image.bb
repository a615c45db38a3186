SUMMARY = "Telebridge: the SD card image for a Raspberry Pi with its hardware codec"
DESCRIPTION = "The Raspberry Pi kernel (bcm2835-codec: v4l2h264enc and v4l2h264dec on a Pi 0-4; \
unicam and the TC358743 HDMI bridge), the Telebridge daemon and the image's files: the same \
card layout, first boot, read-only root and A/B updates as the image built from Debian's \
archive (docs/image.md), with the Pi's firmware trying a new slot once (tryboot) instead of \
U-Boot and GRUB."
LICENSE = "MIT"

inherit core-image

IMAGE_FEATURES += "read-only-rootfs"
IMAGE_INSTALL = " \
    packagegroup-core-boot \
    telebridge telebridge-image-files \
    kernel-image kernel-devicetree kernel-modules \
    linux-firmware-rpidistro-bcm43430 linux-firmware-rpidistro-bcm43455 wireless-regdb-static \
    openssh-sshd avahi-daemon wpa-supplicant v4l-utils \
    ${CORE_IMAGE_EXTRA_INSTALL} \
"

# The card: files/wic/telebridge-rpi.wks; the boot partition holds the firmware and config.txt at its
# root, and slot A's kernel, device trees and cmdline.txt in slot-a/.
WKS_FILE = "telebridge-rpi.wks"
WIC_CREATE_EXTRA_ARGS = "--no-fstab-update"
IMAGE_FSTYPES = "wic.xz wic.bmap ext4"
do_image_wic[depends] += "telebridge-slot:do_deploy"

def telebridge_slot_files(d, slot):
    """IMAGE_BOOT_FILES entries for the kernel and device trees of a slot: into slot/."""
    out = ['%s;%s%s' % (d.getVar('KERNEL_IMAGETYPE'), slot, d.getVar('SDIMG_KERNELIMAGE'))]
    for dtb in (d.getVar('KERNEL_DEVICETREE') or '').split():
        base = os.path.basename(dtb)
        if dtb.endswith('.dtbo') or base in ('overlay_map.dtb', 'hat_map.dtb'):
            out.append('%s;%soverlays/%s' % (base, slot, base))
        elif dtb.endswith('.dtb'):
            out.append('%s;%s%s' % (base, slot, base))
    return ' '.join(out)

IMAGE_BOOT_FILES = " \
    ${BOOTFILES_DIR_NAME}/* \
    ${@telebridge_slot_files(d, 'slot-a/')} \
    telebridge-slot.txt;slot.txt \
    telebridge-slot-a-cmdline.txt;slot-a/cmdline.txt \
"

# The read-only root, as the Debian image's (image/customize.sh): no secret in the image, the
# machine id made at each boot, the mount points, our fstab, nothing that writes to the root.
telebridge_rootfs() {
    rm -f ${IMAGE_ROOTFS}/etc/ssh/ssh_host_*
    : > ${IMAGE_ROOTFS}${sysconfdir}/machine-id
    install -d ${IMAGE_ROOTFS}/data ${IMAGE_ROOTFS}/boot/firmware
    mv ${IMAGE_ROOTFS}${sysconfdir}/fstab.telebridge ${IMAGE_ROOTFS}${sysconfdir}/fstab
    sed -i -e "s/@GID@/$(grep '^telebridge:' ${IMAGE_ROOTFS}${sysconfdir}/group | cut -d: -f3)/" \
        ${IMAGE_ROOTFS}${sysconfdir}/fstab
    ln -sf /data/etc/wpa_supplicant-wlan0.conf ${IMAGE_ROOTFS}${sysconfdir}/wpa_supplicant/wpa_supplicant-wlan0.conf
    # The bundle's signer, trusted by the box (RAUC_KEYRING_FILE in the kas file).
    install -D -m 0644 ${TELEBRIDGE_KEYRING} ${IMAGE_ROOTFS}${sysconfdir}/rauc/keyring.pem
}
ROOTFS_POSTPROCESS_COMMAND += "telebridge_rootfs"

# The CA whose certificates sign updates: set by the kas file (development keys by default).
TELEBRIDGE_KEYRING ??= "${RAUC_KEYRING_FILE}"
