SUMMARY = "Telebridge: the signed update bundle (RAUC) for the Raspberry Pi image"
DESCRIPTION = "The root file system of telebridge-image, with its kernel and device trees in \
/boot (rauc-post-install copies them to the slot's folder on the boot partition), in RAUC's \
verity format, signed with RAUC_KEY_FILE / RAUC_CERT_FILE. Uploaded through the panel's System \
page, like the Debian image's bundle."
HOMEPAGE = "https://github.com/telebridge/telebridge"
LICENSE = "MIT"

SRC_URI = ""

inherit bundle

RAUC_BUNDLE_COMPATIBLE = "telebridge-rpi"
RAUC_BUNDLE_VERSION = "${DISTRO_VERSION}"
RAUC_BUNDLE_FORMAT = "verity"
RAUC_BUNDLE_SLOTS = "rootfs"
RAUC_SLOT_rootfs = "telebridge-image"
RAUC_SLOT_rootfs[fstype] = "ext4"
