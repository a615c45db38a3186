//! Lip sync end to end: the offset between the sound and the picture of the same event (the
//! test sources' flash and beep once a second), picture less sound (positive: the sound first;
//! EBU R37 allows -60 to +40 ms), three ways, each read by a receiver we did not build for it:
//!
//! ```text
//! telebridge encode ─┬─ (link) ─► telebridge decode        read by our decoder's meter
//!                    └─ (link) ─► ffmpeg -c copy rec.ts     read by scripts/av-offset (ffprobe + ffmpeg)
//! ffmpeg (lavfi color+drawbox, aevalsrc) ─ (link) ─► telebridge decode
//! ```
//!
//! At 720p30 and 1080p30, over loopback and through the link emulator (transatlantic-100ms
//! with its loss raised to 2 %, SRT latency 250 ms, so that some packets are lost for good).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use linkemu::{Impairment, Profiles};

/// Each direction's loss on the impaired link, %.
const LOSS_PCT: f64 = 2.0;

struct Row {
    size: String,
    link: String,
    path: String,
    figures: serde_json::Value,
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// A UDP port that reaches `port` through the link (or `port` itself on loopback).
async fn through(
    link: Option<&linkemu::LinkProfile>,
    port: u16,
    seed: u64,
) -> anyhow::Result<(u16, Option<linkemu::relay::Relay>)> {
    let Some(p) = link else { return Ok((port, None)) };
    let mut params = p.params();
    params.loss_pct = LOSS_PCT;
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse()?,
        format!("127.0.0.1:{port}").parse()?,
        Impairment::new(params.clone(), vec![], seed),
        Impairment::new(params, vec![], seed + 1),
    )
    .await?;
    Ok((relay.listen.port(), Some(relay)))
}

fn summary(path: &Path) -> anyhow::Result<serde_json::Value> {
    crate::json_lines(path)
        .iter()
        .rev()
        .find_map(|l| l.get("summary").cloned())
        .with_context(|| format!("no summary in {}", path.display()))
}

fn decoder(bin: &str, port: u16, latency: u32, seconds: u64, out: &Path) -> anyhow::Result<std::process::Child> {
    crate::spawn_to(
        Command::new(bin).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
            "--input",
            &format!("srt://:{port}?mode=listener&latency={latency}"),
            "--duration",
            &format!("{seconds}s"),
        ]),
        out,
    )
}

/// One run's setting: the binary, the picture size, the link (`None`: loopback), the SRT
/// latency, how long, where the files go.
struct Run<'a> {
    bin: &'a str,
    size: &'a str,
    link: Option<&'a linkemu::LinkProfile>,
    latency: u32,
    seconds: u64,
    out: &'a Path,
    /// Our encoder's sound: `aac` or `opus`.
    codec: &'a str,
}

impl Run<'_> {
    /// The files' prefix.
    fn tag(&self) -> String {
        format!("lipsync-{}-{}-{}", self.size, self.link.map_or("loopback", |l| l.name.as_str()), self.codec)
    }

    /// The link as the table names it.
    fn link_name(&self) -> String {
        self.link.map_or("loopback".to_string(), |l| format!("{} at {LOSS_PCT} % loss", l.name))
    }
}

/// Our encoder to our decoder and to ffmpeg at once.
async fn ours(run: &Run<'_>) -> anyhow::Result<Vec<Row>> {
    let Run { bin, size, link, latency, seconds, out, codec } = *run;
    let tag = run.tag();
    let (dec_port, ff_port) = (crate::free_udp_port()?, crate::free_udp_port()?);
    let (to_dec, _r1) = through(link, dec_port, 1).await?;
    let (to_ff, _r2) = through(link, ff_port, 3).await?;
    let dec_file = out.join(format!("{tag}-ours-ours.jsonl"));
    let rec = out.join(format!("{tag}-ours-ffmpeg.ts"));
    let mut dec = decoder(bin, dec_port, latency, seconds + 6, &dec_file)?;
    let mut ff = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-i"])
        // ffmpeg's SRT latency is in microseconds.
        .arg(format!("srt://:{ff_port}?mode=listener&latency={}", latency * 1000))
        .args(["-c", "copy", "-t", &seconds.to_string()])
        .arg(&rec)
        .spawn()
        .context("ffmpeg")?;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut enc = Command::new(bin)
        .args(["-q", "encode", "--size", size, "--fps", "30", "--bitrate-kbps", "4000", "--x264-preset", "superfast"])
        .args(["--audio", codec, "--bitrate-mode", "fixed"])
        .args(["--output", &format!("srt://127.0.0.1:{to_dec}?mode=caller&latency={latency}")])
        .args(["--output", &format!("srt://127.0.0.1:{to_ff}?mode=caller&latency={latency}")])
        .args(["--duration", &format!("{}s", seconds + 3)])
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("telebridge encode")?;
    let (re, rd, rf) = tokio::task::spawn_blocking(move || (enc.wait(), dec.wait(), ff.wait())).await?;
    anyhow::ensure!(re?.success(), "the encoder failed");
    anyhow::ensure!(rd?.success(), "the decoder failed; see {}", dec_file.display());
    anyhow::ensure!(rf?.success(), "ffmpeg's recording failed");
    let ours = summary(&dec_file)?["av_offset"].clone();
    let read = Command::new("scripts/av-offset").arg("--json").arg(&rec).output().context("scripts/av-offset")?;
    let ffmpeg: serde_json::Value = serde_json::from_slice(&read.stdout)
        .with_context(|| format!("scripts/av-offset {}: {}", rec.display(), String::from_utf8_lossy(&read.stderr)))?;
    let link = run.link_name();
    Ok(vec![
        Row { size: size.into(), link: link.clone(), path: format!("ours ({codec}) -> ours"), figures: ours },
        Row { size: size.into(), link, path: format!("ours ({codec}) -> ffmpeg"), figures: ffmpeg },
    ])
}

