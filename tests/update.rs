//! Updates through the panel: the bundle streams to the state directory and the root helper is
//! asked through the runtime directory (systemd's RUNTIME_DIRECTORY and STATE_DIRECTORY, set
//! here by hand); the helper's answer comes back through `GET /api/update`. The helper itself,
//! `rauc install` and the reboot into the other slot are proven in qemu by scripts/test-image.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::time::Duration;

use support::*;

fn upload(port: u16, body: &[u8]) -> (u16, String) {
    let cookie = session_cookie(port).unwrap();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /api/update HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nX-Telebridge-Csrf: 1\r\nCookie: {cookie}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

#[test]
fn a_bundle_streams_to_the_data_partition_and_the_helper_is_asked_and_heard() {
    let dir = scratch("update");
    let (run, state) = (dir.join("run/telebridge"), dir.join("state"));
    let answers = dir.join("run/telebridge-helper");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let port = free_tcp_port();
    let env = [("RUNTIME_DIRECTORY", run.to_str().unwrap()), ("STATE_DIRECTORY", state.to_str().unwrap())];
    let _box = run_sim(&dir, "box", port, &[], &env);

    assert_eq!(get_json(port, "/api/update")["state"], "idle");
    // 3 MiB that are not all one byte, so a lost or reordered chunk shows.
    let bundle: Vec<u8> = (0..3u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (status, body) = upload(port, &bundle);
    assert_eq!(status, 202, "{body}");
    assert_eq!(std::fs::read(state.join("update.raucb")).unwrap(), bundle);
    let asked = std::fs::read_to_string(run.join("update-request")).unwrap();
    assert_eq!(asked.trim(), state.join("update.raucb").to_str().unwrap());
    let now = get_json(port, "/api/update");
    assert_eq!(now["state"], "installing", "{now}");

    // One at a time.
    let (status, body) = upload(port, b"another");
    assert_eq!(status, 409, "{body}");

    // The helper takes the request and gives its verdict, in its words, in its own folder (an
    // answer in the daemon's folder is not the helper's: issue 36, finding 7).
    std::fs::remove_file(run.join("update-request")).unwrap();
    std::fs::write(run.join("update-status"), "installed\nplanted by the daemon\n").unwrap();
    std::fs::write(
        answers.join("update-status"),
        "failed\nrauc: signature verification failed: certificate not trusted\n",
    )
    .unwrap();
    let now = get_json(port, "/api/update");
    assert_eq!(now["state"], "failed");
    assert!(now["message"].as_str().unwrap().contains("certificate not trusted"), "{now}");

    // An empty body is no bundle; the session is needed.
    let (status, body) = upload(port, b"");
    assert_eq!(status, 422, "{body}");
    let (status, _) = {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"POST /api/update HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Telebridge-Csrf: 1\r\nContent-Length: 3\r\n\r\nabc").unwrap();
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        (r.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok()).unwrap_or(0), r)
    };
    assert_eq!(status, 401);

    // Rebooting goes through the helper too; under --sim, where there is no box, it is refused.
    let (status, _) = http("POST", port, "/api/reboot", Some("{}"));
    assert_eq!(status, 409);
}

#[test]
fn without_the_helper_an_update_says_what_is_missing() {
    let dir = scratch("update-no-helper");
    let port = free_tcp_port();
    let _box = run_sim(&dir, "box", port, &[], &[]);
    let (status, body) = upload(port, b"bundle");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("telebridge-helper"), "{body}");
}
