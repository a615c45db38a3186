//! The fleet client (`telebridge run --sim`, its DDI client) against hawkbit_mock's server, for
//! what gooseBit does not serve: a gateway token, a maintenance window that holds a downloaded
//! bundle until it opens, and a cancel that stops a download. The mock checks each request's
//! `Authorization` header and each feedback's JSON exactly. It asks for a poll each minute, so
//! this takes about two minutes. `TELEBRIDGE` names the binary (scripts/test-fleet sets it).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hawkbit::ddi::{Execution, Finished, MaintenanceWindow, Type};
use hawkbit_mock::ddi::{ChunkProtocol, DeploymentBuilder, ServerBuilder, TargetAuthorization};
use sha1::Digest as _;

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("telebridge-hawkbit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("run/telebridge")).unwrap();
    std::fs::create_dir_all(dir.join("run/telebridge-helper")).unwrap();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::write(dir.join("os-release"), "IMAGE_ID=telebridge\nIMAGE_VERSION=0.1.0\n").unwrap();
    dir
}

/// A box polling `server` as `name`, with `fleet` lines added to its `[fleet]`.
fn daemon(dir: &Path, name: &str, server: &str, fleet: &str) -> Daemon {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = dir.join("telebridge.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"{name}\"\n[web]\nannounce = false\nsetup_code_file = \"{}\"\n[fleet]\nserver = \"{server}\"\n{fleet}\n",
            dir.join("setup.txt").display()
        ),
    )
    .unwrap();
    let bin = std::env::var("TELEBRIDGE").expect("TELEBRIDGE: the telebridge binary");
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    let child = Command::new(bin)
        .args(["run", "--sim", "--config", config.to_str().unwrap(), "--http", &format!("127.0.0.1:{port}")])
        .env("RUNTIME_DIRECTORY", dir.join("run/telebridge"))
        .env("STATE_DIRECTORY", dir.join("state"))
        .env("TELEBRIDGE_OS_RELEASE", dir.join("os-release"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Daemon(child)
}

/// A bundle-shaped file and its md5, sha1 and sha256.
fn bundle(dir: &Path) -> (PathBuf, String, String, String) {
    let path = dir.join("telebridge-0.1.1-arm64.raucb");
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    (path, hex(&md5::Md5::digest(&bytes)), hex(&sha1::Sha1::digest(&bytes)), hex(&sha2::Sha256::digest(&bytes)))
}

fn wait(what: &str, limit: Duration, dir: &Path, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
            let tail: String =
                log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            panic!("{what}: not within {} s; the box's log ends:\n{tail}", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("{what}: after {:.1} s", start.elapsed().as_secs_f64());
}

#[test]
fn a_gateway_token_a_maintenance_window_and_a_cancel() {
    // --- the maintenance window, with the tenant's gateway token --------------------------------
    let gw_dir = scratch("window");
    let gw = ServerBuilder::default().target_authorization(TargetAuthorization::GatewayToken).build();
    let target = gw.add_target("box-window");
    let (path, md5, sha1, sha256) = bundle(&gw_dir);
    let deployment = |window| {
        DeploymentBuilder::new("10", Type::Forced, Type::Forced)
            .maintenance_window(window)
            .chunk(ChunkProtocol::HTTP, "os", "0.1.1", "telebridge", vec![(path.clone(), &md5, &sha1, &sha256)])
            .build()
    };
    target.push_deployment(deployment(MaintenanceWindow::Unavailable));
    let fetching = target.expect_deployment_feedback(
        "10",
        Execution::Proceeding,
        Finished::None,
        None,
        vec!["downloading telebridge-0.1.1-arm64.raucb (0.1.1)"],
    );
    let held = target.expect_deployment_feedback(
        "10",
        Execution::Scheduled,
        Finished::None,
        None,
        vec!["downloaded; waiting for the maintenance window"],
    );
    let installing =
        target.expect_deployment_feedback("10", Execution::Proceeding, Finished::None, None, vec!["installing 0.1.1"]);
    let refused = target.expect_deployment_feedback(
        "10",
        Execution::Closed,
        Finished::Failure,
        None,
        vec!["install failed: rauc: signature verification failed"],
    );
    // The gateway token is the tenant's (the mock's "KeyDEFAULT"); a request without it is not answered.
    let _window_box = daemon(&gw_dir, "box-window", &gw.base_url(), "gateway_token = \"KeyDEFAULT\"");

    // --- the cancel, with the box's own target token -----------------------------------------------
    let tt_dir = scratch("cancel");
    let tt = ServerBuilder::default().build();
    let canceller = tt.add_target("box-cancel");
    let (slow, md5, sha1, sha256) = bundle(&tt_dir);
    let file = slow.file_name().unwrap().to_str().unwrap().to_string();
    // The download that never ends: the server waits three minutes before its answer.
    let slow_download = DeploymentBuilder::new("20", Type::Forced, Type::Forced)
        .chunk_with_mock(
            ChunkProtocol::HTTP,
            "os",
            "0.1.1",
            "telebridge",
            vec![(slow.clone(), &md5, &sha1, &sha256)],
            Box::new(move |when, then| {
                when.method(httpmock::Method::GET).path(format!("/download/{file}"));
                then.status(200).delay(Duration::from_secs(180)).body("late");
            }),
        )
        .build();
    canceller.push_deployment(slow_download);
    let downloading = canceller.expect_deployment_feedback(
        "20",
        Execution::Proceeding,
        Finished::None,
        None,
        vec!["downloading telebridge-0.1.1-arm64.raucb (0.1.1)"],
    );
    let stopped = canceller.expect_deployment_feedback(
        "20",
        Execution::Canceled,
        Finished::Success,
        None,
        vec!["cancelled before the install of 0.1.1"],
    );
    let cancel_told = canceller.expect_cancel_feedback(
        "20",
        Execution::Closed,
        Finished::Success,
        vec!["cancelled before the install of 0.1.1"],
    );
    let _cancel_box = daemon(&tt_dir, "box-cancel", &tt.base_url(), "target_token = \"Keybox-cancel\"");

    // The window box fetches at its first poll, checks the digests and waits, telling the server.
    wait("the window box downloads and says it waits for the window", Duration::from_secs(30), &gw_dir, || {
        held.calls() == 1
    });
    assert_eq!(fetching.calls(), 1);
    assert_eq!(installing.calls(), 0, "nothing installed outside the window");
    assert!(!gw_dir.join("run/telebridge/update-request").exists(), "the helper was not asked");
    assert!(gw_dir.join("state/update.raucb").exists(), "the checked bundle is kept for the window");
    // The cancel box is downloading; the server cancels.
    wait("the cancel box starts its download", Duration::from_secs(30), &tt_dir, || downloading.calls() == 1);
    canceller.cancel_action("20");
    // The window opens.
    target.push_deployment(deployment(MaintenanceWindow::Available));

    // At the next poll (the mock asks for one a minute): the window box installs through the
    // helper, whose refusal (answered here as the helper would) is reported with its words.
    wait("the window box asks the helper once the window opens", Duration::from_secs(90), &gw_dir, || {
        gw_dir.join("run/telebridge/update-request").exists()
    });
    assert_eq!(installing.calls(), 1);
    std::fs::remove_file(gw_dir.join("run/telebridge/update-request")).unwrap();
    std::fs::write(gw_dir.join("run/telebridge-helper/update-status"), "failed\nrauc: signature verification failed\n")
        .unwrap();
    wait("the window box reports the helper's refusal", Duration::from_secs(15), &gw_dir, || refused.calls() == 1);
    assert!(!gw_dir.join("state/fleet-pending.json").exists(), "nothing pending after a refused install");

    // The cancel box stops its download and says so, to the action and to the cancel.
    wait("the cancel box stops its download and says so", Duration::from_secs(90), &tt_dir, || {
        stopped.calls() == 1 && cancel_told.calls() == 1
    });
    assert!(!tt_dir.join("state/update.raucb.part").exists(), "the partial download is dropped");
    let log = std::fs::read_to_string(tt_dir.join("daemon.log")).unwrap()
        + &std::fs::read_to_string(gw_dir.join("daemon.log")).unwrap();
    assert!(!log.contains("Keybox-cancel") && !log.contains("KeyDEFAULT"), "a token in the log");
    let _ = std::fs::remove_dir_all(&gw_dir);
    let _ = std::fs::remove_dir_all(&tt_dir);
}
