//! The live monitor's cost on the box: an encoder live at 1280x720, 30 fps (the test pattern,
//! x264) recording to a file, watched by 0, 1, 2 and 4 viewers that receive but do not decode
//! (GStreamer's own webrtcbin into fakesink, in this process, asking by WHEP as a browser does),
//! so that the viewers' decoding on the same 2 cores does not count against the box. The
//! daemon's CPU and resident memory at each count, what one viewer adds, and whether the encoder
//! keeps its frame rate. Then glass to viewer three ways (`monitor_glass`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::str::FromStr;
use std::time::{Duration, Instant};

use std::sync::mpsc::Sender;

use anyhow::Context;
use gst::prelude::*;
use gst_webrtc::prelude::*;

/// One WHEP request: the SDP offer in, the status, the answer and the viewer's URL out.
fn whep(port: u16, cookie: &str, offer: &str) -> anyhow::Result<(u16, String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let req = format!(
        "POST /api/whep/programme HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nX-Telebridge-Csrf: 1\r\n\
         Cookie: {cookie}\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{offer}",
        offer.len()
    );
    s.write_all(req.as_bytes())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let location = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("location")).map(|(_, v)| v.trim()))
        .unwrap_or_default();
    Ok((status, body.to_string(), location.to_string()))
}

/// A viewer watching, and its WHEP resource to DELETE when done.
pub(crate) struct Watching {
    pipeline: gst::Pipeline,
    location: String,
}

