//! The times as adk-python stores them.

use super::*;

#[test]
fn times_round_to_the_microsecond_as_python_does() {
    // 1795254255.6581097 is stored as .658110 by google-adk (samples/17).
    let time = to_datetime(1_795_254_255.658_109_7);
    assert_eq!(datetime_text(time), "2026-11-21 09:44:15.658110");
    assert_eq!(to_seconds(time), 1_795_254_255.658_11);
    assert_eq!(parse_datetime_text("2026-11-21 09:44:15.658110"), Some(time));
    assert_eq!(datetime_text(parse_datetime_text("2026-11-21 09:44:15").unwrap()), "2026-11-21 09:44:15.000000");
    // Half a microsecond rounds to even; a carry moves into the second.
    assert_eq!(datetime_text(to_datetime(0.000_002_5)), "1970-01-01 00:00:00.000002");
    assert_eq!(datetime_text(to_datetime(0.999_999_9)), "1970-01-01 00:00:01.000000");
    assert_eq!(datetime_text(to_datetime(f64::NAN)), "1970-01-01 00:00:00.000000");
    assert!(parse_datetime_text("yesterday").is_none());
}
