# shellcheck shell=bash
# Shared helpers for the benchmark scripts: steady-state CPU and RSS of a running process.

tck=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
free_udp_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# sample_process PID WARMUP SECONDS: after WARMUP s, samples PID for SECONDS s and prints
# "CPU% RSS_MEAN_MB RSS_PEAK_MB" (CPU: 100 = one core).
sample_process() {
  local pid=$1 warmup=$2 seconds=$3
  sleep "$warmup"
  local t0; t0=$(ticks "$pid")
  local sum=0 peak=0 n=0 r
  for _ in $(seq "$seconds"); do
    sleep 1
    r=$(rss_kb "$pid"); sum=$((sum + r)); n=$((n + 1)); [ "$r" -gt "$peak" ] && peak=$r
  done
  local t1; t1=$(ticks "$pid")
  awk -v d=$((t1 - t0)) -v t="$tck" -v s="$seconds" -v m=$((sum / n / 1024)) -v p=$((peak / 1024)) \
    'BEGIN {printf "%.1f %d %d\n", 100*d/t/s, m, p}'
}
