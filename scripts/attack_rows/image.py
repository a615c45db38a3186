"""The image's boot-setup (issue 57, finding 8): run as root at every boot, it worked in a folder
the daemon can write and followed the links the daemon could leave there."""

import os
import shutil
import stat
import subprocess
import tempfile

UID = 64123


def boot_setup(tree, binary, work, row):
    """On 3fa70d4, boot-setup ran `chown telebridge:telebridge "$conf"/telebridge.toml*` and
    `config apply --to "$conf/telebridge.toml"` as root: links the daemon left in its folder
    made root give away (and write) any file; on a scratch tree, the Wi-Fi settings and root's
    authorized_keys changed owner. Here the script from `tree`, its paths moved into a scratch
    tree, runs as root in a mount and UTS namespace that has a `telebridge` user; the daemon's
    folder holds telebridge.toml -> the Wi-Fi file and telebridge.toml.prev -> authorized_keys,
    and the boot partition a telebridge.toml to apply."""
    # The daemon's user must reach the scratch tree.
    os.chmod(work, 0o755)
    scr = tempfile.mkdtemp(prefix="boot-setup-", dir=work)
    os.chmod(scr, 0o755)
    boot, data = os.path.join(scr, "boot"), os.path.join(scr, "data")
    conf = os.path.join(data, "telebridge")
    for d in (boot, os.path.join(data, "etc"), os.path.join(data, "ssh"), os.path.join(data, "lib", "telebridge"), conf):
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
    open(os.path.join(data, ".grown"), "w").close()
    with open(os.path.join(data, "etc", "hostname"), "w") as f:
        f.write("attack-box\n")
    wifi, keys = os.path.join(data, "etc", "wpa_supplicant-wlan0.conf"), os.path.join(data, "ssh", "authorized_keys")
    for p, text in ((wifi, "network={ssid=\"studio\" psk=\"secret\"}\n"), (keys, "ssh-ed25519 AAAA root@admin\n")):
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o600)
    os.chown(conf, UID, UID)
    os.symlink(wifi, os.path.join(conf, "telebridge.toml"))
    os.symlink(keys, os.path.join(conf, "telebridge.toml.prev"))
    with open(os.path.join(boot, "telebridge.toml"), "w") as f:
        f.write('name = "attack-box"\n')
    default = os.path.join(scr, "default.toml")
    shutil.copy(os.path.join(tree, "firmware/config/telebridge.example.toml"), default)
    os.chmod(default, 0o644)
    script = open(os.path.join(tree, "image/rootfs/usr/lib/telebridge/boot-setup")).read()
    script = (script.replace("boot=/boot/firmware", f"boot={boot}").replace("data=/data", f"data={data}")
              .replace("/usr/bin/telebridge", binary).replace("/usr/share/telebridge/telebridge.toml", default))
    moved = os.path.join(scr, "boot-setup")
    with open(moved, "w") as f:
        f.write(script)
    passwd, group = os.path.join(scr, "passwd"), os.path.join(scr, "group")
    with open(passwd, "w") as f:
        f.write(open("/etc/passwd").read() + f"telebridge:x:{UID}:{UID}::/nonexistent:/usr/sbin/nologin\n")
    with open(group, "w") as f:
        f.write(open("/etc/group").read() + f"telebridge:x:{UID}:\n")
    for p in (passwd, group):
        os.chmod(p, 0o644)
    before = {p: open(p).read() for p in (wifi, keys)}
    ran = subprocess.run(["unshare", "--mount", "--uts", "--fork", "sh", "-c",
                          f"mount --bind {passwd} /etc/passwd && mount --bind {group} /etc/group && exec sh {moved}"],
                         capture_output=True, text=True, timeout=60)
    changed = []
    for name, p in (("Wi-Fi settings", wifi), ("root's authorized_keys", keys)):
        st = os.stat(p)
        if st.st_uid != 0 or st.st_gid != 0:
            changed.append(f"{name} now owned by {st.st_uid}:{st.st_gid}")
        if open(p).read() != before[p]:
            changed.append(f"{name} rewritten")
        if stat.S_IMODE(st.st_mode) != 0o600:
            changed.append(f"{name} mode {oct(stat.S_IMODE(st.st_mode))}")
    # The same without the links: the boot partition's settings are taken, into a file of the
    # daemon's.
    for n in ("telebridge.toml", "telebridge.toml.prev"):
        os.remove(os.path.join(conf, n))
    again = subprocess.run(["unshare", "--mount", "--uts", "--fork", "sh", "-c",
                            f"mount --bind {passwd} /etc/passwd && mount --bind {group} /etc/group && exec sh {moved}"],
                           capture_output=True, text=True, timeout=60)
    taken = not os.path.exists(os.path.join(boot, "telebridge.toml"))
    st = os.stat(os.path.join(conf, "telebridge.toml"))
    theirs = st.st_uid == UID and stat.S_IMODE(st.st_mode) == 0o600 and 'name = "attack-box"' in open(
        os.path.join(conf, "telebridge.toml")).read()
    row("boot-setup as root in the daemon's folder, with links left there", 2, not changed and taken and theirs,
        f"{'; '.join(changed) or 'the files the links point to are as they were'} (rc {ran.returncode}); without "
        f"the links the boot partition's settings were {'taken' if taken else 'not taken'} into a file owned by "
        f"{st.st_uid}, mode {oct(stat.S_IMODE(st.st_mode))} (rc {again.returncode})")