/// ffmpeg's own correlated sources to our decoder.
async fn from_ffmpeg(run: &Run<'_>) -> anyhow::Result<Row> {
    let Run { bin, size, link, latency, seconds, out, .. } = *run;
    let tag = run.tag();
    let port = crate::free_udp_port()?;
    let (to, _relay) = through(link, port, 5).await?;
    let dec_file = out.join(format!("{tag}-ffmpeg-ours.jsonl"));
    let mut dec = decoder(bin, port, latency, seconds + 4, &dec_file)?;
    tokio::time::sleep(Duration::from_millis(800)).await;
    // The corner block the test source flashes: black, white on the frame at each whole second.
    let corner = "x=iw*7/8:y=ih*7/8:w=iw/8:h=ih/8:t=fill";
    let video = format!(
        "color=c=gray:s={size}:r=30,drawbox={corner}:color=black,drawbox={corner}:color=white:enable='lt(mod(t\\,1)\\,0.016)'"
    );
    let beep = "if(lt(mod(t\\,1)\\,0.1)\\,0.3*sin(2*PI*1000*t)\\,0)";
    let audio = format!("aevalsrc={beep}|{beep}:s=48000");
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-re", "-f", "lavfi", "-i", &video, "-f", "lavfi", "-i", &audio])
        .args(["-t", &seconds.to_string(), "-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency"])
        .args(["-b:v", "4M", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-f", "mpegts"])
        .arg(format!("srt://127.0.0.1:{to}?mode=caller&latency={}&pkt_size=1316", latency * 1000))
        .status()
        .context("ffmpeg")?;
    anyhow::ensure!(status.success(), "ffmpeg's sender failed");
    let rd = tokio::task::spawn_blocking(move || dec.wait()).await?;
    anyhow::ensure!(rd?.success(), "the decoder failed; see {}", dec_file.display());
    Ok(Row {
        size: size.into(),
        link: run.link_name(),
        path: "ffmpeg (aac) -> ours".into(),
        figures: summary(&dec_file)?["av_offset"].clone(),
    })
}

/// Every path at every size over loopback and the impaired link (quick: 720p on loopback).
pub async fn run(profiles: &Path, out: &Path, quick: bool) -> anyhow::Result<()> {
    let profiles = Profiles::load(profiles)?;
    let bin = crate::telebridge()?;
    let bin = bin.to_str().context("path")?;
    std::fs::create_dir_all(out)?;
    let impaired = profiles.get("transatlantic-100ms")?.clone();
    let (sizes, links, seconds): (&[&str], Vec<Option<&linkemu::LinkProfile>>, u64) = if quick {
        (&["1280x720"], vec![None], 10)
    } else {
        (&["1280x720", "1920x1080"], vec![None, Some(&impaired)], 60)
    };
    let mut rows = Vec::new();
    for link in &links {
        let latency = if link.is_some() { 250 } else { 120 };
        for size in sizes {
            let name = link.map_or("loopback", |l| l.name.as_str());
            for codec in ["aac", "opus"] {
                eprintln!(
                    "lip sync: {size} over {name}, {seconds} s: our encoder ({codec}) to our decoder and ffmpeg ..."
                );
                let run = Run { bin, size, link: *link, latency, seconds, out, codec };
                rows.extend(ours(&run).await?);
                if codec == "aac" {
                    eprintln!("lip sync: {size} over {name}, {seconds} s: ffmpeg to our decoder ...");
                    rows.push(from_ffmpeg(&run).await?);
                }
            }
        }
    }
    println!("| size | link | sender -> receiver | events | offset p50 | min | max | within -60/+40 ms |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut csv = String::from("size,link,path,events,p50_ms,min_ms,max_ms\n");
    let mut all_within = true;
    for r in &rows {
        let x = &r.figures;
        let within = f(&x["min_ms"]) >= -60.0 && f(&x["max_ms"]) <= 40.0;
        all_within &= within;
        println!(
            "| {} | {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            r.size,
            r.link,
            r.path,
            x["events"],
            f(&x["p50_ms"]),
            f(&x["min_ms"]),
            f(&x["max_ms"]),
            if within { "yes" } else { "**no**" }
        );
        csv.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.size,
            r.link,
            r.path,
            x["events"],
            f(&x["p50_ms"]),
            f(&x["min_ms"]),
            f(&x["max_ms"])
        ));
        let least = if quick { 5 } else { seconds - 10 };
        anyhow::ensure!(
            x["events"].as_u64().unwrap_or(0) >= least,
            "{} {} {}: {} events, expected at least {least}: {x}",
            r.size,
            r.link,
            r.path,
            x["events"]
        );
    }
    std::fs::write(out.join("lipsync.csv"), csv)?;
    println!(
        "\nCSV: {}/lipsync.csv; per-second lines and ffmpeg's recordings: {}/lipsync-*",
        out.display(),
        out.display()
    );
    anyhow::ensure!(all_within, "an offset outside EBU R37's -60/+40 ms");
    if quick {
        eprintln!("quick check passed: each path measured its lip sync within tolerance");
    }
    Ok(())
}
