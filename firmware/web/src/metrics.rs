//! `/metrics` in Prometheus' text format: the state, the uptime, each output's SRT counters
//! (RTT, loss, retransmits, drops, rate), the encoder's fps and bitrate, the decoder's frames
//! and latency. Names carry no secrets: outputs are labelled by name, URLs never appear.

use std::fmt::Write as _;

use telebridge_contract::daemon::DaemonStatus;
use telebridge_contract::machine::State;
use telebridge_contract::sample::MediaSample;
use telebridge_contract::sound::ChannelLevel;
use telebridge_contract::srt::SrtStats;
use telebridge_contract::uplink::{LinkState, LinkStatus};

fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', " ")
}

struct Out(String);

impl Out {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn val(&mut self, name: &str, labels: &str, v: f64) {
        if labels.is_empty() {
            let _ = writeln!(self.0, "{name} {v}");
        } else {
            let _ = writeln!(self.0, "{name}{{{labels}}} {v}");
        }
    }
}

/// One SRT series: the metric, its type, how to read it from the counters, its help.
type Series = (&'static str, &'static str, fn(&SrtStats) -> f64, &'static str);

/// The sound's meters: each running stream's peak and RMS per channel, and its silence.
fn sound(o: &mut Out, s: &DaemonStatus) {
    if s.sound.is_empty() {
        return;
    }
    let each = |o: &mut Out, name: &str, read: fn(&ChannelLevel) -> f64| {
        for l in &s.sound {
            for (i, c) in l.channels.iter().enumerate() {
                o.val(name, &format!("stream=\"{}\",channel=\"{i}\"", l.stream.name()), read(c));
            }
        }
    };
    o.head(
        "telebridge_audio_peak_dbfs",
        "gauge",
        "The sound's peak over the meter's last 100 ms, per stream and channel",
    );
    each(o, "telebridge_audio_peak_dbfs", |c| c.peak_db);
    o.head(
        "telebridge_audio_rms_dbfs",
        "gauge",
        "The sound's RMS over the meter's last 100 ms, per stream and channel",
    );
    each(o, "telebridge_audio_rms_dbfs", |c| c.rms_db);
    o.head("telebridge_audio_silent_seconds", "gauge", "How long every channel of the stream has been below -60 dBFS");
    for l in &s.sound {
        o.val("telebridge_audio_silent_seconds", &format!("stream=\"{}\"", l.stream.name()), l.silent_s);
    }
}

/// Renders the metrics.
pub fn render(s: &DaemonStatus) -> String {
    let mut o = Out(String::new());
    o.head("telebridge_info", "gauge", "Always 1: the box's name and role, to tell the boxes of a fleet apart");
    o.val("telebridge_info", &format!("name=\"{}\",role=\"{}\"", label(&s.name), label(s.role)), 1.0);
    o.head("telebridge_state", "gauge", "1 for the state the box is in");
    for st in State::ALL {
        o.val("telebridge_state", &format!("state=\"{}\"", st.name()), if s.machine.state == st { 1.0 } else { 0.0 });
    }
    o.head("telebridge_uptime_seconds", "counter", "Seconds since the daemon started");
    o.val("telebridge_uptime_seconds", "", s.uptime_s as f64);
    o.head("telebridge_tally", "gauge", "1 while the box's picture is on air (the tally light)");
    o.val("telebridge_tally", "", if s.tally.on_air { 1.0 } else { 0.0 });
    o.head("telebridge_input_signal", "gauge", "1 while the input has a signal (frames arrive from the source)");
    o.val("telebridge_input_signal", "", if s.input.signal { 1.0 } else { 0.0 });
    if let Some(m) = s.media.as_ref().and_then(MediaSample::sending) {
        o.head("telebridge_encoder_fps", "gauge", "Frames encoded per second");
        o.val("telebridge_encoder_fps", "", m.encoder.fps);
        o.head("telebridge_encoder_bitrate_kbps", "gauge", "Encoded video bitrate");
        o.val("telebridge_encoder_bitrate_kbps", "", m.encoder.bitrate_kbps);
        o.head("telebridge_encoder_frames_total", "counter", "Frames encoded");
        o.val("telebridge_encoder_frames_total", "", m.encoder.frames_encoded as f64);
        if let Some(r) = &m.rate {
            o.head("telebridge_rate_video_kbps", "gauge", "The video bitrate the adaptive bitrate chose");
            o.val("telebridge_rate_video_kbps", "", f64::from(r.video_kbps));
            o.head(
                "telebridge_rate_max_video_kbps",
                "gauge",
                "The most the adaptive bitrate goes to (video.bitrate_kbps)",
            );
            o.val("telebridge_rate_max_video_kbps", "", f64::from(r.max_video_kbps));
        }
    }
    sound(&mut o, s);
    let decoding = match &s.media {
        Some(MediaSample::Decoder(m)) => Some(&**m),
        Some(MediaSample::Bridge(b)) => b.receiving.as_ref(),
        _ => None,
    };
    if let Some(m) = decoding {
        o.head("telebridge_decoder_frames_total", "counter", "Frames decoded");
        o.val("telebridge_decoder_frames_total", "", m.decoder.frames_decoded as f64);
        o.head("telebridge_decoder_fps", "gauge", "Frames decoded per second");
        o.val("telebridge_decoder_fps", "", m.decoder.fps);
        if let Some(l) = &m.latency {
            o.head("telebridge_decoder_latency_ms", "gauge", "Glass-to-glass latency over the last 5 s");
            o.val("telebridge_decoder_latency_ms", "quantile=\"0.5\"", l.p50_ms);
            o.val("telebridge_decoder_latency_ms", "quantile=\"0.95\"", l.p95_ms);
        }
        if let Some(a) = &m.av_offset {
            o.head(
                "telebridge_decoder_av_offset_ms",
                "gauge",
                "Lip sync over the last 10 s: the picture's time less the sound's (positive: the sound first)",
            );
            o.val("telebridge_decoder_av_offset_ms", "quantile=\"0.5\"", a.p50_ms);
            o.val("telebridge_decoder_av_offset_ms", "quantile=\"0\"", a.min_ms);
            o.val("telebridge_decoder_av_offset_ms", "quantile=\"1\"", a.max_ms);
        }
    }
    // SRT counters per output (encoder) or for the input (decoder).
    let links = s.media.as_ref().map(MediaSample::all_links).unwrap_or_default();
    let series: [Series; 14] = [
        ("telebridge_srt_rtt_ms", "gauge", |x| x.rtt_ms, "Round-trip time"),
        ("telebridge_srt_send_rate_mbps", "gauge", |x| x.send_rate_mbps, "Send rate"),
        ("telebridge_srt_receive_rate_mbps", "gauge", |x| x.receive_rate_mbps, "Receive rate"),
        ("telebridge_srt_packets_sent_total", "counter", |x| x.packets_sent as f64, "Packets sent"),
        (
            "telebridge_srt_packets_lost_total",
            "counter",
            |x| x.packets_lost as f64,
            "Packets reported lost by the receiver",
        ),
        (
            "telebridge_srt_packets_retransmitted_total",
            "counter",
            |x| x.packets_retransmitted as f64,
            "Packets retransmitted",
        ),
        ("telebridge_srt_packets_dropped_total", "counter", |x| x.packets_dropped as f64, "Packets dropped (too late)"),
        ("telebridge_srt_packets_received_total", "counter", |x| x.packets_received as f64, "Packets received"),
        (
            "telebridge_srt_packets_received_lost_total",
            "counter",
            |x| x.packets_received_lost as f64,
            "Packets found missing on the way in (recovered or not)",
        ),
        (
            "telebridge_srt_packets_received_dropped_total",
            "counter",
            |x| x.packets_received_dropped as f64,
            "Packets the receiver gave up on (not recovered before their play time)",
        ),
        ("telebridge_srt_bandwidth_mbps", "gauge", |x| x.bandwidth_mbps, "Estimated link bandwidth"),
        ("telebridge_srt_send_buffer_ms", "gauge", |x| x.send_buffer_ms as f64, "Sent and not yet acknowledged"),
        ("telebridge_srt_receive_buffer_ms", "gauge", |x| x.receive_buffer_ms as f64, "Received and not yet delivered"),
        ("telebridge_srt_flight_packets", "gauge", |x| x.flight_packets as f64, "Packets in flight"),
    ];
    if !links.is_empty() {
        for (metric, kind, value, help) in series {
            o.head(metric, kind, help);
            for l in &links {
                o.val(metric, &format!("output=\"{}\"", label(l.name)), value(l.srt));
            }
        }
        o.head("telebridge_output_up", "gauge", "1 when the output (or input) carries the stream");
        for l in &links {
            o.val("telebridge_output_up", &format!("output=\"{}\"", label(l.name)), if l.up { 1.0 } else { 0.0 });
        }
    }
    if let Some(m) = &s.media {
        uplinks(&mut o, m.outputs());
    }
    o.0
}

/// One uplink series: the metric, its type, how to read it, its help.
type UplinkSeries = (&'static str, &'static str, fn(&LinkStatus) -> f64, &'static str);

/// Each bonded output's uplinks, labelled by output and uplink (interface or address).
fn uplinks(o: &mut Out, outputs: &[telebridge_contract::srt::OutputStatus]) {
    let bonded: Vec<&telebridge_contract::srt::OutputStatus> =
        outputs.iter().filter(|x| !x.uplinks.is_empty()).collect();
    if bonded.is_empty() {
        return;
    }
    let series: [UplinkSeries; 6] = [
        (
            "telebridge_uplink_up",
            "gauge",
            |u| f64::from(u8::from(u.state == LinkState::Up)),
            "1 while the uplink carries the stream",
        ),
        (
            "telebridge_uplink_rtt_ms",
            "gauge",
            |u| u.rtt_ms.unwrap_or(f64::NAN),
            "Round trip over the uplink (echoed keepalives)",
        ),
        ("telebridge_uplink_rate_kbps", "gauge", |u| u.rate_kbps, "What the uplink sent over the last second"),
        ("telebridge_uplink_share_percent", "gauge", |u| u.share_pct, "The uplink's share of the bonded stream"),
        ("telebridge_uplink_packets_sent_total", "counter", |u| u.sent as f64, "Packets sent over the uplink"),
        ("telebridge_uplink_deaths_total", "counter", |u| u.deaths as f64, "Times the uplink was found dead"),
    ];
    for (metric, kind, value, help) in series {
        o.head(metric, kind, help);
        for out in &bonded {
            for u in &out.uplinks {
                o.val(metric, &format!("output=\"{}\",uplink=\"{}\"", label(&out.name), label(&u.name)), value(u));
            }
        }
    }
}
