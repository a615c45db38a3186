//! The libraries' own logs (libsrt's, GStreamer's) through `tracing`, where the daemon's log
//! goes (the panel keeps the last lines: `telebridge_web::logs`).

/// Routes libsrt's and GStreamer's own logs through `tracing`, and the rejections either of
/// them logs to the SRT outputs and inputs that say why a connection was refused. After
/// `telebridge_media::init`.
pub fn route_library_logs() {
    telebridge_srt::install_log_hook();
    telebridge_media::route_log(telebridge_srt::reject::note_log_line);
}
