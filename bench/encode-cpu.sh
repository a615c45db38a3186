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
tck=$(getconf CLK_TCK)
cargo build --release --quiet --bin telebridge
bin=target/release/telebridge

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# measure NAME -- COMMAND... : runs COMMAND (which sends to $port), prints one table row.
measure() {
  local name=$1; shift; shift
  local port; port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  srt-live-transmit -q "srt://:$port?mode=listener" file://con > /dev/null 2>&1 &
  local rx=$!
  sleep 0.5
  local cmd=("${@//PORT/$port}")
  "${cmd[@]}" > /dev/null 2>&1 &
  local pid=$!
  sleep "$warmup"
  local t0; t0=$(ticks "$pid")
  local sum=0 peak=0 n=0 r
  for _ in $(seq "$seconds"); do
    sleep 1
    r=$(rss_kb "$pid"); sum=$((sum + r)); n=$((n + 1)); [ "$r" -gt "$peak" ] && peak=$r
  done
  local t1; t1=$(ticks "$pid")
  kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  kill "$rx" 2>/dev/null || true; wait "$rx" 2>/dev/null || true
  local cpu; cpu=$(awk -v d=$((t1 - t0)) -v t="$tck" -v s="$seconds" 'BEGIN {printf "%.1f", 100*d/t/s}')
  printf '| %s | %s %% | %d MB | %d MB |\n' "$name" "$cpu" $((sum / n / 1024)) $((peak / 1024))
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
