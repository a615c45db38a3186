SUMMARY = "Telebridge: the boot partition's slot files (slot.txt, slot A's cmdline.txt)"
DESCRIPTION = "The files the Pi's firmware reads to start root slot A on a new card: slot.txt \
(os_prefix=slot-a/, included by config.txt) and slot-a/cmdline.txt. The image puts the kernel \
and the device trees beside them in slot-a/; an update writes slot-b/ (rauc-post-install)."
HOMEPAGE = "https://github.com/telebridge/telebridge"
LICENSE = "MIT"
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"

SRC_URI = ""

inherit deploy nopackages

# The card's disk id: the root slots are 7e1eb1d9-02 and -03 (files/wic/telebridge-rpi.wks).
TELEBRIDGE_DISKID ?= "7e1eb1d9"

do_configure[noexec] = "1"
do_compile[noexec] = "1"
do_install[noexec] = "1"

do_deploy() {
    printf 'os_prefix=slot-a/\n' > ${DEPLOYDIR}/telebridge-slot.txt
    printf 'console=serial0,115200 console=tty1 root=PARTUUID=%s-02 ro rootwait panic=10 rauc.slot=A\n' \
        "${TELEBRIDGE_DISKID}" > ${DEPLOYDIR}/telebridge-slot-a-cmdline.txt
}
addtask deploy after do_compile before do_build
