#!/usr/bin/env bash
# CPU and memory of `telebridge encode` against ffmpeg doing the same work, in one run:
# a 30 fps test pattern with a tone, x264 (ultrafast, zerolatency) at 4 Mbit/s, AAC, MPEG-TS
# over SRT to srt-live-transmit on loopback. Steady state only: CPU is counted from second 5 to
# second 5+SECONDS; RSS is sampled every second (mean and peak).
#   bench/encode-cpu.sh [SECONDS]     (default 20 per run)
# Prints a Markdown table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
warmup=5
# shellcheck source=bench/lib.sh
. bench/lib.sh
cargo build --release --quiet --bin telebridge
bin=target/release/telebridge

# measure NAME -- COMMAND... : runs COMMAND (which sends to $port), prints one table row.
measure() {
  local name=$1; shift; shift
  local port; port=$(free_udp_port)
  srt-live-transmit -q "srt://:$port?mode=listener" file://con > /dev/null 2>&1 &
  local rx=$!
  sleep 0.5
  local cmd=("${@//PORT/$port}")
  "${cmd[@]}" > /dev/null 2>&1 &
  local pid=$!
  local cpu mean peak
  read -r cpu mean peak < <(sample_process "$pid" "$warmup" "$seconds")
  kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  kill "$rx" 2>/dev/null || true; wait "$rx" 2>/dev/null || true
  printf '| %s | %s %% | %d MB | %d MB |\n' "$name" "$cpu" "$mean" "$peak"
}

echo "| run (${seconds} s steady state, 1 core = 100 %) | CPU | RSS mean | RSS peak |"
echo "|---|---|---|---|"
for size in 1280x720 1920x1080; do
  measure "telebridge encode ${size}p30 x264 ultrafast 4 Mbit/s" -- \
    "$bin" -q encode --source test --size "$size" --fps 30 --bitrate-kbps 4000 --x264-preset ultrafast \
      --output "srt://127.0.0.1:PORT?mode=caller"
  measure "ffmpeg testsrc2 ${size}p30 libx264 ultrafast 4 Mbit/s" -- \
    ffmpeg -nostdin -loglevel error -re -f lavfi -i "testsrc2=size=$size:rate=30" -f lavfi -i "sine=frequency=1000:sample_rate=48000" \
      -c:v libx264 -preset ultrafast -tune zerolatency -b:v 4000k -maxrate 4000k -bufsize 4000k -g 30 \
      -c:a aac -b:a 128k -f mpegts "srt://127.0.0.1:PORT?mode=caller&pkt_size=1316"
done
