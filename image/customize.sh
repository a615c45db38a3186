# Telebridge image: run inside the new root (mmdebstrap customize hook) after the packages and
# image/rootfs are in.
set -eu

systemctl enable systemd-networkd.service systemd-resolved.service telebridge-boot.service \
    telebridge-console.service telebridge-console.path telebridge-boot-ok.service >/dev/null 2>&1
# Nothing writes to the root at run time: no package lists to refresh, no scrubbing of it.
systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service >/dev/null 2>&1

# No secret is in the image: every box makes its own SSH host key (on its data partition, when
# the ssh switch is on), its own machine id (at every boot: the root is read-only), and its own
# setup code and keys (the daemon, on the data partition).
rm -f /etc/ssh/ssh_host_*
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/hostname
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts

mkdir -p /data /boot/firmware
ln -sf /data/etc/wpa_supplicant-wlan0.conf /etc/wpa_supplicant/wpa_supplicant-wlan0.conf

# GRUB, the boot loader that picks the root slot on every board (a Pi starts it from U-Boot,
# qemu's virt from its UEFI firmware): it reads its grub.cfg from
# /EFI/telebridge on the partition it was loaded from.
grub-mkimage -O arm64-efi -o /usr/lib/telebridge/BOOTAA64.EFI -p /EFI/telebridge \
    part_msdos fat ext2 normal linux configfile loadenv test echo sleep reboot halt search regexp

# raspi-firmware's hooks copied the Pi's firmware, kernel and device trees into /boot/firmware
# (88 MB): on the box that is the boot partition's mount point, which scripts/image fills itself.
rm -rf /boot/firmware/* 2>/dev/null || true

# What only the package manager needed.
rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/lib/dpkg/*-old \
    /var/log/* /tmp/* 2>/dev/null || true
