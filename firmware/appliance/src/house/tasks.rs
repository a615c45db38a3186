//! What runs beside the panel's requests, for as long as the daemon runs: the history the panel
//! graphs (a row a second), the paired box's messages heard, the router's mapping kept, the HDMI
//! output's pairing words kept current (and the button's request for a code answered) and the
//! tally told to the paired box.

use std::sync::Arc;

use telebridge_contract::daemon::{Daemon, DaemonCommand};
use telebridge_web::history::History;
use telebridge_web::pairing::{PairingView, PeerMessage};
use telebridge_web::{AppState, ConfigStore, Pairing};
use tracing::{info, warn};

/// What the tasks work with: the daemon, the configuration as it runs, the pairing.
#[derive(Debug, Clone)]
struct Pieces {
    daemon: Arc<dyn Daemon>,
    store: Arc<ConfigStore>,
    pairing: Arc<Pairing>,
}

/// Starts them all over the panel's `state` (the same daemon, configuration, pairing and
/// history the panel serves), each until the daemon goes away.
pub fn spawn(state: &AppState) {
    let pieces = Pieces { daemon: state.daemon.clone(), store: state.store.clone(), pairing: state.pairing.clone() };
    spawn_history(&pieces, state.history.clone());
    spawn_listener(&pieces);
    spawn_mapping_keeper(&pieces);
    spawn_screen_keeper(&pieces);
    spawn_tally_sender(&pieces);
}

/// Records one history row a second until the daemon goes away.
fn spawn_history(s: &Pieces, history: Arc<History>) {
    let mut status = s.daemon.status();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            if status.has_changed().is_err() {
                break;
            }
            let st = status.borrow_and_update().clone();
            let unix =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            history.record(unix, st.machine.state, st.media.as_ref());
        }
    });
}

/// Hears the paired box's control messages for as long as the daemon runs.
fn spawn_listener(s: &Pieces) {
    let Some(mut rx) = s.daemon.peer_messages() else { return };
    let s = s.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(m) => match s.pairing.on_peer_message(&m) {
                    Some(PeerMessage::Taken(live)) => {
                        let _ = s.daemon.commands().send(DaemonCommand::FarLive(live)).await;
                    }
                    Some(PeerMessage::Farewell(ended)) => {
                        let config = s.store.running();
                        s.pairing.forget_mapping(&ended, config.as_ref());
                        s.pairing.announce(config.as_ref(), &s.daemon.commands()).await;
                    }
                    None => {}
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

/// Tells the paired box four times a second whether this box has its picture on air (this box's
/// cue or mixer contact), on the bridge's connection, for its tally light (the messages stop with
/// the connection, and the far light goes out).
fn spawn_tally_sender(s: &Pieces) {
    let s = s.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
        loop {
            tick.tick().await;
            let (running, live) = {
                let rx = s.daemon.status();
                let st = rx.borrow();
                (st.running, st.tally.takes_far)
            };
            let bridge = s.store.running().is_some_and(|c| c.role == telebridge_config::Role::Bridge);
            if !(running && bridge) {
                continue;
            }
            if let Some(message) = s.pairing.taken_message(live) {
                if s.daemon.commands().send(DaemonCommand::ToPeer(message)).await.is_err() {
                    break;
                }
            }
        }
    });
}

/// What the HDMI output says of the pairing while it shows no picture: the code to type into
/// the other box, or that this bridge is not paired (nothing for other roles, or when paired).
fn screen_text(view: &PairingView, bridge: bool) -> Option<String> {
    match (&view.code, &view.paired) {
        (Some(code), _) => {
            Some(format!("Pairing code {code}\nType it into the other box's panel (Pair) with this box's address"))
        }
        (None, None) if bridge => Some(match &view.last {
            Some(last) => format!("Not paired ({last}): pair in the panel, or hold the button 10 s for a code"),
            None => "Not paired: pair in the panel, or hold the button 10 s for a code".into(),
        }),
        _ => None,
    }
}

/// Keeps the HDMI output's pairing words current (the code changes when one is burnt or
/// expires), and opens pairing when the box's button asks for it (a long press, bridge role).
fn spawn_screen_keeper(s: &Pieces) {
    let s = s.clone();
    tokio::spawn(async move {
        let mut status = s.daemon.status();
        let mut requests = status.borrow().pairing_requests;
        let mut shown: Option<String> = None;
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let now = status.borrow_and_update().pairing_requests;
                    if now > requests {
                        requests = now;
                        info!("the button asked for a pairing code");
                        if let Err(e) = s.pairing.open(s.store.running().as_ref()) {
                            warn!(error = ?e, "cannot open pairing");
                        }
                    }
                }
                _ = tick.tick() => {}
            }
            let config = s.store.running();
            let bridge = config.as_ref().is_some_and(|c| c.role == telebridge_config::Role::Bridge);
            let text = screen_text(&s.pairing.view(config.as_ref()), bridge);
            if text != shown {
                shown = text.clone();
                if s.daemon.commands().send(DaemonCommand::PairingText(text)).await.is_err() {
                    break;
                }
            }
        }
    });
}

/// Keeps the router's mapping while this box listens through it: asked again at start (it may
/// have lapsed while the box was off) and every [`telebridge_web::reach::RENEW_EVERY`].
fn spawn_mapping_keeper(s: &Pieces) {
    let s = s.clone();
    tokio::spawn(async move {
        loop {
            s.pairing.keep_mapping(s.store.running().as_ref()).await;
            tokio::time::sleep(telebridge_web::reach::RENEW_EVERY).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hdmi_output_shows_the_code_or_says_the_bridge_is_not_paired() {
        let view =
            |code: Option<&str>| PairingView { code: code.map(str::to_string), paired: None, last: None, reach: None };
        assert_eq!(
            screen_text(&view(Some("7Q4-KM2")), true).as_deref(),
            Some("Pairing code 7Q4-KM2\nType it into the other box's panel (Pair) with this box's address")
        );
        assert_eq!(
            screen_text(&view(None), true).as_deref(),
            Some("Not paired: pair in the panel, or hold the button 10 s for a code")
        );
        assert_eq!(screen_text(&view(None), false), None, "an encoder says nothing of pairing");
        let unpaired =
            PairingView { last: Some("studio-a unpaired this box: pair again to connect".into()), ..view(None) };
        assert!(screen_text(&unpaired, true).unwrap().starts_with("Not paired (studio-a unpaired this box"));
    }
}
