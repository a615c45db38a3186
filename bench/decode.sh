#!/usr/bin/env bash
# The decoder's figures (issue 3): added glass-to-glass latency at 720p30 and 1080p30 with SRT
# latency 120 ms on loopback (median of at least 300 frames), and the decoder's CPU and RSS
# beside ffmpeg decoding the same stream, in one run.
#   bench/decode.sh [SECONDS]     (default 20 per CPU run)
# Prints Markdown tables for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
# shellcheck source=bench/lib.sh
. bench/lib.sh
cargo build --release --quiet --bin telebridge
bin=target/release/telebridge

echo "### Glass-to-glass latency (telebridge measure --sizes 1280x720,1920x1080 --seconds 12 --latency-ms 120)"
echo
"$bin" -q measure --sizes 1280x720,1920x1080 --seconds 12 --latency-ms 120 --x264-preset superfast
echo
echo "### Decoder CPU and memory (${seconds} s steady state after 5 s; 100 % = one core)"
echo
echo "| decoder | stream | CPU | RSS mean | RSS peak |"
echo "|---|---|---|---|---|"
for size in 1280x720 1920x1080; do
  for who in telebridge ffmpeg; do
    port=$(free_udp_port)
    if [ "$who" = telebridge ]; then
      "$bin" -q decode --input "srt://:$port?mode=listener&latency=120" --sink fake > /dev/null 2>&1 &
    else
      ffmpeg -nostdin -loglevel error -i "srt://127.0.0.1:$port?mode=listener&latency=120000" -f null - > /dev/null 2>&1 &
    fi
    rx=$!
    sleep 0.8
    "$bin" -q encode --source test --size "$size" --fps 30 --bitrate-kbps 4000 --x264-preset ultrafast \
      --output "srt://127.0.0.1:$port?mode=caller&latency=120" > /dev/null 2>&1 &
    tx=$!
    read -r cpu mean peak < <(sample_process "$rx" 5 "$seconds")
    kill -INT "$tx" 2>/dev/null || true; wait "$tx" 2>/dev/null || true
    kill -INT "$rx" 2>/dev/null || true; wait "$rx" 2>/dev/null || true
    label="telebridge decode --sink fake"
    [ "$who" = ffmpeg ] && label="ffmpeg -i srt:// -f null -"
    printf '| %s | %sp30 H.264 4 Mbit/s + AAC | %s %% | %d MB | %d MB |\n' "$label" "$size" "$cpu" "$mean" "$peak"
  done
done
