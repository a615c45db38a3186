//! The command line's contract for bad input: exit code 2 and one line that names what to fix.
//! Also `config check` and `config default`.

mod support;

use support::*;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = telebridge().args(args).output().expect("run telebridge");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_fix() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["encode", "--output", "srt//127.0.0.1:9000"],
            "error: --output #1: \"srt//127.0.0.1:9000\" is not a supported output",
        ),
        (&["encode", "--output", "srt://127.0.0.1"], "error: --output #1: \"srt://127.0.0.1\" has no port"),
        (
            &["encode", "--output", "srt://127.0.0.1:9000?latency=9000"],
            "error: --output #1: latency=9000 is out of range 20-8000 ms",
        ),
        (
            &["encode", "--output", "srt://127.0.0.1:9000?latency=5"],
            "error: --output #1: latency=5 is out of range 20-8000 ms",
        ),
        (
            &["encode", "--output", "srt://127.0.0.1:9000?passphrase=short"],
            "error: --output #1: passphrase has 5 characters; it must have 10-79",
        ),
        (
            &["encode", "--output", "srt://127.0.0.1:9000?passphrase=0123456789&pbkeylen=12"],
            "error: --output #1: pbkeylen=12 is not one of 16, 24, 32",
        ),
        (
            &["encode", "--fps", "100", "--output", "srt://:9000"],
            "error: --fps: 100 is out of range 9-60 frames per second",
        ),
        (&["encode", "--size", "big", "--output", "srt://:9000"], "error: --size \"big\" is not WIDTHxHEIGHT"),
        (
            &["encode", "--source", "v4l2:/dev/video-telebridge-none", "--output", "srt://:9000"],
            "error: /dev/video-telebridge-none: no such device",
        ),
        (&["encode"], "error: no output: give --output"),
        // Issue 17, finding 7: URLs that cannot work are refused with what to write.
        (
            &["encode", "--output", "srt://127.0.0.1@127.0.0.1:9000"],
            "error: --output #1: host \"127.0.0.1@127.0.0.1\" has a user part",
        ),
        (&["encode", "--output", "srt:// :9000"], "error: --output #1: host \" \" has a space"),
        (
            &["encode", "--output", "rtmp://::1/app/key"],
            "error: --output #1: host \"::1\" looks like an IPv6 address: put it in brackets",
        ),
        (
            &["encode", "--output", "srt://::1:9000"],
            "error: --output #1: \"srt://::1:9000\": an IPv6 address goes in brackets, e.g. srt://[::1]:9000",
        ),
        (
            &["encode", "--output", "srt://127.0.0.1:9000?latency=200.5"],
            "error: --output #1: latency=200.5 is not auto nor a whole number of milliseconds (20-8000)",
        ),
    ];
    for (args, want) in cases {
        let (code, _, stderr) = run(args);
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(lines.len(), 1, "{args:?}: want one error line: {stderr}");
        assert!(lines[0].starts_with(want), "{args:?}:\n got {:?}\nwant {want:?}", lines[0]);
    }
}

#[test]
fn the_passphrase_never_appears_in_an_error() {
    let (code, out, err) = run(&["encode", "--output", "srt://127.0.0.1:9000?passphrase=hunter2hunter2&latency=1"]);
    assert_eq!(code, 2);
    assert!(!out.contains("hunter2") && !err.contains("hunter2"), "{err}");
}

