# config.txt on Telebridge's Yocto image: the running slot's files come from slot-a/ or slot-b/
# (slot.txt, written by the A/B backend: /usr/lib/telebridge/rauc-tryboot), and the capture
# hardware the firmware is for: the TC358743 HDMI bridge with its I2S sound, and enough CMA
# memory for 1080p capture, encoding and a preview. (With the telebridge-os distro only.)
do_deploy:append:telebridge-os() {
    cat >> ${DEPLOYDIR}/${BOOTFILES_DIR_NAME}/config.txt <<'CONFIG'

[all]
# Telebridge: HDMI in through a TC358743 bridge on the camera port (CSI-2), its sound as an ALSA
# card (alsa:hw:CARD=tc358743 in telebridge.toml). 1080p60 needs 4 lanes (a Compute Module's
# CAM1: dtoverlay=tc358743,4lane=1); a Pi 4's or Zero 2 W's camera port has 2 (1080p30).
dtoverlay=tc358743
dtoverlay=tc358743-audio
# KMS for the HDMI output; frames from the bridge and the codec live in CMA memory.
dtoverlay=vc4-kms-v3d,cma-96
# The slot to start (A or B); an update's first start reads tryboot.txt instead of this file.
include slot.txt
CONFIG
}