impl Watching {
    /// Ends it as a browser does: the DELETE, then the pipeline.
    pub(crate) fn end(self, port: u16, cookie: &str) {
        crate::panel::http(port, "DELETE", &self.location, cookie, "");
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

fn wait(promise: &gst::Promise) -> anyhow::Result<gst::Structure> {
    anyhow::ensure!(promise.wait() == gst::PromiseResult::Replied, "webrtcbin did not reply");
    promise.get_reply().map(|r| r.to_owned()).context("an empty reply")
}

/// A viewer that receives the programme and throws it away, undecoded; or, with `ages`, decodes
/// the picture as it arrives and sends each frame's age (ms since capture, from its timecode).
pub(crate) fn viewer(port: u16, cookie: &str, ages: Option<Sender<f64>>) -> anyhow::Result<Watching> {
    let pipeline = gst::Pipeline::new();
    let webrtc = gst::ElementFactory::make("webrtcbin").property_from_str("bundle-policy", "max-bundle").build()?;
    pipeline.add(&webrtc)?;
    // Loopback only, as the box's own candidates are (it gathers where it was reached).
    webrtc.property::<gst_webrtc::WebRTCICE>("ice-agent").emit_add_local_ip_address("127.0.0.1");
    for caps in [
        "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,\
         packetization-mode=(string)1,profile-level-id=(string)4d001f,level-asymmetry-allowed=(string)1",
        "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000",
    ] {
        webrtc.emit_by_name::<gst_webrtc::WebRTCRTPTransceiver>(
            "add-transceiver",
            &[&gst_webrtc::WebRTCRTPTransceiverDirection::Recvonly, &gst::Caps::from_str(caps)?],
        );
    }
    let p = pipeline.clone();
    webrtc.connect_pad_added(move |_, pad| {
        let video =
            pad.current_caps().and_then(|c| c.structure(0)?.get::<String>("media").ok()).as_deref() == Some("video");
        let chain = match &ages {
            Some(ages) if video => decoding(ages.clone()),
            _ => gst::ElementFactory::make("fakesink").property("sync", false).build().map_err(Into::into),
        };
        if let Ok(sink) = chain {
            let _ = p.add(&sink);
            let _ = sink.sync_state_with_parent();
            if let Some(s) = sink.static_pad("sink") {
                let _ = pad.link(&s);
            }
        }
    });
    pipeline.set_state(gst::State::Playing)?;
    let promise = gst::Promise::new();
    webrtc.emit_by_name::<()>("create-offer", &[&None::<gst::Structure>, &promise]);
    let offer = wait(&promise)?.get::<gst_webrtc::WebRTCSessionDescription>("offer")?;
    webrtc.emit_by_name::<()>("set-local-description", &[&offer, &None::<gst::Promise>]);
    let (status, answer, location) = whep(port, cookie, &offer.sdp().as_text()?)?;
    anyhow::ensure!(status == 201, "WHEP answered {status}: {answer}");
    let answer = gst_webrtc::WebRTCSessionDescription::new(
        gst_webrtc::WebRTCSDPType::Answer,
        gst_sdp::SDPMessage::parse_buffer(answer.as_bytes())?,
    );
    webrtc.emit_by_name::<()>("set-remote-description", &[&answer, &None::<gst::Promise>]);
    Ok(Watching { pipeline, location })
}

/// A bin that decodes the picture as it comes and sends each frame's age.
fn decoding(ages: Sender<f64>) -> anyhow::Result<gst::Element> {
    let bin = gst::parse::bin_from_description(
        "rtph264depay ! h264parse ! avdec_h264 ! videoconvert ! video/x-raw,format=I420 ! appsink name=out sync=false",
        true,
    )?;
    let sink = bin.by_name("out").and_then(|s| s.downcast::<gst_app::AppSink>().ok()).context("no appsink")?;
    crate::reader::on_frame(&sink, move |tc, now| {
        let _ = ages.send(tc.age_us(now) as f64 / 1000.0);
    });
    Ok(bin.upcast())
}

/// The status's viewers watching, and the encoder's frame rate.
fn status(port: u16, cookie: &str) -> (usize, f64) {
    let reply = crate::panel::http(port, "GET", "/api/status", cookie, "");
    let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
    let watching = v["viewers"].as_array().map_or(0, |a| a.iter().filter(|x| x["state"] == "watching").count());
    (watching, v["media"]["encoder"]["fps"].as_f64().unwrap_or(0.0))
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    gst::init()?;
    let bin = crate::telebridge()?;
    let dir = std::env::temp_dir().join(format!("telebridge-bench-monitor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let recording = dir.join("programme.ts");
    let srt = crate::free_udp_port()?;
    let args = [
        "--output".to_string(),
        format!("file:{}", recording.display()),
        "--output".to_string(),
        format!("srt://:{srt}?mode=listener&latency=200"),
        "--start-live".to_string(),
    ];
    let video = "[video]\nwidth = 1280\nheight = 720\nfps = 30\nbitrate_kbps = 3000\n";
    let mut daemon = crate::panel::start_with(&bin, &dir, &args, video)?;
    let (port, cookie, pid) = (daemon.port, daemon.cookie.clone(), daemon.child.id());
    let seconds = if quick { 4 } else { 20 };
    println!(
        "| viewers | daemon CPU over {seconds} s | CPU per viewer | RSS | RSS per viewer | encoder fps |\n|---|---|---|---|---|---|"
    );
    let mut viewers = Vec::new();
    let mut base: Option<(f64, f64)> = None;
    let mut rows = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        std::thread::sleep(Duration::from_secs(3));
        for count in [0usize, 1, 2, 4] {
            while viewers.len() < count {
                viewers.push(viewer(port, &cookie, None)?);
            }
            let until = Instant::now() + Duration::from_secs(15);
            while status(port, &cookie).0 < count && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(200));
            }
            if status(port, &cookie).0 < count {
                let reply = crate::panel::http(port, "GET", "/api/status", &cookie, "");
                let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
                anyhow::bail!("{count} viewers did not all connect: {}", v["viewers"]);
            }
            std::thread::sleep(Duration::from_secs(2));
            let (t0, at) = (crate::ticks(pid)?, Instant::now());
            std::thread::sleep(Duration::from_secs(seconds));
            let cpu = (crate::ticks(pid)? - t0) as f64 / 100.0 / at.elapsed().as_secs_f64() * 100.0;
            let rss = crate::rss_kb(pid) as f64 / 1024.0;
            let fps = status(port, &cookie).1;
            let (cpu0, rss0) = *base.get_or_insert((cpu, rss));
            let each = |now: f64, zero: f64| {
                if count == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1}", (now - zero) / count as f64)
                }
            };
            println!(
                "| {count} | {cpu:.0} % | {} % | {rss:.0} MB | {} MB | {fps:.1} |",
                each(cpu, cpu0),
                each(rss, rss0)
            );
            rows.push((count, fps));
        }
        for v in viewers.drain(..) {
            v.end(port, &cookie);
        }
        crate::monitor_glass::run(&bin, &dir, port, &cookie, srt, quick)
    })();
    for v in viewers {
        v.end(port, &cookie);
    }
    let _ = daemon.child.kill();
    let _ = daemon.child.wait();
    if result.is_err() {
        let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
        let viewers: Vec<&str> = log.lines().filter(|l| l.contains("viewer")).collect();
        eprintln!("the daemon on its viewers:\n{}", viewers.join("\n"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let slowest = rows.iter().map(|(_, fps)| *fps).fold(f64::MAX, f64::min);
    println!("\nThe encoder's frame rate with the most viewers: {slowest:.1} fps (configured 30).");
    if quick {
        anyhow::ensure!(rows.len() == 4 && slowest > 25.0, "the encoder did not keep its frame rate: {rows:?}");
        eprintln!("quick check passed: 0, 1, 2 and 4 viewers measured");
    }
    Ok(())
}