#[test]
fn config_check_reports_every_problem() {
    let dir = scratch("config-check");
    let file = dir.join("bad.toml");
    std::fs::write(&file, "[video]\nfps = 5\nbitrate_kbps = 1\n\n[[outputs]]\nurl = \"srt://h:1?latency=9\"\n")
        .expect("write");
    let (code, _, err) = run(&["config", "check", file.to_str().expect("utf8")]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].ends_with("video.fps: 5 is out of range 9-60 frames per second"), "{err}");
    assert!(lines[1].ends_with("video.bitrate_kbps: 1 is out of range 100-50000 kbit/s"), "{err}");
    assert!(lines[2].ends_with("outputs[0].url: latency=9 is out of range 20-8000 ms"), "{err}");

    std::fs::write(&file, "[video]\nbitrate = 3000\n").expect("write");
    let (code, _, err) = run(&["config", "check", file.to_str().expect("utf8")]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown field `bitrate`"), "{err}");

    // Issue 17, finding 7: type errors too, every one, not only the first.
    std::fs::write(&file, "[video]\nwidth = \"wide\"\nbitrate = 3000\n[audio]\nbitrate_kbps = true\n").expect("write");
    let (code, _, err) = run(&["config", "check", file.to_str().expect("utf8")]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(err.contains("video.width: invalid type: string \"wide\", expected a whole number"), "{err}");
    assert!(err.contains("video.bitrate: unknown field `bitrate`"), "{err}");
    assert!(err.contains("audio.bitrate_kbps: invalid type: boolean `true`, expected a whole number"), "{err}");
    assert!(lines.iter().all(|l| l.starts_with(file.to_str().expect("utf8"))), "{err}");
}

#[test]
fn config_default_is_a_valid_file() {
    let (code, out, _) = run(&["config", "default"]);
    assert_eq!(code, 0);
    let dir = scratch("config-default");
    let file = dir.join("telebridge.toml");
    std::fs::write(&file, out).expect("write");
    let (code, out, err) = run(&["config", "check", file.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with(": ok\n"));
}

#[test]
fn config_apply_changes_only_what_the_file_names_and_nothing_when_it_is_wrong() {
    let dir = scratch("config-apply");
    let target = dir.join("telebridge.toml");
    let left = dir.join("boot-telebridge.toml");
    let s = |p: &std::path::Path| p.to_str().expect("utf8").to_string();
    std::fs::write(&target, "name = \"studio\"\n[video]\nbitrate_kbps = 6000\n").expect("write");
    std::fs::write(&left, "role = \"decoder\"\n[decoder]\nsink = \"fake\"\n").expect("write");
    let (code, out, err) = run(&["config", "apply", &s(&left), "--to", &s(&target)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("took the settings"), "{out}");
    let now = std::fs::read_to_string(&target).expect("read");
    assert!(
        now.contains("role = \"decoder\"") && now.contains("name = \"studio\"") && now.contains("bitrate_kbps = 6000")
    );
    let (code, _, err) = run(&["config", "check", &s(&target)]);
    assert_eq!(code, 0, "{err}");

    // A wrong value: every problem named, the file untouched.
    std::fs::write(&left, "[video]\nfps = 500\nwidth = \"wide\"\n").expect("write");
    let (code, _, err) = run(&["config", "apply", &s(&left), "--to", &s(&target)]);
    assert_eq!(code, 2);
    assert!(err.contains("video.width: invalid type"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), now);
    std::fs::write(&left, "[video]\nfps = 500\n").expect("write");
    let (code, _, err) = run(&["config", "apply", &s(&left), "--to", &s(&target)]);
    assert_eq!(code, 2);
    assert!(err.contains("video.fps: 500 is out of range 9-60"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), now);
}

#[test]
fn the_readme_s_commands_work_outside_the_repository_and_the_help_says_what_there_is() {
    // Issue 58: `measure --link` read bench/links.toml from the working directory, `man` was
    // hidden, `run --help` named two roles of three, `discover --on` an address of no interface
    // answered "no Telebridge box answered".
    let elsewhere = tempfile::tempdir().expect("dir");
    let out = telebridge().current_dir(elsewhere.path()).args(["measure", "--link", "mars"]).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--link: no profile \"mars\"; the profiles are: lan, metro-17ms"), "{err}");
    let (_, help, _) = run(&["--help"]);
    assert!(help.lines().any(|l| l.trim_start().starts_with("man ")), "{help}");
    let (_, run_help, _) = run(&["run", "--help"]);
    assert!(run_help.contains("encoder | decoder | bridge"), "{run_help}");
    let (code, _, err) = run(&["discover", "--on", "192.0.2.123", "--wait", "100ms"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--on 192.0.2.123: no network interface of this machine has that address"), "{err}");
    let (code, page, _) = run(&["man"]);
    assert_eq!(code, 0);
    assert!(!page.contains("telebridge-run(1)"), "the page names pages that do not exist");
    assert!(page.contains("TELEBRIDGE MEASURE"), "each command is a section of the one page");
}
