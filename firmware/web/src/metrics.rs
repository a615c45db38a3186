//! `/metrics` in Prometheus' text format: the state, the uptime, each output's SRT counters
//! (RTT, loss, retransmits, drops, rate), the encoder's fps and bitrate, the decoder's frames
//! and latency. Names carry no secrets: outputs are labelled by name, URLs never appear.

use std::fmt::Write as _;

use serde_json::Value;
use telebridge_appliance::DaemonStatus;

use crate::history::STATES;

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

/// Renders the metrics.
pub fn render(s: &DaemonStatus) -> String {
    let mut o = Out(String::new());
    let state = serde_json::to_value(s.machine.state).unwrap_or_default();
    o.head("telebridge_state", "gauge", "1 for the state the box is in");
    for st in STATES {
        o.val("telebridge_state", &format!("state=\"{st}\""), if state == st { 1.0 } else { 0.0 });
    }
    o.head("telebridge_uptime_seconds", "counter", "Seconds since the daemon started");
    o.val("telebridge_uptime_seconds", "", s.uptime_s as f64);
    o.head("telebridge_input_signal", "gauge", "1 while the input has a signal (frames arrive from the source)");
    o.val("telebridge_input_signal", "", if s.input.signal { 1.0 } else { 0.0 });
    let media = s.media.as_ref().cloned().unwrap_or(Value::Null);
    if let Some(e) = media.get("encoder") {
        if e.get("frames_encoded").is_some() {
            o.head("telebridge_encoder_fps", "gauge", "Frames encoded per second");
            o.val("telebridge_encoder_fps", "", e["fps"].as_f64().unwrap_or(0.0));
            o.head("telebridge_encoder_bitrate_kbps", "gauge", "Encoded video bitrate");
            o.val("telebridge_encoder_bitrate_kbps", "", e["bitrate_kbps"].as_f64().unwrap_or(0.0));
            o.head("telebridge_encoder_frames_total", "counter", "Frames encoded");
            o.val("telebridge_encoder_frames_total", "", e["frames_encoded"].as_f64().unwrap_or(0.0));
        }
    }
    if let Some(d) = media.get("decoder") {
        o.head("telebridge_decoder_frames_total", "counter", "Frames decoded");
        o.val("telebridge_decoder_frames_total", "", d["frames_decoded"].as_f64().unwrap_or(0.0));
        o.head("telebridge_decoder_fps", "gauge", "Frames decoded per second");
        o.val("telebridge_decoder_fps", "", d["fps"].as_f64().unwrap_or(0.0));
        if let Some(p50) = media["latency"]["p50_ms"].as_f64() {
            o.head("telebridge_decoder_latency_ms", "gauge", "Glass-to-glass latency over the last 5 s");
            o.val("telebridge_decoder_latency_ms", "quantile=\"0.5\"", p50);
            o.val(
                "telebridge_decoder_latency_ms",
                "quantile=\"0.95\"",
                media["latency"]["p95_ms"].as_f64().unwrap_or(0.0),
            );
        }
    }
    // SRT counters per output (encoder) or for the input (decoder).
    let mut links: Vec<(String, &Value, String)> = Vec::new();
    if let Some(outs) = media.get("outputs").and_then(|v| v.as_array()) {
        for x in outs {
            let name = x["name"].as_str().unwrap_or("").to_string();
            links.push((name, &x["srt"], x["state"].as_str().unwrap_or("").to_string()));
        }
    }
    if let Some(input) = media.get("input") {
        links.push(("input".into(), &input["srt"], input["state"].as_str().unwrap_or("").to_string()));
    }
    let series: [(&str, &str, &str, &str); 8] = [
        ("telebridge_srt_rtt_ms", "gauge", "rtt_ms", "Round-trip time"),
        ("telebridge_srt_send_rate_mbps", "gauge", "send_rate_mbps", "Send rate"),
        ("telebridge_srt_receive_rate_mbps", "gauge", "receive_rate_mbps", "Receive rate"),
        ("telebridge_srt_packets_sent_total", "counter", "packets_sent", "Packets sent"),
        ("telebridge_srt_packets_lost_total", "counter", "packets_lost", "Packets reported lost by the receiver"),
        ("telebridge_srt_packets_retransmitted_total", "counter", "packets_retransmitted", "Packets retransmitted"),
        ("telebridge_srt_packets_dropped_total", "counter", "packets_dropped", "Packets dropped (too late)"),
        ("telebridge_srt_packets_received_total", "counter", "packets_received", "Packets received"),
    ];
    if !links.is_empty() {
        for (metric, kind, key, help) in series {
            o.head(metric, kind, help);
            for (name, srt, _) in &links {
                o.val(metric, &format!("output=\"{}\"", label(name)), srt[key].as_f64().unwrap_or(0.0));
            }
        }
        o.head("telebridge_output_up", "gauge", "1 when the output (or input) carries the stream");
        for (name, _, state) in &links {
            let up = matches!(state.as_str(), "live" | "receiving");
            o.val("telebridge_output_up", &format!("output=\"{}\"", label(name)), if up { 1.0 } else { 0.0 });
        }
    }
    o.0
}
