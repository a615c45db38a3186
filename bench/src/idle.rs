//! The appliance at rest: `telebridge run` with no pipeline (not live), with simulated GPIO
//! (a thread polling the pins every 10 ms) and with none. Resident memory after start-up and
//! CPU over a quiet period, read from /proc.

use std::process::Command;
use std::time::{Duration, Instant};

pub fn run(quick: bool) -> anyhow::Result<()> {
    let bin = crate::telebridge()?;
    let seconds = if quick { 5 } else { 30 };
    println!("| daemon, idle (not live) | RSS | peak RSS | CPU over {seconds} s |\n|---|---|---|---|");
    // A box past its first start (a password is set), so no setup screen is up.
    let config = std::env::temp_dir().join(format!("telebridge-idle-{}.toml", std::process::id()));
    std::fs::write(&config, "[web]\npassword_hash = \"$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g\"\n")?;
    let mut worst = (0.0f64, 0.0f64);
    let mut rows_ok = true;
    for (label, sim) in [("--sim (simulated GPIO)", true), ("no GPIO", false)] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut cmd = Command::new(&bin);
        cmd.args(["-q", "run", "--http", &format!("127.0.0.1:{port}"), "--config"]).arg(&config);
        if sim {
            cmd.arg("--sim");
        }
        let mut child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn()?;
        let pid = child.id();
        std::thread::sleep(Duration::from_secs(2));
        let (t0, at) = (crate::ticks(pid)?, Instant::now());
        std::thread::sleep(Duration::from_secs(seconds));
        let cpu = (crate::ticks(pid)? - t0) as f64 / 100.0 / at.elapsed().as_secs_f64() * 100.0;
        let rss = crate::rss_kb(pid) as f64 / 1024.0;
        let peak = crate::proc_status_kb(pid, "VmHWM") as f64 / 1024.0;
        rows_ok &= rss > 1.0 && matches!(child.try_wait(), Ok(None));
        let _ = child.kill();
        let _ = child.wait();
        println!("| {label} | {rss:.1} MB | {peak:.1} MB | {cpu:.2} % |");
        worst = (worst.0.max(rss), worst.1.max(cpu));
    }
    let _ = std::fs::remove_file(&config);
    if quick {
        anyhow::ensure!(worst.0 > 1.0 && rows_ok, "a daemon did not run");
        eprintln!("quick check passed: idle daemon measured (RSS {:.1} MB, CPU {:.2} %)", worst.0, worst.1);
    }
    Ok(())
}
