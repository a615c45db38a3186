//! How commands end: exit codes (0 done, 1 failed while running, 2 bad input with one line
//! saying what to fix), the signals that stop them, and the JSON lines they print.

use std::process::ExitCode;

use telebridge_appliance::AppError;

/// Bad input: one line that says what to fix, exit code 2.
pub fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Runs `work` on a small runtime; errors become exit codes (2 bad input, 1 failure).
pub fn run_async<T>(work: impl std::future::Future<Output = Result<T, AppError>>, done: impl FnOnce(T)) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(v) => {
            done(v);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Prints one JSON line on stdout.
pub fn print_json(value: &impl serde::Serialize) {
    if let Ok(line) = serde_json::to_string(value) {
        println!("{line}");
    }
}

/// Prints `{"summary": ...}` when JSON stats were asked for.
pub fn print_summary(json: bool, summary: &impl serde::Serialize) {
    if json {
        print_json(&serde_json::json!({ "summary": summary }));
    }
}
