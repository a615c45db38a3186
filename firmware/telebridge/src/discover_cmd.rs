//! `telebridge discover`: the boxes on the local network, as the Pair page lists them.

use std::process::ExitCode;
use std::time::Duration;

use crate::args::DiscoverArgs;
use crate::exit::bad_input;

/// The longest `--wait`.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Browses for `--wait`, then prints the boxes found: a table, or one JSON object per line.
pub(crate) fn discover(args: DiscoverArgs) -> ExitCode {
    if args.wait > MAX_WAIT || args.wait < Duration::from_millis(100) {
        return bad_input(format!("--wait: {:?} is not between 100ms and 60s", args.wait));
    }
    if let Some(ip) = args.on {
        // mdns-sd would browse on no interface at all and answer nothing: say why instead.
        let own = telebridge_pairing::addresses::own_addresses();
        if !ip.is_loopback() && !own.contains(&ip) {
            let listed: Vec<String> = own.iter().map(ToString::to_string).collect();
            return bad_input(format!(
                "--on {ip}: no network interface of this machine has that address (its addresses: {})",
                if listed.is_empty() { "none but loopback".to_string() } else { listed.join(", ") }
            ));
        }
    }
    let boxes = match telebridge_discovery::browse_for(args.wait, args.on) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        for b in &boxes {
            match serde_json::to_string(b) {
                Ok(line) => println!("{line}"),
                Err(e) => eprintln!("error: {e}"),
            }
        }
        return ExitCode::SUCCESS;
    }
    if boxes.is_empty() {
        eprintln!("no Telebridge box answered within {:?}", args.wait);
        return ExitCode::SUCCESS;
    }
    println!("{:<24} {:<8} {:<9} PANEL", "NAME", "ROLE", "PAIRING");
    for b in &boxes {
        println!("{:<24} {:<8} {:<9} http://{}/", b.name, b.role.name(), b.pairing.name(), b.panel);
    }
    ExitCode::SUCCESS
}
