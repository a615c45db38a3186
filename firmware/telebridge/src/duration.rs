//! Durations on the command line: `10` or `10s`, `500ms`, `2m`, `1h`.

use std::time::Duration;

/// Parses a duration; the error names the value and the forms allowed.
pub fn parse(s: &str) -> Result<Duration, String> {
    let err = || format!("{s:?} is not a duration; write e.g. 10s, 500ms, 2m or 1h");
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| err())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(err()),
    };
    if !(0.0..=86_400.0 * 365.0).contains(&secs) {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse("ten").unwrap_err().contains("\"ten\" is not a duration"));
        assert!(parse("5d").is_err());
    }
}
