//! The HDMI output while no picture is shown: the setup code, the pairing code, or the box's
//! address.

use std::time::Instant;

use telebridge_config::ValidConfig;

use tracing::warn;

/// The HDMI output when no picture is shown there: the first-run setup code, or (for 10 s after
/// a long press) the box's name and address. A decoder that is receiving owns the screen.
#[derive(Default)]
pub(super) struct Screen {
    /// The setup text the web side asked for.
    pub(super) setup: Option<String>,
    /// The pairing's words the web side asked for (the code shown, or "not paired").
    pub(super) pairing: Option<String>,
    /// The address card is up until then.
    pub(super) show_until: Option<Instant>,
    pub(super) display: Option<telebridge_media::display::Display>,
    pub(super) failed: bool,
}

impl Screen {
    pub(super) fn setup_card(&self, config: &ValidConfig) -> String {
        let mut text = format!("{}\nPanel: http://{}/", config.name, config.http_listen);
        for s in [&self.setup, &self.pairing].into_iter().flatten() {
            text = format!("{text}\n{s}");
        }
        text
    }

    /// The text that should be up now.
    pub(super) fn wanted(&self, config: &ValidConfig) -> Option<String> {
        if self.show_until.is_some_and(|t| Instant::now() < t) {
            return Some(self.setup_card(config));
        }
        match (&self.setup, &self.pairing) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(p)) => Some(self.setup_card_with(p, config)),
            (None, None) => None,
        }
    }

    fn setup_card_with(&self, pairing: &str, config: &ValidConfig) -> String {
        format!("{}\n{pairing}\nPanel: http://{}/", config.name, config.http_listen)
    }

    /// The tally: the slate framed in red while the box is on air.
    pub(super) fn set_on_air(&self, on_air: bool) {
        if let Some(d) = &self.display {
            d.set_on_air(on_air);
        }
    }

    pub(super) fn shown(&self) -> Option<String> {
        self.display.as_ref().map(|d| d.slate_text())
    }

    pub(super) fn update(&mut self, config: &ValidConfig, decoder_busy: bool) {
        let want = if decoder_busy { None } else { self.wanted(config) };
        match (want, self.display.as_ref()) {
            (Some(text), Some(d)) => d.set_slate_text(&text),
            (Some(text), None) if !self.failed => {
                let started = telebridge_media::init().map_err(|e| e.to_string()).and_then(|()| {
                    let kind = telebridge_media::display::SinkKind::from_config(&config.decoder_sink);
                    telebridge_media::display::Display::start(kind, (1280, 720), text).map_err(|e| e.to_string())
                });
                match started {
                    Ok(d) => self.display = Some(d),
                    Err(e) => {
                        warn!(error = %e, "cannot show the setup text on the HDMI output");
                        self.failed = true;
                    }
                }
            }
            (None, Some(_)) => self.close(),
            _ => {}
        }
    }

    /// Takes the text down; the display stops on a thread of its own (it waits for its sink to
    /// finish, which must not hold up the main loop).
    pub(super) fn close(&mut self) {
        if let Some(mut d) = self.display.take() {
            std::thread::spawn(move || d.stop());
        }
    }
}
